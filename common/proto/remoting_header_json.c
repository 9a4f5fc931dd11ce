/* remoting_header_json.c — the JSON header (serialize type 0) <-> rmq_cmd.
 *
 * Decoding goes through jansson and is lenient where real clients differ
 * (key order, unknown keys, non-string extFields values, trailing newline)
 * and strict where a value cannot be interpreted (a non-integer code, a
 * nested extFields value). Encoding is written by hand so the bytes match
 * what a Java peer emits: fastjson's sorted keys, no spaces, string values.
 * Pure; one thread.
 */
#include "remoting_header.h"

#include "body_json.h"
#include "err.h"
#include "mem.h"
#include "remoting_header_json_fast.h"

#include <inttypes.h>
#include <jansson.h>
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

static int append_ext_fields(const struct rmq_cmd *cmd, struct buf *out)
{
    int rc = buf_append_str(out, "\"extFields\":{");
    for (size_t i = 0; !rc && i < cmd->ext_len; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_json_append_string(out, cmd->ext[i].key);
        if (!rc)
            rc = buf_append_u8(out, ':');
        if (!rc)
            rc = rmq_json_append_string(out, cmd->ext[i].val);
    }
    return rc ? rc : buf_append_str(out, "},");
}

/* Appends the header in fastjson's sorted key order. extFields is left out
 * when empty, as a Java peer does for a null custom header; its entries keep
 * their insertion order (a Java HashMap is not sorted either). On failure
 * the buffer is restored to its previous contents. */
int rmq_header_json_encode(const struct rmq_cmd *cmd, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_appendf(out, "{\"code\":%" PRId32 ",", cmd->code);
    if (!rc && cmd->ext_len)
        rc = append_ext_fields(cmd, out);
    if (!rc)
        rc = buf_appendf(out, "\"flag\":%" PRId32 ",\"language\":\"%s\",\"opaque\":%" PRId32 ",", cmd->flag,
                         rmq_language_name(cmd->language), cmd->opaque);
    if (!rc && cmd->remark) {
        rc = buf_append_str(out, "\"remark\":");
        if (!rc)
            rc = rmq_json_append_string(out, cmd->remark);
        if (!rc)
            rc = buf_append_u8(out, ',');
    }
    if (!rc)
        rc = buf_appendf(out, "\"serializeTypeCurrentRPC\":\"%s\",\"version\":%" PRId32 "}",
                         cmd->serialize_type == RMQ_SERIALIZE_ROCKETMQ ? "ROCKETMQ" : "JSON", cmd->version);
    return buf_undo_on_error(out, mark, rc);
}
