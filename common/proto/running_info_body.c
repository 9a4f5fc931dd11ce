/* running_info_body.c — see running_info_body.h. A small scanner skips any value,
 * including objects whose keys are objects, so the top level can be walked
 * without a full parser for fastjson's dialect. */
#include "running_info_body.h"

#include "array.h"
#include "err.h"
#include "json_scan.h"
#include "mem.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 64

static int skip_value(struct json_scan *s, int depth);

/* Whether c ends a bare value (number, true, ...): a switch, not strchr,
 * as this runs for every byte of them. */
static inline bool ends_bare(char c)
{
    switch (c) {
    case ',':
    case ':':
    case '}':
    case ']':
    case ' ':
    case '\t':
    case '\r':
    case '\n':
    case 0: /* strchr counted the terminator as a delimiter too */ return true;
    default: return false;
    }
}

static int skip_string(struct json_scan *s)
{
    if (s->p >= s->end || *s->p != '"')
        return RMQ_EPROTO;
    for (s->p++; s->p < s->end; s->p++) {
        if (*s->p == '\\') {
            /* The escaped byte is skipped too, but a backslash that ends the
             * text must not carry the cursor past its end. */
            if (s->p + 1 == s->end)
                break;
            s->p++;
            continue;
        }
        if (*s->p == '"') {
            s->p++;
            return RMQ_OK;
        }
    }
    assert(s->p <= s->end); /* a cursor never passes the end of its text */
    return RMQ_EPROTO;
}

/* Objects (any value allowed as a key) and arrays. */
static int skip_container(struct json_scan *s, int depth)
{
    char close = *s->p == '{' ? '}' : ']';
    bool object = close == '}';
    s->p++;
    if (json_scan_take(s, close))
        return RMQ_OK;
    for (;;) {
        if (skip_value(s, depth + 1) != 0)
            return RMQ_EPROTO;
        if (object && (!json_scan_take(s, ':') || skip_value(s, depth + 1) != 0))
            return RMQ_EPROTO;
        if (json_scan_take(s, ','))
            continue;
        return json_scan_take(s, close) ? RMQ_OK : RMQ_EPROTO;
    }
}

static int skip_value(struct json_scan *s, int depth)
{
    json_scan_ws(s);
    if (s->p >= s->end || depth > MAX_DEPTH)
        return RMQ_EPROTO;
    if (*s->p == '"')
        return skip_string(s);
    if (*s->p == '{' || *s->p == '[')
        return skip_container(s, depth);
    const char *start = s->p;
    while (s->p < s->end && !ends_bare(*s->p))
        s->p++;
    assert(s->p <= s->end);
    return s->p > start ? RMQ_OK : RMQ_EPROTO;
}

/* Loads the standard-JSON text [a, b) (a quoted string is unwrapped and its
 * content loaded, for fastjson's string-key form). New reference or NULL. */
static json_t *load_span(const char *a, const char *b)
{
    json_t *v = json_loadb(a, (size_t)(b - a), JSON_DECODE_ANY, NULL);
    if (v && json_is_string(v)) {
        json_t *inner = json_loads(json_string_value(v), 0, NULL);
        json_decref(v);
        return inner;
    }
    return v;
}

/* Takes ownership of nothing: copies topic and broker into a new entry. */
static int push_mq(struct rmq_running_info *ri, size_t *cap, const char *topic, size_t tlen,
                   const char *broker, size_t blen, int64_t qid)
{
    if (RMQ_GROW(ri->mqs, *cap, ri->nmqs + 1, 8) != 0)
        return RMQ_ENOMEM;
    struct rmq_mq *m = &ri->mqs[ri->nmqs];
    m->topic = rmq_strndup(topic, tlen);
    m->broker_name = rmq_strndup(broker, blen);
    m->queue_id = (int32_t)qid;
    if (!m->topic || !m->broker_name) {
        rmq_free(m->topic);
        rmq_free(m->broker_name);
        return RMQ_ENOMEM;
    }
    ri->nmqs++;
    assert(ri->nmqs <= *cap && ri->mqs[ri->nmqs - 1].queue_id >= 0);
    return RMQ_OK;
}

static int add_mq(struct rmq_running_info *ri, size_t *cap, const json_t *key)
{
    const char *topic = json_string_value(json_object_get(key, "topic"));
    const char *broker = json_string_value(json_object_get(key, "brokerName"));
    json_t *qid = json_object_get(key, "queueId");
    if (!topic || !broker || !json_is_integer(qid) || json_integer_value(qid) < 0 ||
        json_integer_value(qid) > INT32_MAX)
        return RMQ_EPROTO;
    return push_mq(ri, cap, topic, strlen(topic), broker, strlen(broker), json_integer_value(qid));
}

