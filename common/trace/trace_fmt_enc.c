/* trace_fmt_enc.c — the encoding half of the trace format (trace_fmt_enc.h): one event to one
 * JSON line. Keys are written in a fixed order and strings always as valid
 * UTF-8, so a trace reads with any JSON Lines tool and two recordings of the
 * same events are byte-identical. */
#include "trace_fmt_enc.h"

#include "err.h"
#include "remoting_cmd.h"
#include "trace_fmt_scan.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

static const char *const kind_names[] = {"header", "connect", "request", "close",
                                         "notify", "route",   "holdings"};

const char *trace_kind_name(enum trace_kind k)
{
    return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k] : "?";
}

const char trace_fmt_b64[65] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Appends s as a JSON string literal; bytes that are not valid UTF-8 become
 * U+FFFD, control characters \u escapes. */
static int put_str(struct buf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *end = p + strlen((const char *)p);
    int rc = buf_append_u8(out, '"');
    const unsigned char *run = p;
    while (!rc && p < end) {
        unsigned char c = *p;
        size_t n = c >= 0x80 ? trace_fmt_utf8_len(p, end) : 1;
        if (c >= 0x20 && c != '"' && c != '\\' && n > 0) {
            p += n;
            continue;
        }
        rc = buf_append(out, run, (size_t)(p - run));
        if (rc)
            break;
        if (n == 0)
            rc = buf_append_str(out, "\\ufffd");
        else if (c < 0x20)
            rc = buf_appendf(out, "\\u%04x", c);
        else
            rc = buf_appendf(out, "\\%c", c);
        p++;
        run = p;
    }
    if (!rc)
        rc = buf_append(out, run, (size_t)(p - run));
    return rc ? rc : buf_append_u8(out, '"');
}

static int put_key_str(struct buf *out, const char *key, const char *val)
{
    int rc = buf_appendf(out, ",\"%s\":", key);
    return rc ? rc : put_str(out, val);
}

/* Copies a validated JSON value without insignificant whitespace, so it
 * fits on one line whatever the client sent. */
static int put_minified(struct buf *out, const uint8_t *p, size_t len)
{
    uint8_t *w = buf_reserve(out, len);
    if (!w)
        return RMQ_ENOMEM;
    size_t n = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = p[i];
        if (in_str) {
            w[n++] = c;
            if (c == '\\' && i + 1 < len)
                w[n++] = p[++i];
            else if (c == '"')
                in_str = false;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            in_str = c == '"';
            w[n++] = c;
        }
    }
    assert(n <= len); /* minifying only drops bytes: the reservation holds them */
    buf_commit(out, n);
    return RMQ_OK;
}

static int put_base64(struct buf *out, const uint8_t *p, size_t len)
{
    uint8_t *w = buf_reserve(out, (len + 2) / 3 * 4 + 2);
    if (!w)
        return RMQ_ENOMEM;
    size_t n = 0;
    w[n++] = '"';
    for (size_t i = 0; i < len; i += 3) {
        uint32_t x =
            (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < len ? p[i + 2] : 0);
        w[n++] = (uint8_t)trace_fmt_b64[x >> 18 & 63];
        w[n++] = (uint8_t)trace_fmt_b64[x >> 12 & 63];
        w[n++] = i + 1 < len ? (uint8_t)trace_fmt_b64[x >> 6 & 63] : '=';
        w[n++] = i + 2 < len ? (uint8_t)trace_fmt_b64[x & 63] : '=';
    }
    w[n++] = '"';
    assert(n == (len + 2) / 3 * 4 + 2); /* exactly what was reserved */
    buf_commit(out, n);
    return RMQ_OK;
}

/* The body as a JSON value when it is strict JSON, else as base64: replay
 * hands the daemon's parser the same bytes either way. */
static int put_body(struct buf *out, const uint8_t *body, size_t len)
{
    if (!body || !len)
        return RMQ_OK;
    if (trace_json_valid(body, len)) {
        int rc = buf_append_str(out, ",\"body\":");
        return rc ? rc : put_minified(out, body, len);
    }
    int rc = buf_append_str(out, ",\"bodyBase64\":");
    return rc ? rc : put_base64(out, body, len);
}

static int put_request(const struct trace_event *ev, struct buf *out)
{
    int rc = buf_appendf(out, ",\"code\":%" PRId32 ",\"lang\":", ev->code);
    if (!rc)
        rc = put_str(out, rmq_language_name(ev->language));
    if (!rc)
        rc = buf_appendf(out, ",\"version\":%" PRId32, ev->cmd_version);
    if (!rc && ev->flag)
        rc = buf_appendf(out, ",\"flag\":%" PRId32, ev->flag);
    if (!rc)
        rc = buf_append_str(out, ",\"ext\":{");
    for (size_t i = 0; !rc && i < ev->next; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = put_str(out, ev->ext[i].key);
        if (!rc)
            rc = buf_append_u8(out, ':');
        if (!rc)
            rc = put_str(out, ev->ext[i].val);
    }
    if (!rc)
        rc = buf_append_u8(out, '}');
    return rc ? rc : put_body(out, ev->body, ev->body_len);
}

