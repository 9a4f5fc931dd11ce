/* remoting_header_json_fast.c — the common case of a JSON header without
 * jansson.
 *
 * Java, ali-ons, Go and C++ headers are flat objects of known keys with
 * plain ASCII strings and integers. This scanner decodes exactly that shape
 * and declines (RMQ_EAGAIN) anything else — escapes, non-ASCII, reals, null,
 * nesting, unknown or repeated keys, trailing garbage — so the full jansson
 * decoder in remoting_header_json.c stays the single authority on every
 * other input and on error messages. For every header it accepts it yields
 * what the full decoder yields (the fuzz target checks this). Pure; one thread.
 */
#include "remoting_header_json_fast.h"

#include "err.h"
#include "json_scan.h"
#include "mem.h"
#include "parse_int.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool plain_string(struct json_scan *s, const char **a, size_t *n)
{
    json_scan_ws(s);
    if (s->p >= s->end || *s->p != '"')
        return false;
    const char *start = ++s->p;
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') {
            *a = start;
            *n = (size_t)(s->p - start);
            s->p++;
            assert(!memchr(*a, '"', *n) && !memchr(*a, '\\', *n)); /* stopped at the first quote */
            return true;
        }
        if (c < 0x20 || c >= 0x80 || c == '\\')
            return false;
        s->p++;
    }
    return false;
}

/* A JSON integer literal exactly as jansson would print it back: no leading
 * zeros, no "-0", at most 18 digits, not followed by a fraction or exponent. */
static bool plain_integer(struct json_scan *s, const char **a, size_t *n)
{
    json_scan_ws(s);
    const char *start = s->p;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    const char *digits = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    size_t nd = (size_t)(s->p - digits);
    if (nd == 0 || nd > 18 || (nd > 1 && digits[0] == '0') ||
        (nd == 1 && digits[0] == '0' && digits != start))
        return false;
    if (s->p < s->end && (*s->p == '.' || *s->p == 'e' || *s->p == 'E'))
        return false;
    *a = start;
    *n = (size_t)(s->p - start);
    assert(*n >= 1 && *n <= 19 && *a + *n <= s->end); /* a sign and at most 18 digits */
    return true;
}

static bool is_key(const char *a, size_t n, const char *k)
{
    return strlen(k) == n && !memcmp(a, k, n);
}

static bool int32_field(struct json_scan *s, int32_t *out)
{
    const char *a;
    size_t n;
    if (!plain_integer(s, &a, &n))
        return false;
    int64_t v;
    if (rmq_parse_i64_n(a, n, INT32_MIN, INT32_MAX, &v) != 0)
        return false; /* the full decoder words the error */
    *out = (int32_t)v;
    return true;
}

/* Stores key=value (copied, NUL-terminated) the way the full decoder does. */
static int set_ext(struct rmq_cmd *cmd, const char *k, size_t kn, const char *v, size_t vn)
{
    char small[256];
    char *buf = kn + vn + 2 <= sizeof small ? small : rmq_malloc(kn + vn + 2);
    if (!buf)
        return RMQ_ENOMEM;
    memcpy(buf, k, kn);
    buf[kn] = 0;
    memcpy(buf + kn + 1, v, vn);
    buf[kn + 1 + vn] = 0;
    int rc = rmq_cmd_ext_append(cmd, buf, buf + kn + 1);
    if (buf != small)
        rmq_free(buf);
    return rc;
}

static int ext_fields(struct json_scan *s, struct rmq_cmd *cmd)
{
    if (!json_scan_take(s, '{'))
        return RMQ_EAGAIN;
    if (json_scan_take(s, '}'))
        return RMQ_OK;
    for (;;) {
        const char *k, *v;
        size_t kn, vn;
        if (!plain_string(s, &k, &kn) || !json_scan_take(s, ':'))
            return RMQ_EAGAIN;
        json_scan_ws(s);
        if (s->p < s->end && *s->p == '"') {
            if (!plain_string(s, &v, &vn))
                return RMQ_EAGAIN;
        } else if (s->end - s->p >= 4 && !memcmp(s->p, "true", 4)) {
            v = s->p;
            vn = 4;
            s->p += 4;
        } else if (s->end - s->p >= 5 && !memcmp(s->p, "false", 5)) {
            v = s->p;
            vn = 5;
            s->p += 5;
        } else if (!plain_integer(s, &v, &vn)) {
            return RMQ_EAGAIN;
        }
        int rc = set_ext(cmd, k, kn, v, vn);
        if (rc != 0)
            return rc;
        if (json_scan_take(s, '}'))
            return RMQ_OK;
        if (!json_scan_take(s, ','))
            return RMQ_EAGAIN;
    }
}