/* The span [a, b) is exactly the JSON text `"name"`. */
static bool key_is(const char *a, const char *b, const char *name)
{
    size_t n = strlen(name);
    return (size_t)(b - a) == n + 2 && !memcmp(a + 1, name, n);
}

/* An unsigned decimal in [a, b) no larger than INT32_MAX, else -1. */
static int64_t small_uint(const char *a, const char *b)
{
    int64_t v = 0;
    if (a == b || b - a > 10)
        return -1;
    for (; a < b; a++) {
        if (*a < '0' || *a > '9')
            return -1;
        v = v * 10 + (*a - '0');
    }
    return v <= INT32_MAX ? v : -1;
}

/* The common case without jansson: a MessageQueue key written inline as an
 * object whose strings have no escapes. A dropped queue's key is only
 * checked for that shape. RMQ_OK (added unless dropped), RMQ_EAGAIN (not
 * that shape: the caller loads it with jansson), RMQ_EPROTO or RMQ_ENOMEM. */
static int add_inline_mq(struct rmq_running_info *ri, size_t *cap, const char *a, const char *b, bool dropped)
{
    struct json_scan s = {a, b};
    const char *topic = NULL, *broker = NULL;
    size_t tlen = 0, blen = 0;
    int64_t qid = -1;
    if (!json_scan_take(&s, '{'))
        return RMQ_EAGAIN;
    bool first = true;
    while (!json_scan_take(&s, '}')) {
        if (!first && !json_scan_take(&s, ','))
            return RMQ_EAGAIN;
        first = false;
        json_scan_ws(&s);
        const char *ka = s.p;
        if (skip_string(&s) != 0)
            return RMQ_EAGAIN;
        const char *kb = s.p;
        if (!json_scan_take(&s, ':'))
            return RMQ_EAGAIN;
        json_scan_ws(&s);
        const char *va = s.p;
        if (skip_value(&s, 2) != 0)
            return RMQ_EAGAIN;
        const char *vb = s.p;
        bool str = vb - va >= 2 && *va == '"';
        if (str && memchr(va, '\\', (size_t)(vb - va)))
            return RMQ_EAGAIN; /* escapes: jansson unescapes them */
        if (key_is(ka, kb, "topic") && str)
            topic = va + 1, tlen = (size_t)(vb - va - 2);
        else if (key_is(ka, kb, "brokerName") && str)
            broker = va + 1, blen = (size_t)(vb - va - 2);
        else if (key_is(ka, kb, "queueId"))
            qid = small_uint(va, vb);
    }
    json_scan_ws(&s);
    if (s.p != s.end)
        return RMQ_EAGAIN;
    if (dropped)
        return RMQ_OK;
    if (!topic || !broker || qid < 0)
        return RMQ_EPROTO;
    return push_mq(ri, cap, topic, tlen, broker, blen, qid);
}

/* Skips the ProcessQueueInfo value at s->p in one pass and says in
 * *dropped whether it is an object with "droped":true among its top-level
 * members; any other value is skipped as it is. 0 or RMQ_EPROTO. */
static int skip_pq(struct json_scan *s, bool *dropped)
{
    *dropped = false;
    json_scan_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return skip_value(s, 1);
    s->p++;
    if (json_scan_take(s, '}'))
        return RMQ_OK;
    for (;;) {
        json_scan_ws(s);
        const char *ka = s->p;
        if (skip_value(s, 2) != 0)
            return RMQ_EPROTO;
        const char *kb = s->p;
        if (!json_scan_take(s, ':'))
            return RMQ_EPROTO;
        json_scan_ws(s);
        const char *va = s->p;
        if (skip_value(s, 2) != 0)
            return RMQ_EPROTO;
        if (key_is(ka, kb, "droped") && s->p - va == 4 && !memcmp(va, "true", 4))
            *dropped = true;
        if (json_scan_take(s, ','))
            continue;
        return json_scan_take(s, '}') ? RMQ_OK : RMQ_EPROTO;
    }
}

/* After an object's member: true when another follows (its ',' taken);
 * false at the end, with *rc RMQ_OK when that is the object's '}' (taken)
 * and an error (where prefixes the message) otherwise. */
static bool more_members(struct json_scan *s, const char *where, int *rc, char *err, size_t errlen)
{
    *rc = RMQ_OK;
    if (json_scan_take(s, ','))
        return true;
    if (!json_scan_take(s, '}')) {
        snprintf(err, errlen, "%sexpected ',' or '}'", where);
        *rc = RMQ_EPROTO;
    }
    return false;
}