static int put_route(const struct trace_event *ev, struct buf *out)
{
    int rc = put_key_str(out, "topic", ev->topic);
    if (!rc && ev->deleted)
        return buf_append_str(out, ",\"brokers\":null");
    if (!rc)
        rc = buf_append_str(out, ",\"brokers\":[");
    for (size_t i = 0; !rc && i < ev->nbrokers; i++) {
        const struct trace_broker *b = &ev->brokers[i];
        rc = buf_append_str(out, i ? ",{\"brokerName\":" : "{\"brokerName\":");
        if (!rc)
            rc = put_str(out, b->broker_name);
        if (!rc)
            rc = buf_appendf(out, ",\"readQueueNums\":%d,\"writeQueueNums\":%d,\"perm\":%d}",
                             b->read_queue_nums, b->write_queue_nums, b->perm);
    }
    return rc ? rc : buf_append_u8(out, ']');
}

static int put_holdings(const struct trace_event *ev, struct buf *out)
{
    int rc = put_key_str(out, "group", ev->group);
    if (!rc)
        rc = put_key_str(out, "clientId", ev->client_id);
    if (!rc)
        rc = buf_appendf(out, ",\"asked\":%" PRId64, ev->asked);
    if (!rc && !ev->answered) {
        rc = buf_append_str(out, ",\"queues\":null");
        return rc || !ev->reason ? rc : put_key_str(out, "reason", ev->reason);
    }
    if (!rc)
        rc = buf_append_str(out, ",\"queues\":[");
    for (size_t i = 0; !rc && i < ev->nqueues; i++) {
        const struct trace_mq *q = &ev->queues[i];
        rc = buf_append_str(out, i ? ",{\"topic\":" : "{\"topic\":");
        if (!rc)
            rc = put_str(out, q->topic);
        if (!rc)
            rc = put_key_str(out, "brokerName", q->broker_name);
        if (!rc)
            rc = buf_appendf(out, ",\"queueId\":%" PRId32 "}", q->queue_id);
    }
    return rc ? rc : buf_append_u8(out, ']');
}

static int put_event(const struct trace_event *ev, struct buf *out)
{
    if (ev->kind == TRACE_HEADER)
        return buf_appendf(out,
                           "{\"rmqcoordTrace\":%d,\"ts\":%" PRId64 ",\"format\":\"docs/trace-format.md\"",
                           TRACE_FMT_VERSION, ev->ts);
    int rc = buf_appendf(out, "{\"ts\":%" PRId64, ev->ts);
    if (!rc && ev->kind != TRACE_ROUTE)
        rc = buf_appendf(out, ",\"conn\":%" PRIu64, ev->conn);
    if (!rc && ev->peer && ev->kind != TRACE_ROUTE)
        rc = put_key_str(out, "peer", ev->peer);
    if (!rc)
        rc = put_key_str(out, "event", trace_kind_name(ev->kind));
    if (rc)
        return rc;
    switch (ev->kind) {
    case TRACE_CONNECT: return ev->broker ? put_key_str(out, "broker", ev->broker) : RMQ_OK;
    case TRACE_REQUEST: return put_request(ev, out);
    case TRACE_CLOSE: return ev->reason ? put_key_str(out, "reason", ev->reason) : RMQ_OK;
    case TRACE_NOTIFY: return put_key_str(out, "group", ev->group);
    case TRACE_ROUTE: return put_route(ev, out);
    case TRACE_HOLDINGS: return put_holdings(ev, out);
    default: return RMQ_EINVAL;
    }
}

int trace_encode_event(const struct trace_event *ev, struct buf *out)
{
    bool holdings_ok = ev->kind != TRACE_HOLDINGS || (ev->group && ev->group[0] && ev->client_id &&
                                                      ev->asked >= 0 && (!ev->nqueues || ev->queues));
    if ((unsigned)ev->kind > TRACE_HOLDINGS || (ev->kind == TRACE_ROUTE && (!ev->topic || !ev->topic[0])) ||
        (ev->kind == TRACE_NOTIFY && (!ev->group || !ev->group[0])) || !holdings_ok || ev->ts < 0)
        return RMQ_EINVAL;
    size_t mark = out->len;
    int rc = put_event(ev, out);
    if (!rc)
        rc = buf_append_str(out, "}\n");
    if (rc)
        out->len = mark; /* all or nothing: a half line would corrupt the trace */
    return rc;
}
