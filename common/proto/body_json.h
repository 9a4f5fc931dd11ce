/* body_json.h — what every JSON body codec shares: loading one object,
 * the field readers (one per value shape, so every client's spelling of a
 * field is handled once and every rejection names the field's path), the
 * compact writers, and MessageQueue, the object several bodies carry.
 *
 * Readers are lenient the way the protocol needs (PROTOCOL (docs/protocol.md
 * §3.1): enums as names or ordinals, longs as numbers or numeric strings,
 * absent and null meaning "not sent") and strict about types they cannot
 * interpret: RMQ_EPROTO with "path.key: reason" in the error. Writers append
 * to a buf and, on failure, leave it as it was. Pure; one thread.
 */
#ifndef RMQ_BODY_JSON_H
#define RMQ_BODY_JSON_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* jansson's json_t (typedef struct json_t json_t), so callers of the body
 * headers need not include jansson.h. */
struct json_t;

/* Parses p[0..len) as one JSON object (trailing whitespace allowed) into *out,
 * a new jansson reference the caller must json_decref. 0, RMQ_EPROTO (err
 * starts with `what`) or RMQ_ENOMEM. Shared by the JSON header codec. */
int rmq_json_load_object(const uint8_t *p, size_t len, const char *what, struct json_t **out, char *err,
                         size_t errlen);

/* ---- field readers ------------------------------------------------------
 * Each looks up `key` in `obj`; `path` names the object for error messages
 * ("" for the root). Absent and null mean "not sent": the output is left as
 * it was (the caller's default). */

/* Where a reader reports a rejection. */
struct rmq_json_err {
    char *err;
    size_t errlen;
};
/* RMQ_EPROTO with "path.key: what". */
int rmq_json_bad_field(const struct rmq_json_err *pe, const char *path, const char *key, const char *what);
/* RMQ_ENOMEM with "out of memory". */
int rmq_json_no_memory(const struct rmq_json_err *pe);

/* *out receives a new copy of a required, non-empty string. */
int rmq_json_read_required_str(const struct json_t *obj, const char *key, const char *path, char **out,
                               const struct rmq_json_err *pe);
/* *out receives a new copy of the string, or of dflt when absent or empty. */
int rmq_json_read_str_or(const struct json_t *obj, const char *key, const char *dflt, const char *path,
                         char **out, const struct rmq_json_err *pe);
int rmq_json_read_bool(const struct json_t *obj, const char *key, const char *path, bool *out,
                       const struct rmq_json_err *pe);
/* PROTOCOL (docs/protocol.md §3.1): a long is a JSON integer or a numeric
 * string (C++ subVersion). 0 or RMQ_EINVAL (no error text). */
int rmq_json_long_value(const struct json_t *v, int64_t *out);
/* A long in [lo, hi]. */
int rmq_json_read_long(const struct json_t *obj, const char *key, const char *path, int64_t lo, int64_t hi,
                       int64_t *out, const struct rmq_json_err *pe);
/* PROTOCOL (docs/protocol.md §3.1): an enum is a Java name (names[0..n)) or
 * its ordinal (C++ sends ordinals). */
int rmq_json_read_enum(const struct json_t *obj, const char *key, const char *const *names, size_t n,
                       const char *path, int *out, const struct rmq_json_err *pe);
/* *out is the borrowed array, or NULL when absent (an empty set). */
int rmq_json_read_array(const struct json_t *obj, const char *key, const char *path,
                        const struct json_t **out, const struct rmq_json_err *pe);
/* Allocates a zeroed array of n elements for an array field (NULL for 0),
 * so a later failure can free the partly filled array with the usual _clear. */
int rmq_json_alloc_elems(size_t n, size_t size, void **out, const struct rmq_json_err *pe);
/* Frees an owned array of n owned strings (NULL is fine). */
void rmq_json_strings_free(char **v, size_t n);

/* ---- writers ------------------------------------------------------------ */

/* Appends a JSON string literal (quotes and escapes) for s. */
int rmq_json_append_string(struct buf *out, const char *s);
/* Ends an object the caller began at mark = buf_live(out): its '}' when rc
 * is 0, else drops all of it (buf_undo_on_error). Returns the outcome. */
int rmq_json_end_object(struct buf *out, size_t mark, int rc);
/* Appends `"key":"val"` (val NULL as "") and then sep unless it is 0. */
int rmq_json_append_kv_str(struct buf *out, const char *key, const char *val, char sep);
/* Appends ["v0","v1",...]. */
int rmq_json_append_string_array(struct buf *out, const char *const *v, size_t n);

/* ---- MessageQueue ------------------------------------------------------- */

/* A message queue as it appears in lock bodies, running-info tables and
 * allocation output. */
struct rmq_mq {
    char *topic;       /* owned */
    char *broker_name; /* owned */
    int32_t queue_id;
};
/* Appends {"brokerName":..,"queueId":..,"topic":..} (Java key order). */
int rmq_json_append_mq(struct buf *out, const char *topic, const char *broker_name, int32_t queue_id);
/* Frees an owned array of n queues and their strings (NULL is fine). */
void rmq_mqs_free(struct rmq_mq *mqs, size_t n);

#endif
