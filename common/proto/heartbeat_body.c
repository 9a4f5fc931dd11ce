/* heartbeat_body.c — see heartbeat_body.h. Field readers and writers are
 * body_json.c's. Pure; one thread.
 */
#include "heartbeat_body.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *const consume_type_names[] = {"CONSUME_ACTIVELY", "CONSUME_PASSIVELY"};
static const char *const message_model_names[] = {"BROADCASTING", "CLUSTERING"};
static const char *const consume_from_names[] = {
    "CONSUME_FROM_LAST_OFFSET",  "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",   "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP",
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *enum_name(const char *const *names, size_t n, int v)
{
    return (v >= 0 && (size_t)v < n) ? names[v] : "UNKNOWN";
}

const char *rmq_consume_type_name(int v)
{
    return enum_name(consume_type_names, COUNT(consume_type_names), v);
}
const char *rmq_message_model_name(int v)
{
    return enum_name(message_model_names, COUNT(message_model_names), v);
}
const char *rmq_consume_from_where_name(int v)
{
    return enum_name(consume_from_names, COUNT(consume_from_names), v);
}

/* ---- parse -------------------------------------------------------------- */

#ifndef NDEBUG
/* What a parsed subscription always holds: a topic, the defaulted strings
 * the encoder and membership compare without NULL checks, and arrays
 * present exactly when they have elements. */
static int subscription_sanity(const struct rmq_subscription *s)
{
    assert(s->topic && s->topic[0]);
    assert(s->sub_string && s->expression_type);
    assert((s->tags != NULL) == (s->ntags > 0));
    assert((s->codes != NULL) == (s->ncodes > 0));
    for (size_t i = 0; i < s->ntags; i++)
        assert(s->tags[i]);
    return 1;
}

/* A parsed heartbeat: a client id, every group named, enums within the
 * name tables the encoder indexes. O(size of the heartbeat). */
static int heartbeat_sanity(const struct rmq_heartbeat *hb)
{
    assert(hb->client_id && hb->client_id[0]);
    assert((hb->consumers != NULL) == (hb->nconsumers > 0));
    assert((hb->producer_groups != NULL) == (hb->nproducers > 0));
    for (size_t i = 0; i < hb->nconsumers; i++) {
        const struct rmq_consumer_data *c = &hb->consumers[i];
        assert(c->group && c->group[0]);
        assert(c->consume_type >= 0 && (size_t)c->consume_type < COUNT(consume_type_names));
        assert(c->message_model >= 0 && (size_t)c->message_model < COUNT(message_model_names));
        assert(c->consume_from_where >= 0 && (size_t)c->consume_from_where < COUNT(consume_from_names));
        assert((c->subs != NULL) == (c->nsubs > 0));
        for (size_t k = 0; k < c->nsubs; k++)
            assert(subscription_sanity(&c->subs[k]));
    }
    for (size_t i = 0; i < hb->nproducers; i++)
        assert(hb->producer_groups[i] && hb->producer_groups[i][0]);
    return 1;
}
#endif

static int parse_string_set(const json_t *arr, const char *path, const char *key, char ***out, size_t *n,
                            const struct rmq_json_err *pe)
{
    int rc = rmq_json_alloc_elems(json_array_size(arr), sizeof **out, (void **)out, pe);
    if (rc)
        return rc;
    *n = json_array_size(arr);
    for (size_t i = 0; i < *n; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v))
            return rmq_json_bad_field(pe, path, key, "expected an array of strings");
        if (!((*out)[i] = rmq_strdup(json_string_value(v))))
            return rmq_json_no_memory(pe);
    }
    return RMQ_OK;
}

static int parse_code_set(const json_t *arr, const char *path, struct rmq_subscription *s,
                          const struct rmq_json_err *pe)
{
    int rc = rmq_json_alloc_elems(json_array_size(arr), sizeof *s->codes, (void **)&s->codes, pe);
    if (rc)
        return rc;
    s->ncodes = json_array_size(arr);
    for (size_t i = 0; i < s->ncodes; i++) {
        int64_t n;
        if (rmq_json_long_value(json_array_get(arr, i), &n) || n < INT32_MIN || n > INT32_MAX)
            return rmq_json_bad_field(pe, path, "codeSet", "expected an array of int32");
        s->codes[i] = (int32_t)n;
    }
    return RMQ_OK;
}

