/* remoting_header_json.c — the JSON header (serialize type 0) <-> rmq_cmd.
 *
 * Decoding goes through jansson and is lenient where real clients differ
 * (key order, unknown keys, non-string extFields values, trailing newline)
 * and strict where a value cannot be interpreted (a non-integer code, a
 * nested extFields value). Encoding is written by hand so the bytes match
 * what a Java peer emits: fastjson's sorted keys, no spaces, string values.
 * Pure; one thread.
 */
#include "remoting_header_json.h"

#include "body_json.h"
#include "err.h"
#include "mem.h"
#include "remoting_header_json_fast.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads an optional int32 member. Absent and null leave *out untouched
 * (PROTOCOL (docs/protocol.md §1.2): fastjson omits nulls, so null means "not sent"). */
static int get_int32(const json_t *root, const char *key, int32_t *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return RMQ_OK;
    if (!json_is_integer(v))
        return rmq_fail(err, errlen, RMQ_EPROTO, "header.%s: expected an integer", key);
    json_int_t n = json_integer_value(v);
    if (n < INT32_MIN || n > INT32_MAX)
        return rmq_fail(err, errlen, RMQ_EPROTO, "header.%s: %" JSON_INTEGER_FORMAT " out of int32 range",
                        key, n);
    *out = (int32_t)n;
    return RMQ_OK;
}

/* A name from §1.6; an integer is taken as the byte code the way a Java
 * peer maps an ordinal onto the enum. */
static int get_language(const json_t *root, int32_t *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(root, "language");
    if (!v || json_is_null(v))
        return RMQ_OK;
    if (json_is_string(v)) {
        *out = rmq_language_from_name(json_string_value(v));
        return RMQ_OK;
    }
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        *out = (n >= 0 && n <= 255) ? (int32_t)n : RMQ_LANG_OTHER;
        return RMQ_OK;
    }
    return rmq_fail(err, errlen, RMQ_EPROTO, "header.language: expected a string");
}

/* jansson keeps only the double of a real, so the text is rebuilt as the
 * shortest form that reads back to the same value (1.5, not
 * 1.50000000000000000). */
static void format_real(double d, char *out, size_t n)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

/* PROTOCOL: docs/protocol.md §1.2 ali-ons sends numbers and booleans as extFields values;
 * they are held as text. null skips the key; objects and arrays have no
 * text form a peer could mean, so they are rejected. */
static int add_ext_value(struct rmq_cmd *cmd, const char *key, const json_t *v, char *err, size_t errlen)
{
    char tmp[40];
    const char *text = tmp;
    switch (json_typeof(v)) {
    case JSON_STRING: text = json_string_value(v); break;
    case JSON_INTEGER: snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: format_real(json_real_value(v), tmp, sizeof tmp); break;
    case JSON_TRUE: text = "true"; break;
    case JSON_FALSE: text = "false"; break;
    case JSON_NULL: return RMQ_OK;
    case JSON_OBJECT:
    case JSON_ARRAY:
    default: return rmq_fail(err, errlen, RMQ_EPROTO, "header.extFields.%s: nested value not allowed", key);
    }
    int rc = rmq_cmd_ext_append(cmd, key, text);
    return rc == RMQ_ENOMEM ? rmq_fail(err, errlen, rc, "out of memory") : rc;
}

/* The header's optional field key: *out is NULL when it is absent or null;
 * another type than type is an error saying it must be what. */
static int optional_field(const json_t *root, const char *key, json_type type, const char *what,
                          const json_t **out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(root, key);
    *out = v && !json_is_null(v) ? v : NULL;
    if (*out && json_typeof(*out) != type)
        return rmq_fail(err, errlen, RMQ_EPROTO, "header.%s: expected %s", key, what);
    return RMQ_OK;
}

/* ext: the extFields object, or NULL. */
static int add_ext_fields(struct rmq_cmd *cmd, const json_t *ext, char *err, size_t errlen)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)ext, key, v)
    {
        int rc = add_ext_value(cmd, key, v, err, errlen);
        if (rc)
            return rc;
    }
    return RMQ_OK;
}

/* v: the remark string, or NULL. Go and C++ send "" for "no remark"; the
 * binary codec reads a zero length as null, so both encodings agree on NULL. */
