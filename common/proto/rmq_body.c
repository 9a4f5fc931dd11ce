/* rmq_body.c — JSON bodies: HeartbeatData and lock-body parsers, and the
 * encoders for SubscriptionData, ConsumerListBody, TopicRouteData and
 * LockBatchResponseBody.
 *
 * Parsing goes through jansson with one small reader per value shape, so
 * every client's spelling of a field (PROTOCOL: docs/protocol.md §3.1, C++ ordinals and
 * string longs, absent arrays) is handled in one place and every rejection
 * names the field's path. Encoders write compact JSON by hand in Java's
 * sorted key order, because some peers split the text instead of parsing
 * it. Pure; one thread.
 */
#include "rmq_body.h"

#include "err.h"
#include "mem.h"
#include "remoting_cmd.h"
#include "parse_int.h"

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

/* ---- field readers ------------------------------------------------------
 * Each reader looks up `key` in `obj`; `path` names the object for error
 * messages ("" for the root). Absent and null mean "not sent". */

struct perr {
    char *err;
    size_t errlen;
};

static int bad_field(const struct perr *pe, const char *path, const char *key, const char *what)
{
    return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s%s%s: %s", path, *path ? "." : "", key, what);
}

static int no_memory(const struct perr *pe)
{
    return rmq_fail(pe->err, pe->errlen, RMQ_ENOMEM, "out of memory");
}

static const json_t *member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* *out receives a new copy of a required, non-empty string. */
static int read_required_str(const json_t *obj, const char *key, const char *path, char **out,
                             const struct perr *pe)
{
    const json_t *v = member(obj, key);
    if (!json_is_string(v) || json_string_length(v) == 0)
        return bad_field(pe, path, key, "expected a non-empty string");
    *out = rmq_strdup(json_string_value(v));
    return *out ? RMQ_OK : no_memory(pe);
}

/* *out receives a new copy of the string, or of dflt when it is absent or
 * empty. */
static int read_str_or(const json_t *obj, const char *key, const char *dflt, const char *path, char **out,
                       const struct perr *pe)
{
    const json_t *v = member(obj, key);
    if (v && !json_is_string(v))
        return bad_field(pe, path, key, "expected a string");
    const char *s = (v && json_string_length(v)) ? json_string_value(v) : dflt;
    *out = rmq_strdup(s);
    return *out ? RMQ_OK : no_memory(pe);
}

static int read_bool(const json_t *obj, const char *key, const char *path, bool *out, const struct perr *pe)
{
    const json_t *v = member(obj, key);
    if (!v)
        return RMQ_OK;
    if (!json_is_boolean(v))
        return bad_field(pe, path, key, "expected a boolean");
    *out = json_is_true(v);
    return RMQ_OK;
}

/* PROTOCOL (docs/protocol.md §3.1): a long is a JSON integer or a numeric string (C++ subVersion). */
static int long_value(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return RMQ_OK;
    }
    if (json_is_string(v))
        return rmq_parse_i64(json_string_value(v), out);
    return RMQ_EINVAL;
}

static int read_long(const json_t *obj, const char *key, const char *path, int64_t lo, int64_t hi,
                     int64_t *out, const struct perr *pe)
{
    const json_t *v = member(obj, key);
    int64_t n;
    if (!v)
        return RMQ_OK;
    if (long_value(v, &n))
        return bad_field(pe, path, key, "expected an integer or a numeric string");
    if (n < lo || n > hi)
        return bad_field(pe, path, key, "integer out of range");
    *out = n;
    return RMQ_OK;
}

/* PROTOCOL (docs/protocol.md §3.1): an enum is a Java name or its ordinal (C++ sends ordinals). */
static int read_enum(const json_t *obj, const char *key, const char *const *names, size_t n, const char *path,
                     int *out, const struct perr *pe)
{
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
    return bad_field(pe, path, key, "expected an enum name or ordinal");
}

/* *out is the borrowed array, or NULL when absent (an empty set). */
static int read_array(const json_t *obj, const char *key, const char *path, const json_t **out,
                      const struct perr *pe)
{
    const json_t *v = member(obj, key);
    if (v && !json_is_array(v))
        return bad_field(pe, path, key, "expected an array");
    *out = v;
    return RMQ_OK;
}

/* Allocates a zeroed array of n elements for an array field, so a later
 * failure can free the partly filled array with the usual _clear. */
static int alloc_elems(size_t n, size_t size, void **out, const struct perr *pe)
{
    *out = NULL;
    if (n == 0)
        return RMQ_OK;
    *out = rmq_calloc(n, size);
    return *out ? RMQ_OK : no_memory(pe);
}

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
    json_error_t jerr;
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
    return RMQ_OK;
}