static int parse_subscription(const json_t *o, const char *path, struct rmq_subscription *s,
                              const struct rmq_json_err *pe)
{
    if (!json_is_object(o))
        return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
    const json_t *tags, *codes;
    int rc;
    if ((rc = rmq_json_read_required_str(o, "topic", path, &s->topic, pe)) ||
        (rc = rmq_json_read_str_or(o, "subString", "*", path, &s->sub_string, pe)) ||
        (rc = rmq_json_read_str_or(o, "expressionType", "TAG", path, &s->expression_type, pe)) ||
        (rc = rmq_json_read_long(o, "subVersion", path, INT64_MIN, INT64_MAX, &s->sub_version, pe)) ||
        (rc = rmq_json_read_bool(o, "classFilterMode", path, &s->class_filter_mode, pe)) ||
        (rc = rmq_json_read_array(o, "tagsSet", path, &tags, pe)) ||
        (rc = rmq_json_read_array(o, "codeSet", path, &codes, pe)) ||
        (rc = parse_string_set(tags, path, "tagsSet", &s->tags, &s->ntags, pe)) ||
        (rc = parse_code_set(codes, path, s, pe)))
        return rc;
    return RMQ_OK;
}

static int parse_consumer(const json_t *o, const char *path, struct rmq_consumer_data *c,
                          const struct rmq_json_err *pe)
{
    if (!json_is_object(o))
        return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
    /* Defaults for fields C++ leaves out: a push consumer in a cluster. */
    c->consume_type = RMQ_CONSUME_PASSIVELY;
    c->message_model = RMQ_MODEL_CLUSTERING;
    const json_t *subs;
    int rc;
    if ((rc = rmq_json_read_required_str(o, "groupName", path, &c->group, pe)) ||
        (rc = rmq_json_read_enum(o, "consumeType", consume_type_names, COUNT(consume_type_names), path,
                                 &c->consume_type, pe)) ||
        (rc = rmq_json_read_enum(o, "messageModel", message_model_names, COUNT(message_model_names), path,
                                 &c->message_model, pe)) ||
        (rc = rmq_json_read_enum(o, "consumeFromWhere", consume_from_names, COUNT(consume_from_names), path,
                                 &c->consume_from_where, pe)) ||
        (rc = rmq_json_read_bool(o, "unitMode", path, &c->unit_mode, pe)) ||
        (rc = rmq_json_read_array(o, "subscriptionDataSet", path, &subs, pe)) ||
        (rc = rmq_json_alloc_elems(json_array_size(subs), sizeof *c->subs, (void **)&c->subs, pe)))
        return rc;
    c->nsubs = json_array_size(subs);
    for (size_t i = 0; i < c->nsubs; i++) {
        char sub_path[160];
        snprintf(sub_path, sizeof sub_path, "%s.subscriptionDataSet[%zu]", path, i);
        if ((rc = parse_subscription(json_array_get(subs, i), sub_path, &c->subs[i], pe)))
            return rc;
    }
    return RMQ_OK;
}

static int parse_consumers(const json_t *root, struct rmq_heartbeat *hb, const struct rmq_json_err *pe)
{
    const json_t *arr;
    int rc = rmq_json_read_array(root, "consumerDataSet", "", &arr, pe);
    if (rc ||
        (rc = rmq_json_alloc_elems(json_array_size(arr), sizeof *hb->consumers, (void **)&hb->consumers, pe)))
        return rc;
    hb->nconsumers = json_array_size(arr);
    for (size_t i = 0; i < hb->nconsumers; i++) {
        char path[48];
        snprintf(path, sizeof path, "consumerDataSet[%zu]", i);
        if ((rc = parse_consumer(json_array_get(arr, i), path, &hb->consumers[i], pe)))
            return rc;
    }
    return RMQ_OK;
}