enum {
    F_CODE = 1,
    F_FLAG = 2,
    F_OPAQUE = 4,
    F_VERSION = 8,
    F_LANG = 16,
    F_REMARK = 32,
    F_EXT = 64,
    F_STC = 128
};

/* One top-level member; seen guards against repeated keys. */
static int member(struct json_scan *s, struct rmq_cmd *cmd, unsigned *seen)
{
    const char *k, *v;
    size_t kn, vn;
    if (!plain_string(s, &k, &kn) || !json_scan_take(s, ':'))
        return RMQ_EAGAIN;
    static const struct {
        const char *name;
        unsigned bit;
    } keys[] = {
        {"code", F_CODE},     {"flag", F_FLAG},     {"opaque", F_OPAQUE}, {"version", F_VERSION},
        {"language", F_LANG}, {"remark", F_REMARK}, {"extFields", F_EXT}, {"serializeTypeCurrentRPC", F_STC}};
    unsigned bit = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !bit; i++)
        if (is_key(k, kn, keys[i].name))
            bit = keys[i].bit;
    if (!bit || (*seen & bit))
        return RMQ_EAGAIN;
    assert((bit & (bit - 1)) == 0); /* one key, one bit: the repeat check relies on it */
    *seen |= bit;
    switch (bit) {
    case F_CODE: return int32_field(s, &cmd->code) ? RMQ_OK : RMQ_EAGAIN;
    case F_FLAG: return int32_field(s, &cmd->flag) ? RMQ_OK : RMQ_EAGAIN;
    case F_OPAQUE: return int32_field(s, &cmd->opaque) ? RMQ_OK : RMQ_EAGAIN;
    case F_VERSION: return int32_field(s, &cmd->version) ? RMQ_OK : RMQ_EAGAIN;
    case F_EXT: return ext_fields(s, cmd);
    case F_STC: return plain_string(s, &v, &vn) ? RMQ_OK : RMQ_EAGAIN;
    case F_LANG: {
        if (!plain_string(s, &v, &vn) || vn >= 32)
            return RMQ_EAGAIN;
        char name[32];
        memcpy(name, v, vn);
        name[vn] = 0;
        cmd->language = rmq_language_from_name(name);
        return RMQ_OK;
    }
    case F_REMARK:
    default: {
        if (!plain_string(s, &v, &vn))
            return RMQ_EAGAIN;
        if (vn == 0)
            return RMQ_OK; /* "" means no remark, as in the full decoder */
        char *copy = rmq_strndup(v, vn);
        if (!copy)
            return RMQ_ENOMEM;
        int rc = rmq_cmd_set_remark(cmd, copy);
        rmq_free(copy);
        return rc;
    }
    }
}

int rmq_header_json_decode_fast(const uint8_t *p, size_t len, struct rmq_cmd *cmd)
{
    struct json_scan s = {(const char *)p, (const char *)p + len};
    unsigned seen = 0;
    int rc = json_scan_take(&s, '{') ? RMQ_OK : RMQ_EAGAIN;
    if (rc == 0 && !json_scan_take(&s, '}')) {
        for (;;) {
            if ((rc = member(&s, cmd, &seen)) != 0)
                break;
            if (json_scan_take(&s, '}'))
                break;
            if (!json_scan_take(&s, ',')) {
                rc = RMQ_EAGAIN;
                break;
            }
        }
    }
    if (rc == 0) {
        json_scan_ws(&s);
        if (s.p != s.end)
            rc = RMQ_EAGAIN;
    }
    assert(s.p <= s.end);
    if (rc == 0)
        rc = rmq_cmd_ext_dedupe(cmd);
    if (rc != 0) {
        rmq_cmd_clear(cmd);
        return rc;
    }
    cmd->serialize_type = RMQ_SERIALIZE_JSON;
    return RMQ_OK;
}