/* ---- HeartbeatData ---------------------------------------------------- */

static int parse_string_set(const json_t *arr, const char *path, const char *key, char ***out, size_t *n,
                            const struct perr *pe)
{
    int rc = alloc_elems(json_array_size(arr), sizeof **out, (void **)out, pe);
    if (rc)
        return rc;
    *n = json_array_size(arr);
    for (size_t i = 0; i < *n; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v))
            return bad_field(pe, path, key, "expected an array of strings");
        if (!((*out)[i] = rmq_strdup(json_string_value(v))))
            return no_memory(pe);
    }
    return RMQ_OK;
}

static int parse_code_set(const json_t *arr, const char *path, struct rmq_subscription *s,
                          const struct perr *pe)
{
    int rc = alloc_elems(json_array_size(arr), sizeof *s->codes, (void **)&s->codes, pe);
    if (rc)
        return rc;
    s->ncodes = json_array_size(arr);
    for (size_t i = 0; i < s->ncodes; i++) {
        int64_t n;
        if (long_value(json_array_get(arr, i), &n) || n < INT32_MIN || n > INT32_MAX)
            return bad_field(pe, path, "codeSet", "expected an array of int32");
        s->codes[i] = (int32_t)n;
    }
    return RMQ_OK;
}

static int parse_subscription(const json_t *o, const char *path, struct rmq_subscription *s,
                              const struct perr *pe)
{
    if (!json_is_object(o))
        return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
    const json_t *tags, *codes;
    int rc;
    if ((rc = read_required_str(o, "topic", path, &s->topic, pe)) ||
        (rc = read_str_or(o, "subString", "*", path, &s->sub_string, pe)) ||
        (rc = read_str_or(o, "expressionType", "TAG", path, &s->expression_type, pe)) ||
        (rc = read_long(o, "subVersion", path, INT64_MIN, INT64_MAX, &s->sub_version, pe)) ||
        (rc = read_bool(o, "classFilterMode", path, &s->class_filter_mode, pe)) ||
        (rc = read_array(o, "tagsSet", path, &tags, pe)) ||
        (rc = read_array(o, "codeSet", path, &codes, pe)) ||
        (rc = parse_string_set(tags, path, "tagsSet", &s->tags, &s->ntags, pe)) ||
        (rc = parse_code_set(codes, path, s, pe)))
        return rc;
    return RMQ_OK;
}