/* Walks the mqTable object at s->p. */
static int parse_mq_table(struct json_scan *s, struct rmq_running_info *ri, char *err, size_t errlen)
{
    if (!json_scan_take(s, '{'))
        return snprintf(err, errlen, "mqTable: expected an object"), RMQ_EPROTO;
    size_t cap = 0, entries = 0;
    for (;;) {
        if (json_scan_take(s, '}'))
            return RMQ_OK;
        const char *ka = s->p;
        if (skip_value(s, 1) != 0)
            return snprintf(err, errlen, "mqTable: malformed key"), RMQ_EPROTO;
        const char *kb = s->p;
        if (!json_scan_take(s, ':'))
            return snprintf(err, errlen, "mqTable: expected ':'"), RMQ_EPROTO;
        bool dropped;
        if (skip_pq(s, &dropped) != 0)
            return snprintf(err, errlen, "mqTable: malformed value"), RMQ_EPROTO;
        int rc = RMQ_OK;
        if (++entries > RMQ_RUNNING_INFO_MAX_QUEUES) {
            snprintf(err, errlen, "mqTable: more than %d queues", RMQ_RUNNING_INFO_MAX_QUEUES);
            return RMQ_E2BIG;
        }
        rc = add_inline_mq(ri, &cap, ka, kb, dropped);
        if (rc == RMQ_EAGAIN) {
            json_t *key = load_span(ka, kb);
            rc = !json_is_object(key) ? RMQ_EINVAL : dropped ? RMQ_OK : add_mq(ri, &cap, key);
            json_decref(key);
        }
        if (rc == RMQ_EINVAL) {
            snprintf(err, errlen, "mqTable: a key is not a MessageQueue");
            rc = RMQ_EPROTO;
        } else if (rc == RMQ_EPROTO) {
            snprintf(err, errlen, "mqTable: a MessageQueue lacks topic, brokerName or queueId");
        }
        if (rc != 0 || !more_members(s, "mqTable: ", &rc, err, errlen))
            return rc;
    }
}

static int take_property(json_t *props, const char *key, char **out)
{
    const char *v = json_string_value(json_object_get(props, key));
    if (!v)
        return RMQ_OK;
    *out = rmq_strdup(v);
    return *out ? RMQ_OK : RMQ_ENOMEM;
}

/* Reads one top-level member; key is the unquoted key text span. */
static int top_member(struct json_scan *s, const char *key, size_t klen, struct rmq_running_info *ri,
                      char *err, size_t errlen)
{
    if (klen == 7 && !memcmp(key, "mqTable", 7))
        return parse_mq_table(s, ri, err, errlen);
    json_scan_ws(s);
    const char *va = s->p;
    if (skip_value(s, 1) != 0)
        return snprintf(err, errlen, "malformed value"), RMQ_EPROTO;
    if (klen != 10 || memcmp(key, "properties", 10))
        return RMQ_OK;
    json_t *props = load_span(va, s->p);
    int rc = take_property(props, "allocateMessageQueueStrategy", &ri->strategy);
    if (rc == 0)
        rc = take_property(props, "PROP_CLIENT_VERSION", &ri->client_version);
    json_decref(props);
    return rc;
}

static int parse_top(struct json_scan *s, struct rmq_running_info *ri, char *err, size_t errlen)
{
    if (!json_scan_take(s, '{'))
        return snprintf(err, errlen, "expected a JSON object"), RMQ_EPROTO;
    for (;;) {
        if (json_scan_take(s, '}'))
            return RMQ_OK;
        const char *ka = s->p;
        if (skip_string(s) != 0)
            return snprintf(err, errlen, "expected a quoted key"), RMQ_EPROTO;
        const char *kb = s->p;
        assert(kb - ka >= 2 && kb <= s->end); /* skip_string took both quotes */
        if (!json_scan_take(s, ':'))
            return snprintf(err, errlen, "expected ':'"), RMQ_EPROTO;
        int rc = top_member(s, ka + 1, (size_t)(kb - ka - 2), ri, err, errlen);
        if (rc != 0 || !more_members(s, "", &rc, err, errlen))
            return rc;
    }
}

int rmq_running_info_parse(const uint8_t *body, size_t len, struct rmq_running_info *out, char *err,
                           size_t errlen)
{
    struct json_scan s = {(const char *)body, (const char *)body + len};
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = 0;
    if (len > RMQ_RUNNING_INFO_MAX_BYTES) {
        snprintf(err, errlen, "body of %zu bytes, more than %d", len, RMQ_RUNNING_INFO_MAX_BYTES);
        return RMQ_E2BIG;
    }
    int rc = body ? parse_top(&s, out, err, errlen) : RMQ_EPROTO;
    if (rc != 0) {
        if (!body)
            snprintf(err, errlen, "empty body");
        rmq_running_info_clear(out);
    }
    return rc;
}

