/* buf.c — see buf.h. */
#include "buf.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef NDEBUG
/* The read offset never passes the write end, the write end never passes the
 * allocation, and the live bytes never exceed the cap. */
static int buf_sanity(const struct buf *b)
{
    assert(b->pos <= b->len);
    assert(b->len <= b->alloc);
    assert(b->len - b->pos <= b->cap);
    assert((b->data == NULL) == (b->alloc == 0));
    return 1;
}
#endif

void buf_init(struct buf *b, size_t cap)
{
    b->data = NULL;
    b->len = b->pos = b->alloc = 0;
    b->cap = cap ? cap : SIZE_MAX;
}

void buf_free(struct buf *b)
{
    if (!b)
        return;
    rmq_free(b->data);
    b->data = NULL;
    b->len = b->pos = b->alloc = 0;
}

void buf_reset(struct buf *b)
{
    b->len = b->pos = 0;
    assert(buf_sanity(b));
}

/* Ensures room for n more bytes, compacting the consumed prefix first when
 * that is enough or when the prefix is at least half the allocation. */
uint8_t *buf_reserve(struct buf *b, size_t n)
{
    assert(buf_sanity(b));
    size_t live = b->len - b->pos;
    if (n > b->cap - live)
        return NULL;
    if (b->alloc - b->len >= n)
        return b->data + b->len;
    if (b->pos > 0 && (b->alloc - live >= n || b->pos >= b->alloc / 2)) {
        memmove(b->data, b->data + b->pos, live);
        b->len = live;
        b->pos = 0;
        if (b->alloc - b->len >= n)
            return b->data + b->len;
    }
    size_t need = b->len + n;
    size_t grow = b->alloc ? b->alloc : 256;
    while (grow < need)
        grow = grow > SIZE_MAX / 2 ? need : grow * 2;
    uint8_t *p = rmq_realloc(b->data, grow);
    if (!p)
        return NULL;
    b->data = p;
    b->alloc = grow;
    assert(buf_sanity(b) && b->alloc - b->len >= n);
    return b->data + b->len;
}

void buf_commit(struct buf *b, size_t n)
{
    /* Only what buf_reserve made room for may be committed. */
    assert(n <= b->alloc - b->len);
    b->len += n;
    assert(buf_sanity(b));
}

int buf_append(struct buf *b, const void *p, size_t n)
{
    if (n == 0)
        return RMQ_OK;
    if (n > b->cap - (b->len - b->pos))
        return RMQ_E2BIG;
    uint8_t *w = buf_reserve(b, n);
    if (!w)
        return RMQ_ENOMEM;
    memcpy(w, p, n);
    b->len += n;
    assert(buf_sanity(b));
    return RMQ_OK;
}

int buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_append_u8(struct buf *b, uint8_t v)
{
    return buf_append(b, &v, 1);
}

int buf_append_be16(struct buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    return buf_append(b, x, 2);
}

int buf_append_be32(struct buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    return buf_append(b, x, 4);
}

int buf_appendf(struct buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return RMQ_EINVAL;
    if ((size_t)n < sizeof small)
        return buf_append(b, small, (size_t)n);
    if ((size_t)n + 1 > b->cap - buf_live(b))
        return RMQ_E2BIG;
    uint8_t *w = buf_reserve(b, (size_t)n + 1);
    if (!w)
        return RMQ_ENOMEM;
    va_start(ap, fmt);
    vsnprintf((char *)w, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    assert(buf_sanity(b));
    return RMQ_OK;
}

void buf_consume(struct buf *b, size_t n)
{
    assert(n <= buf_live(b));
    b->pos += n;
    if (b->pos >= b->len)
        b->pos = b->len = 0;
    assert(buf_sanity(b));
}

int buf_terminate(struct buf *b)
{
    uint8_t *w = buf_reserve(b, 1);
    if (!w)
        return RMQ_ENOMEM;
    *w = 0;
    assert(b->len < b->alloc); /* the NUL sits inside the allocation, past len */
    return RMQ_OK;
}
