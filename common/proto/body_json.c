/* body_json.c — see body_json.h. Parsing goes through jansson; writing is by
 * hand, compact and in Java's sorted key order, because some peers split
 * the text instead of parsing it. Pure; one thread.
 */
#include "body_json.h"

#include "err.h"
#include "mem.h"
#include "parse_int.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>

/* jansson reports some allocation failures as syntax errors (a token it
 * could not store looks malformed), so a failed parse is re-judged by the
 * allocator: when a small allocation fails right now, memory ran out. */
static bool out_of_memory(const json_error_t *jerr)
{
    if (json_error_code(jerr) == json_error_out_of_memory || jerr->text[0] == 0)
        return true;
    void *probe = rmq_malloc(64);
    rmq_free(probe);
    return probe == NULL;
}

int rmq_json_load_object(const uint8_t *p, size_t len, const char *what, json_t **out, char *err,
                         size_t errlen)
{
    /* Zeroed: when an allocation fails early jansson may not fill it in, and
     * an empty text is then read as running out of memory. */
    json_error_t jerr;
    memset(&jerr, 0, sizeof jerr);
    /* json_loadb allows trailing whitespace (C++ appends "\n"), nothing else. */
    json_t *root = json_loadb((const char *)p, len, 0, &jerr);
    *out = NULL;
    if (!root) {
        if (out_of_memory(&jerr))
            return rmq_fail(err, errlen, RMQ_ENOMEM, "out of memory");
        return rmq_fail(err, errlen, RMQ_EPROTO, "%s: invalid JSON at %d:%d: %s", what, jerr.line,
                        jerr.column, jerr.text);
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return rmq_fail(err, errlen, RMQ_EPROTO, "%s: expected a JSON object", what);
    }
    *out = root;
    assert(json_is_object(*out)); /* every body reader starts from an object */
    return RMQ_OK;
}

/* ---- field readers ------------------------------------------------------ */

int rmq_json_bad_field(const struct rmq_json_err *pe, const char *path, const char *key, const char *what)
{
    return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s%s%s: %s", path, *path ? "." : "", key, what);
}

int rmq_json_no_memory(const struct rmq_json_err *pe)
{
    return rmq_fail(pe->err, pe->errlen, RMQ_ENOMEM, "out of memory");
}

static const json_t *member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

int rmq_json_read_required_str(const json_t *obj, const char *key, const char *path, char **out,
                               const struct rmq_json_err *pe)
{
    const json_t *v = member(obj, key);
    if (!json_is_string(v) || json_string_length(v) == 0)
        return rmq_json_bad_field(pe, path, key, "expected a non-empty string");
    *out = rmq_strdup(json_string_value(v));
    return *out ? RMQ_OK : rmq_json_no_memory(pe);
}

int rmq_json_read_str_or(const json_t *obj, const char *key, const char *dflt, const char *path, char **out,
                         const struct rmq_json_err *pe)
{
    const json_t *v = member(obj, key);
    if (v && !json_is_string(v))
        return rmq_json_bad_field(pe, path, key, "expected a string");
    const char *s = (v && json_string_length(v)) ? json_string_value(v) : dflt;
    *out = rmq_strdup(s);
    return *out ? RMQ_OK : rmq_json_no_memory(pe);
}

int rmq_json_read_bool(const json_t *obj, const char *key, const char *path, bool *out,
                       const struct rmq_json_err *pe)
{
    const json_t *v = member(obj, key);
    if (!v)
        return RMQ_OK;
    if (!json_is_boolean(v))
        return rmq_json_bad_field(pe, path, key, "expected a boolean");
    *out = json_is_true(v);
    return RMQ_OK;
}

int rmq_json_long_value(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return RMQ_OK;
    }
    if (json_is_string(v))
        return rmq_parse_i64(json_string_value(v), out);
    return RMQ_EINVAL;
}

int rmq_json_read_long(const json_t *obj, const char *key, const char *path, int64_t lo, int64_t hi,
                       int64_t *out, const struct rmq_json_err *pe)
{
    const json_t *v = member(obj, key);
    int64_t n;
    if (!v)
        return RMQ_OK;
    if (rmq_json_long_value(v, &n))
        return rmq_json_bad_field(pe, path, key, "expected an integer or a numeric string");
    if (n < lo || n > hi)
        return rmq_json_bad_field(pe, path, key, "integer out of range");
    *out = n;
    return RMQ_OK;
}