void rmq_running_info_clear(struct rmq_running_info *ri)
{
    if (!ri)
        return;
    rmq_mqs_free(ri->mqs, ri->nmqs);
    rmq_free(ri->strategy);
    rmq_free(ri->client_version);
    memset(ri, 0, sizeof *ri);
}

/* ---- encode ------------------------------------------------------------- */

/* One ProcessQueueInfo value (keys sorted; nothing cached). */
static int append_pq_info(const struct rmq_running_info_queue *q, struct buf *out)
{
    return buf_appendf(out,
                       "{\"cachedMsgCount\":0,\"cachedMsgMaxOffset\":0,\"cachedMsgMinOffset\":0,"
                       "\"cachedMsgSizeInMiB\":0,\"commitOffset\":%" PRId64 ",\"droped\":false,"
                       "\"lastConsumeTimestamp\":0,\"lastLockTimestamp\":0,\"lastPullTimestamp\":%" PRId64
                       ",\"locked\":false,\"transactionMsgCount\":0,\"transactionMsgMaxOffset\":0,"
                       "\"transactionMsgMinOffset\":0,\"tryUnlockTimes\":0}",
                       q->commit_offset, q->last_pull_ms);
}

/* PROTOCOL: docs/protocol.md §3.8 mqTable is a TreeMap<MessageQueue, ProcessQueueInfo>;
 * fastjson writes each key object inline and unquoted. */
static int append_mq_table(const struct rmq_running_info_spec *ri, struct buf *out)
{
    int rc = buf_append_str(out, "\"mqTable\":{");
    for (size_t i = 0; !rc && i < ri->nqueues; i++) {
        const struct rmq_running_info_queue *q = &ri->queues[i];
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_json_append_mq(out, q->topic, q->broker_name, q->queue_id);
        if (!rc)
            rc = buf_append_u8(out, ':');
        if (!rc)
            rc = append_pq_info(q, out);
    }
    return rc ? rc : buf_append_u8(out, '}');
}

/* Member i of a JSON object: a comma unless it is the first, key as a JSON
 * string, a colon, then value as a JSON string, or raw as it is when value
 * is NULL. */
static int append_member(struct buf *out, size_t i, const char *key, const char *value, const char *raw)
{
    int rc = i ? buf_append_u8(out, ',') : RMQ_OK;
    if (!rc)
        rc = rmq_json_append_string(out, key);
    if (!rc)
        rc = buf_append_u8(out, ':');
    if (!rc)
        rc = value ? rmq_json_append_string(out, value) : buf_append_str(out, raw);
    return rc;
}

static int append_props(const struct rmq_running_info_spec *ri, struct buf *out)
{
    int rc = buf_append_str(out, "\"properties\":{");
    for (size_t i = 0; !rc && i < ri->nprops; i++)
        rc = append_member(out, i, ri->props[i].key, ri->props[i].value, NULL);
    return rc ? rc : buf_append_u8(out, '}');
}

/* statusTable (TreeMap topic -> ConsumeStatus) and subscriptionSet. */
static int append_subs(const struct rmq_running_info_spec *ri, struct buf *out)
{
    int rc = buf_append_str(out, "\"statusTable\":{");
    for (size_t i = 0; !rc && i < ri->nsubs; i++)
        rc = append_member(out, i, ri->subs[i].topic, NULL,
                           "{\"consumeFailedMsgs\":0,\"consumeFailedTPS\":0.0,\"consumeOKTPS\":0.0,"
                           "\"consumeRT\":0.0,\"pullRT\":0.0,\"pullTPS\":0.0}");
    if (!rc)
        rc = buf_append_str(out, "},\"subscriptionSet\":[");
    for (size_t i = 0; !rc && i < ri->nsubs; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_subscription_encode(&ri->subs[i], out);
    }
    return rc ? rc : buf_append_u8(out, ']');
}

int rmq_running_info_encode(const struct rmq_running_info_spec *ri, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_u8(out, '{');
    if (!rc)
        rc = append_mq_table(ri, out);
    if (!rc)
        rc = buf_append_u8(out, ',');
    if (!rc)
        rc = append_props(ri, out);
    if (!rc)
        rc = buf_append_u8(out, ',');
    if (!rc)
        rc = append_subs(ri, out);
    return rmq_json_end_object(out, mark, rc);
}