static int parse_consumer(const json_t *o, const char *path, struct rmq_consumer_data *c,
                          const struct perr *pe)
{
    if (!json_is_object(o))
        return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
    /* Defaults for fields C++ leaves out: a push consumer in a cluster. */
    c->consume_type = RMQ_CONSUME_PASSIVELY;
    c->message_model = RMQ_MODEL_CLUSTERING;
    const json_t *subs;
    int rc;
    if ((rc = read_required_str(o, "groupName", path, &c->group, pe)) ||
        (rc = read_enum(o, "consumeType", consume_type_names, COUNT(consume_type_names), path,
                        &c->consume_type, pe)) ||
        (rc = read_enum(o, "messageModel", message_model_names, COUNT(message_model_names), path,
                        &c->message_model, pe)) ||
        (rc = read_enum(o, "consumeFromWhere", consume_from_names, COUNT(consume_from_names), path,
                        &c->consume_from_where, pe)) ||
        (rc = read_bool(o, "unitMode", path, &c->unit_mode, pe)) ||
        (rc = read_array(o, "subscriptionDataSet", path, &subs, pe)) ||
        (rc = alloc_elems(json_array_size(subs), sizeof *c->subs, (void **)&c->subs, pe)))
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

static int parse_consumers(const json_t *root, struct rmq_heartbeat *hb, const struct perr *pe)
{
    const json_t *arr;
    int rc = read_array(root, "consumerDataSet", "", &arr, pe);
    if (rc || (rc = alloc_elems(json_array_size(arr), sizeof *hb->consumers, (void **)&hb->consumers, pe)))
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

static int parse_producers(const json_t *root, struct rmq_heartbeat *hb, const struct perr *pe)
{
    const json_t *arr;
    int rc = read_array(root, "producerDataSet", "", &arr, pe);
    if (rc || (rc = alloc_elems(json_array_size(arr), sizeof *hb->producer_groups,
                                (void **)&hb->producer_groups, pe)))
        return rc;
    hb->nproducers = json_array_size(arr);
    for (size_t i = 0; i < hb->nproducers; i++) {
        char path[48];
        const json_t *o = json_array_get(arr, i);
        snprintf(path, sizeof path, "producerDataSet[%zu]", i);
        if (!json_is_object(o))
            return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
        if ((rc = read_required_str(o, "groupName", path, &hb->producer_groups[i], pe)))
            return rc;
    }
    return RMQ_OK;
}

/* Parses body[0..len) into *hb (zero-initialised). On failure *hb is
 * cleared, so the caller owns nothing new. */
int rmq_heartbeat_parse(const uint8_t *body, size_t len, struct rmq_heartbeat *hb, char *err, size_t errlen)
{
    const struct perr pe = {err, errlen};
    json_t *root;
    int rc = rmq_json_load_object(body, len, "heartbeat", &root, err, errlen);
    if (rc)
        return rc;
    int64_t fp = 0;
    if ((rc = read_required_str(root, "clientID", "", &hb->client_id, &pe)) ||
        (rc = read_long(root, "heartbeatFingerprint", "", INT32_MIN, INT32_MAX, &fp, &pe)) ||
        (rc = read_bool(root, "withoutSub", "", &hb->without_sub, &pe)) ||
        (rc = parse_consumers(root, hb, &pe)) || (rc = parse_producers(root, hb, &pe)))
        rmq_heartbeat_clear(hb);
    else
        hb->fingerprint = (int32_t)fp;
    json_decref(root);
    return rc;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rmq_free(v[i]);
    rmq_free(v);
}

void rmq_subscription_clear(struct rmq_subscription *s)
{
    if (!s)
        return;
    rmq_free(s->topic);
    rmq_free(s->sub_string);
    rmq_free(s->expression_type);
    free_strings(s->tags, s->ntags);
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
    free_strings(hb->producer_groups, hb->nproducers);
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
    return RMQ_OK;
fail:
    rmq_subscription_clear(dst);
    return RMQ_ENOMEM;
}

/* ---- lock bodies ------------------------------------------------------ */

static int parse_mq(const json_t *o, const char *path, struct rmq_mq *mq, const struct perr *pe)
{
    if (!json_is_object(o))
        return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
    int64_t qid = -1;
    int rc;
    if ((rc = read_required_str(o, "topic", path, &mq->topic, pe)) ||
        (rc = read_required_str(o, "brokerName", path, &mq->broker_name, pe)) ||
        (rc = read_long(o, "queueId", path, 0, INT32_MAX, &qid, pe)))
        return rc;
    if (qid < 0)
        return bad_field(pe, path, "queueId", "expected a non-negative integer");
    mq->queue_id = (int32_t)qid;
    return RMQ_OK;
}

/* Parses body[0..len) into *out (zero-initialised). On failure *out is
 * cleared. */
int rmq_lock_body_parse(const uint8_t *body, size_t len, struct rmq_lock_body *out, char *err, size_t errlen)
{
    const struct perr pe = {err, errlen};
    json_t *root;
    int rc = rmq_json_load_object(body, len, "lock body", &root, err, errlen);
    if (rc)
        return rc;
    const json_t *arr;
    if ((rc = read_required_str(root, "clientId", "", &out->client_id, &pe)) ||
        (rc = read_required_str(root, "consumerGroup", "", &out->consumer_group, &pe)) ||
        (rc = read_array(root, "mqSet", "", &arr, &pe)) ||
        (rc = alloc_elems(json_array_size(arr), sizeof *out->mqs, (void **)&out->mqs, &pe)))
        goto done;
    out->nmqs = json_array_size(arr);
    for (size_t i = 0; i < out->nmqs; i++) {
        char path[40];
        snprintf(path, sizeof path, "mqSet[%zu]", i);
        if ((rc = parse_mq(json_array_get(arr, i), path, &out->mqs[i], &pe)))
            goto done;
    }
done:
    if (rc)
        rmq_lock_body_clear(out);
    json_decref(root);
    return rc;
}

void rmq_lock_body_clear(struct rmq_lock_body *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->nmqs; i++) {
        rmq_free(b->mqs[i].topic);
        rmq_free(b->mqs[i].broker_name);
    }
    rmq_free(b->mqs);
    rmq_free(b->client_id);
    rmq_free(b->consumer_group);
    memset(b, 0, sizeof *b);
}

/* ---- encoders ----------------------------------------------------------
 * Each appends to out and, on failure, restores out to its previous
 * contents. */

/* JSON string literal. Control characters become \u00XX; other bytes are
 * copied, so valid UTF-8 in gives valid UTF-8 out. */
int rmq_json_append_string(struct buf *out, const char *s)
{
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
    if (rc)
        out->len = out->pos + mark;
    return rc;
}

/* Appends `"key":` followed by the string value and a trailing separator. */
static int append_kv_str(struct buf *out, const char *key, const char *val, char sep)
{
    int rc = buf_appendf(out, "\"%s\":", key);
    if (!rc)
        rc = rmq_json_append_string(out, val ? val : "");
    return rc ? rc : (sep ? buf_append_u8(out, (uint8_t)sep) : RMQ_OK);
}

static int append_string_array(struct buf *out, const char *const *v, size_t n)
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
        rc = append_kv_str(out, "expressionType", s->expression_type ? s->expression_type : "TAG", ',');
    if (!rc)
        rc = append_kv_str(out, "subString", s->sub_string ? s->sub_string : "*", ',');
    if (!rc)
        rc = buf_appendf(out, "\"subVersion\":%" PRId64 ",\"tagsSet\":", s->sub_version);
    if (!rc)
        rc = append_string_array(out, (const char *const *)s->tags, s->ntags);
    if (!rc)
        rc = buf_append_u8(out, ',');
    if (!rc)
        rc = append_kv_str(out, "topic", s->topic, '}');
    if (rc)
        out->len = out->pos + mark;
    return rc;
}