static int parse_producers(const json_t *root, struct rmq_heartbeat *hb, const struct rmq_json_err *pe)
{
    const json_t *arr;
    int rc = rmq_json_read_array(root, "producerDataSet", "", &arr, pe);
    if (rc || (rc = rmq_json_alloc_elems(json_array_size(arr), sizeof *hb->producer_groups,
                                         (void **)&hb->producer_groups, pe)))
        return rc;
    hb->nproducers = json_array_size(arr);
    for (size_t i = 0; i < hb->nproducers; i++) {
        char path[48];
        const json_t *o = json_array_get(arr, i);
        snprintf(path, sizeof path, "producerDataSet[%zu]", i);
        if (!json_is_object(o))
            return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
        if ((rc = rmq_json_read_required_str(o, "groupName", path, &hb->producer_groups[i], pe)))
            return rc;
    }
    return RMQ_OK;
}

/* Parses body[0..len) into *hb (zero-initialised). On failure *hb is
 * cleared, so the caller owns nothing new. */
int rmq_heartbeat_parse(const uint8_t *body, size_t len, struct rmq_heartbeat *hb, char *err, size_t errlen)
{
    const struct rmq_json_err pe = {err, errlen};
    json_t *root;
    int rc = rmq_json_load_object(body, len, "heartbeat", &root, err, errlen);
    if (rc)
        return rc;
    int64_t fp = 0;
    if ((rc = rmq_json_read_required_str(root, "clientID", "", &hb->client_id, &pe)) ||
        (rc = rmq_json_read_long(root, "heartbeatFingerprint", "", INT32_MIN, INT32_MAX, &fp, &pe)) ||
        (rc = rmq_json_read_bool(root, "withoutSub", "", &hb->without_sub, &pe)) ||
        (rc = parse_consumers(root, hb, &pe)) || (rc = parse_producers(root, hb, &pe)))
        rmq_heartbeat_clear(hb);
    else
        hb->fingerprint = (int32_t)fp;
    assert(rc || heartbeat_sanity(hb));
    json_decref(root);
    return rc;
}

void rmq_subscription_clear(struct rmq_subscription *s)
{
    if (!s)
        return;
    rmq_free(s->topic);
    rmq_free(s->sub_string);
    rmq_free(s->expression_type);
    rmq_json_strings_free(s->tags, s->ntags);
    rmq_free(s->codes);
    memset(s, 0, sizeof *s);
}

void rmq_heartbeat_clear(struct rmq_heartbeat *hb)
{
    if (!hb)
        return;
    for (size_t i = 0; i < hb->nconsumers; i++) {
        struct rmq_consumer_data *c = &hb->consumers[i];
        for (size_t j = 0; j < c->nsubs; j++)
            rmq_subscription_clear(&c->subs[j]);
        rmq_free(c->subs);
        rmq_free(c->group);
    }
    rmq_free(hb->consumers);
    rmq_json_strings_free(hb->producer_groups, hb->nproducers);
    rmq_free(hb->client_id);
    memset(hb, 0, sizeof *hb);
}

/* dst receives new copies of every string and array of src. */
int rmq_subscription_copy(struct rmq_subscription *dst, const struct rmq_subscription *src)
{
    memset(dst, 0, sizeof *dst);
    dst->sub_version = src->sub_version;
    dst->class_filter_mode = src->class_filter_mode;
    if ((src->topic && !(dst->topic = rmq_strdup(src->topic))) ||
        (src->sub_string && !(dst->sub_string = rmq_strdup(src->sub_string))) ||
        (src->expression_type && !(dst->expression_type = rmq_strdup(src->expression_type))))
        goto fail;
    if (src->ntags) {
        if (!(dst->tags = rmq_calloc(src->ntags, sizeof *dst->tags)))
            goto fail;
        dst->ntags = src->ntags;
        for (size_t i = 0; i < src->ntags; i++)
            if (!(dst->tags[i] = rmq_strdup(src->tags[i])))
                goto fail;
    }
    if (src->ncodes) {
        if (!(dst->codes = rmq_malloc(src->ncodes * sizeof *dst->codes)))
            goto fail;
        memcpy(dst->codes, src->codes, src->ncodes * sizeof *dst->codes);
        dst->ncodes = src->ncodes;
    }
    assert(dst->ntags == src->ntags && dst->ncodes == src->ncodes);
    return RMQ_OK;
fail:
    rmq_subscription_clear(dst);
    return RMQ_ENOMEM;
}