int rmq_json_read_enum(const json_t *obj, const char *key, const char *const *names, size_t n,
                       const char *path, int *out, const struct rmq_json_err *pe)
{
    assert(n > 0 && n <= INT32_MAX); /* an ordinal below n fits the int *out */
    const json_t *v = member(obj, key);
    if (!v)
        return RMQ_OK;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i >= 0 && (size_t)i < n) {
            *out = (int)i;
            return RMQ_OK;
        }
    } else if (json_is_string(v)) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], json_string_value(v)) == 0) {
                *out = (int)i;
                return RMQ_OK;
            }
    }
    return rmq_json_bad_field(pe, path, key, "expected an enum name or ordinal");
}

int rmq_json_read_array(const json_t *obj, const char *key, const char *path, const json_t **out,
                        const struct rmq_json_err *pe)
{
    const json_t *v = member(obj, key);
    if (v && !json_is_array(v))
        return rmq_json_bad_field(pe, path, key, "expected an array");
    *out = v;
    return RMQ_OK;
}

int rmq_json_alloc_elems(size_t n, size_t size, void **out, const struct rmq_json_err *pe)
{
    *out = NULL;
    if (n == 0)
        return RMQ_OK;
    *out = rmq_calloc(n, size);
    return *out ? RMQ_OK : rmq_json_no_memory(pe);
}

void rmq_json_strings_free(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        rmq_free(v[i]);
    rmq_free(v);
}

/* ---- writers -------------------------------------------------------------
 * Each appends to out and, on failure, restores out to its previous
 * contents (the composite ones leave that to their caller's mark). */

/* JSON string literal. Control characters become \u00XX; other bytes are
 * copied, so valid UTF-8 in gives valid UTF-8 out. */
int rmq_json_end_object(struct buf *out, size_t mark, int rc)
{
    if (!rc)
        rc = buf_append_u8(out, '}');
    return buf_undo_on_error(out, mark, rc);
}

int rmq_json_append_string(struct buf *out, const char *s)
{
#ifndef NDEBUG
    size_t slen = strlen(s);
#endif
    size_t mark = buf_live(out);
    int rc = buf_append_u8(out, '"');
    const char *run = s;
    for (; !rc && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        rc = buf_append(out, run, (size_t)(s - run));
        if (!rc)
            rc = c < 0x20 ? buf_appendf(out, "\\u%04x", c) : buf_appendf(out, "\\%c", c);
        run = s + 1;
    }
    if (!rc)
        rc = buf_append(out, run, (size_t)(s - run));
    if (!rc)
        rc = buf_append_u8(out, '"');
    /* Escaping only ever lengthens: every byte of s went out, plus quotes. */
    assert(rc || buf_live(out) - mark >= slen + 2);
    return buf_undo_on_error(out, mark, rc);
}

int rmq_json_append_kv_str(struct buf *out, const char *key, const char *val, char sep)
{
    int rc = buf_appendf(out, "\"%s\":", key);
    if (!rc)
        rc = rmq_json_append_string(out, val ? val : "");
    return rc ? rc : (sep ? buf_append_u8(out, (uint8_t)sep) : RMQ_OK);
}

int rmq_json_append_string_array(struct buf *out, const char *const *v, size_t n)
{
    int rc = buf_append_u8(out, '[');
    for (size_t i = 0; !rc && i < n; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_json_append_string(out, v[i]);
    }
    return rc ? rc : buf_append_u8(out, ']');
}

/* ---- MessageQueue ------------------------------------------------------- */

int rmq_json_append_mq(struct buf *out, const char *topic, const char *broker_name, int32_t queue_id)
{
    int rc = buf_append_u8(out, '{');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "brokerName", broker_name, ',');
    if (!rc)
        rc = buf_appendf(out, "\"queueId\":%" PRId32 ",", queue_id);
    if (!rc)
        rc = rmq_json_append_kv_str(out, "topic", topic, '}');
    return rc;
}

void rmq_mqs_free(struct rmq_mq *mqs, size_t n)
{
    for (size_t i = 0; i < n && mqs; i++) {
        rmq_free(mqs[i].topic);
        rmq_free(mqs[i].broker_name);
    }
    rmq_free(mqs);
}