static int set_remark(struct rmq_cmd *cmd, const json_t *v, char *err, size_t errlen)
{
    if (!v || json_string_length(v) == 0)
        return RMQ_OK;
    if (rmq_cmd_set_remark(cmd, json_string_value(v)))
        return rmq_fail(err, errlen, RMQ_ENOMEM, "out of memory");
    return RMQ_OK;
}

static int decode_fields(const json_t *root, struct rmq_cmd *cmd, char *err, size_t errlen)
{
    const json_t *remark, *ext;
    int rc;
    if ((rc = get_int32(root, "code", &cmd->code, err, errlen)) ||
        (rc = get_int32(root, "flag", &cmd->flag, err, errlen)) ||
        (rc = get_int32(root, "opaque", &cmd->opaque, err, errlen)) ||
        (rc = get_int32(root, "version", &cmd->version, err, errlen)) ||
        (rc = get_language(root, &cmd->language, err, errlen)) ||
        (rc = optional_field(root, "remark", JSON_STRING, "a string", &remark, err, errlen)) ||
        (rc = set_remark(cmd, remark, err, errlen)) ||
        (rc = optional_field(root, "extFields", JSON_OBJECT, "an object", &ext, err, errlen)) ||
        (rc = add_ext_fields(cmd, ext, err, errlen)))
        return rc;
    return RMQ_OK;
}

/* Decodes the header text p[0..len) into cmd (initialised, empty). On any
 * failure cmd is cleared again, so the caller owns nothing new. The common
 * flat shape takes the jansson-free path; everything else, and every error,
 * comes from the full decoder below. */
int rmq_header_json_decode(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen)
{
    int rc = rmq_header_json_decode_fast(p, len, cmd);
    if (rc == RMQ_ENOMEM)
        return rmq_fail(err, errlen, rc, "out of memory");
    if (rc != RMQ_EAGAIN)
        return rc;
    return rmq_header_json_decode_full(p, len, cmd, err, errlen);
}

int rmq_header_json_decode_full(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen)
{
    json_t *root;
    int rc = rmq_json_load_object(p, len, "header", &root, err, errlen);
    if (rc)
        return rc;
    rc = decode_fields(root, cmd, err, errlen);
    json_decref(root);
    if (rc == 0 && rmq_cmd_ext_dedupe(cmd) != 0)
        rc = rmq_fail(err, errlen, RMQ_ENOMEM, "out of memory");
    if (rc) {
        rmq_cmd_clear(cmd);
        return rc;
    }
    cmd->serialize_type = RMQ_SERIALIZE_JSON;
    return RMQ_OK;
}

/* The header is written straight into one reservation, sized by a bound
 * (by the exact length only near the buffer's cap): a formatted append per
 * field cost more than the rest of answering a repeated heartbeat. */

/* Bytes of s as a JSON string, quotes included; the escapes are those of
 * rmq_json_append_string (\" \\ and \u00XX below 0x20, other bytes as is). */
static size_t json_str_len(const char *s)
{
    size_t n = 2;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        n += c < 0x20 ? 6 : (c == '"' || c == '\\') ? 2 : 1;
    }
    return n;
}

static uint8_t *put_str(uint8_t *w, const char *s)
{
    size_t n = strlen(s);
    memcpy(w, s, n);
    return w + n;
}

static uint8_t *put_json_str(uint8_t *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
#ifndef NDEBUG
    const uint8_t *w0 = w;
    const char *s0 = s;
#endif
    *w++ = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') {
            *w++ = c;
        } else if (c >= 0x20) {
            *w++ = '\\';
            *w++ = c;
        } else {
            memcpy(w, "\\u00", 4);
            w[4] = (uint8_t)hex[c >> 4];
            w[5] = (uint8_t)hex[c & 15];
            w += 6;
        }
    }
    *w++ = '"';
    assert((size_t)(w - w0) == json_str_len(s0)); /* header_len's exact count */
    return w;
}

/* Decimal digits of v with its sign, at most 11 (INT32_MIN). */
static size_t i32_len(int32_t v)
{
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    size_t n = v < 0 ? 2 : 1;
    while (u >= 10) {
        u /= 10;
        n++;
    }
    return n;
}

