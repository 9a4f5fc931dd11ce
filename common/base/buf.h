/* buf.h — growable byte buffer with a read offset and a hard cap.
 *
 * Bytes are appended at the end and consumed from the front; consumed space
 * is reclaimed lazily (compaction when the dead prefix is large). A buffer
 * never grows past `cap` bytes of live data: appends beyond it fail with
 * RMQ_E2BIG and leave the buffer unchanged. Pure; owned by one thread.
 */
#ifndef RMQ_BUF_H
#define RMQ_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    uint8_t *data; /* owned */
    size_t len;    /* bytes written, including the consumed prefix */
    size_t pos;    /* read offset: data[pos..len) is live */
    size_t alloc;  /* bytes allocated */
    size_t cap;    /* maximum live bytes; 0 = SIZE_MAX */
};

void buf_init(struct buf *b, size_t cap);
/* Frees the storage; the buffer may be reused after buf_init. Accepts NULL. */
void buf_free(struct buf *b);

static inline size_t buf_live(const struct buf *b)
{
    return b->len - b->pos;
}
static inline const uint8_t *buf_head(const struct buf *b)
{
    return b->data + b->pos;
}

/* Appends n bytes. 0, RMQ_E2BIG (cap) or RMQ_ENOMEM. */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_append_u8(struct buf *b, uint8_t v);
int buf_append_be16(struct buf *b, uint16_t v);
int buf_append_be32(struct buf *b, uint32_t v);
/* printf-style append (no NUL is kept in the buffer). */
int buf_appendf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For an encoder that appends in several steps from mark = buf_live(b):
 * when rc is an error, drops what it appended (all or nothing). Returns rc. */
static inline int buf_undo_on_error(struct buf *b, size_t mark, int rc)
{
    if (rc)
        b->len = b->pos + mark;
    return rc;
}

/* Makes room for at least n more bytes and returns the write pointer, or
 * NULL (cap or memory). Commit what was written with buf_commit. */
uint8_t *buf_reserve(struct buf *b, size_t n);
void buf_commit(struct buf *b, size_t n);

/* Drops n live bytes from the front (n <= buf_live). */
void buf_consume(struct buf *b, size_t n);
void buf_reset(struct buf *b);

/* Appends a NUL so data[pos..] can be read as a C string; the NUL is not
 * counted in len. 0 or an error. */
int buf_terminate(struct buf *b);

#endif