int rmq_consumer_list_encode(const char *const *ids, size_t n, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"consumerIdList\":");
    if (!rc)
        rc = append_string_array(out, ids, n);
    if (!rc)
        rc = buf_append_u8(out, '}');
    if (rc)
        out->len = out->pos + mark;
    return rc;
}

/* PROTOCOL: docs/protocol.md §3.4 brokerAddrs has Long keys; fastjson writes them bare
 * unless the peer asked for standard JSON. */
static int append_broker(struct buf *out, const struct rmq_route_broker *b, bool quoted_ids)
{
    int rc = buf_append_str(out, "{\"brokerAddrs\":{");
    if (!rc && b->master_addr) {
        rc = buf_append_str(out, quoted_ids ? "\"0\":" : "0:");
        if (!rc)
            rc = rmq_json_append_string(out, b->master_addr);
    }
    if (!rc)
        rc = buf_append_str(out, "},");
    if (!rc)
        rc = append_kv_str(out, "brokerName", b->broker_name, ',');
    if (!rc)
        rc = append_kv_str(out, "cluster", b->cluster, '}');
    return rc;
}

static int append_queue(struct buf *out, const struct rmq_route_queue *q)
{
    int rc = buf_append_u8(out, '{');
    if (!rc)
        rc = append_kv_str(out, "brokerName", q->broker_name, ',');
    if (!rc)
        rc = buf_appendf(out, "\"perm\":%d,\"readQueueNums\":%d,\"topicSysFlag\":%d,\"writeQueueNums\":%d}",
                         q->perm, q->read_queue_nums, q->topic_sys_flag, q->write_queue_nums);
    return rc;
}

int rmq_route_encode(const struct rmq_route_broker *brokers, size_t nbrokers,
                     const struct rmq_route_queue *queues, size_t nqueues, bool quoted_ids, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"brokerDatas\":[");
    for (size_t i = 0; !rc && i < nbrokers; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = append_broker(out, &brokers[i], quoted_ids);
    }
    if (!rc)
        rc = buf_append_str(out, "],\"filterServerTable\":{},\"queueDatas\":[");
    for (size_t i = 0; !rc && i < nqueues; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = append_queue(out, &queues[i]);
    }
    if (!rc)
        rc = buf_append_str(out, "]}");
    if (rc)
        out->len = out->pos + mark;
    return rc;
}

static int append_mq(struct buf *out, const struct rmq_mq *mq)
{
    int rc = buf_append_u8(out, '{');
    if (!rc)
        rc = append_kv_str(out, "brokerName", mq->broker_name, ',');
    if (!rc)
        rc = buf_appendf(out, "\"queueId\":%" PRId32 ",", mq->queue_id);
    if (!rc)
        rc = append_kv_str(out, "topic", mq->topic, '}');
    return rc;
}

int rmq_lock_ok_encode(const struct rmq_mq *mqs, size_t n, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"lockOKMQSet\":[");
    for (size_t i = 0; !rc && i < n; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = append_mq(out, &mqs[i]);
    }
    if (!rc)
        rc = buf_append_str(out, "]}");
    if (rc)
        out->len = out->pos + mark;
    return rc;
}