static uint8_t *put_i32(uint8_t *w, int32_t v)
{
    uint8_t tmp[11];
    size_t i = sizeof tmp;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    do {
        tmp[--i] = (uint8_t)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *w++ = '-';
    memcpy(w, tmp + i, sizeof tmp - i);
    assert(sizeof tmp - i + (v < 0) == i32_len(v));
    return w + (sizeof tmp - i);
}

/* name comes from a fixed table (language, serialize type), so it needs no escaping. */
static uint8_t *put_key_name(uint8_t *w, const char *key, const char *name)
{
    w = put_str(put_str(w, key), name);
    *w++ = '"';
    *w++ = ',';
    return w;
}

static uint8_t *put_key_i32(uint8_t *w, const char *key, int32_t v, char end)
{
    w = put_i32(put_str(w, key), v);
    *w++ = (uint8_t)end;
    return w;
}

#define LIT_LEN(s) (sizeof(s) - 1)

/* The header's length: exact, or (cheaper: no pass over the strings) a
 * bound taking every byte of a string as a six-byte escape and every
 * integer as eleven characters. */
static size_t header_len(const struct rmq_cmd *cmd, const char *lang, const char *ser, bool exact)
{
    size_t n = LIT_LEN("{\"code\":,\"flag\":,\"language\":\"\",\"opaque\":,\"serializeTypeCurrentRPC\":\"\","
                       "\"version\":}") +
               strlen(lang) + strlen(ser);
    n += exact ? i32_len(cmd->code) + i32_len(cmd->flag) + i32_len(cmd->opaque) + i32_len(cmd->version)
               : 4 * 11;
    size_t strs = 0;
    if (cmd->ext_len) {
        n += LIT_LEN("\"extFields\":{},") + (cmd->ext_len - 1) + cmd->ext_len;
        for (size_t i = 0; i < cmd->ext_len; i++)
            strs += exact ? json_str_len(cmd->ext[i].key) + json_str_len(cmd->ext[i].val)
                          : 6 * (strlen(cmd->ext[i].key) + strlen(cmd->ext[i].val)) + 4;
    }
    if (cmd->remark) {
        n += LIT_LEN("\"remark\":,");
        strs += exact ? json_str_len(cmd->remark) : 6 * strlen(cmd->remark) + 2;
    }
    return n + strs;
}

/* Appends the header in fastjson's sorted key order. extFields is left out
 * when empty, as a Java peer does for a null custom header; its entries keep
 * their insertion order (a Java HashMap is not sorted either). On failure
 * the buffer is left as it was. */
int rmq_header_json_encode(const struct rmq_cmd *cmd, struct buf *out)
{
    const char *lang = rmq_language_name(cmd->language);
    const char *ser = cmd->serialize_type == RMQ_SERIALIZE_ROCKETMQ ? "ROCKETMQ" : "JSON";
    size_t room = out->cap - buf_live(out);
    size_t n = header_len(cmd, lang, ser, false);
    /* Near the cap only the exact length says whether it fits. */
    if (n > room && (n = header_len(cmd, lang, ser, true)) > room)
        return RMQ_E2BIG;
    uint8_t *start = buf_reserve(out, n);
    if (!start)
        return RMQ_ENOMEM;
    uint8_t *w = put_key_i32(start, "{\"code\":", cmd->code, ',');
    if (cmd->ext_len) {
        w = put_str(w, "\"extFields\":{");
        for (size_t i = 0; i < cmd->ext_len; i++) {
            if (i)
                *w++ = ',';
            w = put_json_str(w, cmd->ext[i].key);
            *w++ = ':';
            w = put_json_str(w, cmd->ext[i].val);
        }
        w = put_str(w, "},");
    }
    w = put_key_i32(w, "\"flag\":", cmd->flag, ',');
    w = put_key_name(w, "\"language\":\"", lang);
    w = put_key_i32(w, "\"opaque\":", cmd->opaque, ',');
    if (cmd->remark) {
        w = put_str(w, "\"remark\":");
        w = put_json_str(w, cmd->remark);
        *w++ = ',';
    }
    w = put_key_name(w, "\"serializeTypeCurrentRPC\":\"", ser);
    w = put_key_i32(w, "\"version\":", cmd->version, '}');
    /* The bound (or exact length) reserved must cover what was written. */
    assert((size_t)(w - start) <= n);
    assert((size_t)(w - start) == header_len(cmd, lang, ser, true));
    buf_commit(out, (size_t)(w - start));
    return RMQ_OK;
}