/* ---- encode ------------------------------------------------------------- */

int rmq_subscription_encode(const struct rmq_subscription *s, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc =
        buf_appendf(out, "{\"classFilterMode\":%s,\"codeSet\":[", s->class_filter_mode ? "true" : "false");
    for (size_t i = 0; !rc && i < s->ncodes; i++)
        rc = buf_appendf(out, i ? ",%" PRId32 : "%" PRId32, s->codes[i]);
    if (!rc)
        rc = buf_append_str(out, "],");
    if (!rc)
        rc = rmq_json_append_kv_str(out, "expressionType", s->expression_type ? s->expression_type : "TAG",
                                    ',');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "subString", s->sub_string ? s->sub_string : "*", ',');
    if (!rc)
        rc = buf_appendf(out, "\"subVersion\":%" PRId64 ",\"tagsSet\":", s->sub_version);
    if (!rc)
        rc = rmq_json_append_string_array(out, (const char *const *)s->tags, s->ntags);
    if (!rc)
        rc = buf_append_u8(out, ',');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "topic", s->topic, '}');
    if (rc)
        out->len = out->pos + mark;
    return rc;
}

/* One ConsumerData: keys sorted as fastjson writes them. */
static int append_consumer(const struct rmq_consumer_data *c, struct buf *out)
{
    int rc = buf_appendf(out, "{\"consumeFromWhere\":\"%s\",\"consumeType\":\"%s\",\"groupName\":",
                         rmq_consume_from_where_name(c->consume_from_where),
                         rmq_consume_type_name(c->consume_type));
    if (!rc)
        rc = rmq_json_append_string(out, c->group);
    if (!rc)
        rc = buf_appendf(out, ",\"messageModel\":\"%s\",\"subscriptionDataSet\":[",
                         rmq_message_model_name(c->message_model));
    for (size_t i = 0; !rc && i < c->nsubs; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_subscription_encode(&c->subs[i], out);
    }
    if (!rc)
        rc = buf_appendf(out, "],\"unitMode\":%s}", c->unit_mode ? "true" : "false");
    return rc;
}

int rmq_heartbeat_encode(const struct rmq_heartbeat *hb, bool v5_fields, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"clientID\":");
    if (!rc)
        rc = rmq_json_append_string(out, hb->client_id);
    if (!rc)
        rc = buf_append_str(out, ",\"consumerDataSet\":[");
    for (size_t i = 0; !rc && i < hb->nconsumers; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = append_consumer(&hb->consumers[i], out);
    }
    if (!rc)
        rc = buf_append_str(out, "],");
    if (!rc && v5_fields)
        rc = buf_appendf(out, "\"heartbeatFingerprint\":%" PRId32 ",", hb->fingerprint);
    if (!rc)
        rc = buf_append_str(out, "\"producerDataSet\":[");
    for (size_t i = 0; !rc && i < hb->nproducers; i++) {
        rc = buf_append_str(out, i ? ",{\"groupName\":" : "{\"groupName\":");
        if (!rc)
            rc = rmq_json_append_string(out, hb->producer_groups[i]);
        if (!rc)
            rc = buf_append_u8(out, '}');
    }
    if (!rc)
        rc = buf_append_u8(out, ']');
    if (!rc && v5_fields)
        rc = buf_appendf(out, ",\"withoutSub\":%s", hb->without_sub ? "true" : "false");
    if (!rc)
        rc = buf_append_u8(out, '}');
    if (rc)
        out->len = out->pos + mark;
    return rc;
}
