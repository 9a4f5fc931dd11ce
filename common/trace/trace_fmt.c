/* trace_fmt.c — see trace_fmt.h.
 *
 * Decoding runs in two phases over a private copy of the line: phase one
 * validates the whole top-level object and records each key with the span of
 * its value (nothing is interpreted yet, so key order does not matter);
 * phase two interprets the pairs for the event kind, unescaping strings in
 * place (an unescaped string is never longer than its escaped form, so the
 * closing quote's byte can hold the NUL). Body values are validated in phase
 * one and handed out as raw spans, never unescaped: they go to the daemon's
 * own body parser as they are. */
#include "trace_fmt.h"

#include "array.h"
#include "err.h"
#include "mem.h"
#include "remoting_cmd.h"
#include "trace_fmt_cache.h"
#include "trace_fmt_scan.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

void trace_decoder_init(struct trace_decoder *d)
{
    memset(d, 0, sizeof *d);
    buf_init(&d->line, TRACE_FMT_MAX_LINE + 1);
}

void trace_decoder_free(struct trace_decoder *d)
{
    if (!d)
        return;
    trace_line_cache_free(d);
    buf_free(&d->line);
    rmq_free(d->kv);
    rmq_free(d->brokers);
    rmq_free(d->mqs);
    rmq_free(d->body64);
    memset(d, 0, sizeof *d);
}

/* ---- phase one: the top-level object ---- */

#define MAX_PAIRS 32

/* Known keys get an id so that lookups and the allowed-key checks are
 * array and bit operations, not string compares (a million lines a second). */
enum key_id {
    K_TS = 0,
    K_EVENT,
    K_CONN,
    K_PEER,
    K_CODE,
    K_LANG,
    K_VERSION,
    K_FLAG,
    K_EXT,
    K_BODY,
    K_BODY64,
    K_GROUP,
    K_REASON,
    K_TOPIC,
    K_BROKERS,
    K_BROKER,
    K_HDR,
    K_CLIENT_ID,
    K_ASKED,
    K_QUEUES,
    K_COUNT,
    K_OTHER = K_COUNT,
};

static const char *const key_names[K_COUNT] = {
    "ts",      "event",  "conn",          "peer",       "code",  "lang",   "version",
    "flag",    "ext",    "body",          "bodyBase64", "group", "reason", "topic",
    "brokers", "broker", "rmqcoordTrace", "clientId",   "asked", "queues",
};

static int key_id(const char *k)
{
    for (int i = 0; i < K_COUNT; i++)
        if (k[0] == key_names[i][0] && !strcmp(k, key_names[i]))
            return i;
    return K_OTHER;
}

struct pair {
    const char *key;
    unsigned char *val, *val_end; /* value span in the line copy */
};

struct pairs {
    struct pair v[MAX_PAIRS];
    size_t n;
    const struct pair *by[K_COUNT]; /* known keys */
    unsigned present;               /* bit per known key */
    const char *other;              /* first unknown key */
};

static int scan_top(struct scan *s, struct pairs *ps)
{
    ps->n = 0;
    ps->present = 0;
    ps->other = NULL;
    trace_scan_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return trace_scan_fail(s, "a line must be one JSON object");
    s->p++;
    trace_scan_ws(s);
    if (s->p < s->end && *s->p == '}')
        return trace_scan_fail(s, "empty object");
    for (;;) {
        trace_scan_ws(s);
        if (s->p >= s->end || *s->p != '"')
            return trace_scan_fail(s, "expected a string key");
        char *key;
        if (trace_scan_string(s, true, &key) != 0)
            return RMQ_EPROTO;
        int id = key_id(key);
        if (id != K_OTHER && (ps->present & (1u << id)))
            return trace_scan_fail(s, "duplicate key");
        if (ps->n == MAX_PAIRS)
            return trace_scan_fail(s, "too many keys");
        assert(id >= 0 && id <= K_OTHER && ps->n < MAX_PAIRS);
        trace_scan_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return trace_scan_fail(s, "expected ':'");
        s->p++;
        trace_scan_ws(s);
        unsigned char *v = s->p;
        if (trace_scan_value(s, 2) != 0)
            return RMQ_EPROTO;
        assert(v < s->p && s->p <= s->end); /* a value of at least one byte, inside the line */
        ps->v[ps->n] = (struct pair){key, v, s->p};
        if (id != K_OTHER) {
            ps->by[id] = &ps->v[ps->n];
            ps->present |= 1u << id;
        } else if (!ps->other) {
            ps->other = key; /* unknown keys may repeat: only events refuse them, by the first */
        }
        ps->n++;
        trace_scan_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}')
            break;
        return trace_scan_fail(s, "expected ',' or '}'");
    }
    s->p++;
    trace_scan_ws(s);
    return s->p == s->end ? RMQ_OK : trace_scan_fail(s, "text after the object");
}

/* ---- phase two: interpreting values ---- */

struct ctx {
    struct trace_decoder *d;
    size_t lineno;
    const unsigned char *base;
};

static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ctx *c, const char *fmt, ...)
{
    int n = snprintf(c->d->error, sizeof c->d->error, "line %zu: ", c->lineno);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof c->d->error)
        vsnprintf(c->d->error + n, sizeof c->d->error - (size_t)n, fmt, ap);
    va_end(ap);
    return RMQ_EPROTO;
}

static const struct pair *find(const struct pairs *ps, int id)
{
    return (ps->present & (1u << id)) ? ps->by[id] : NULL;
}

/* Strict JSON integer in [lo, hi] (no fraction, no exponent). */
static int get_int(struct ctx *c, const struct pair *p, int64_t lo, int64_t hi, int64_t *out)
{
    const unsigned char *q = p->val;
    bool neg = q < p->val_end && *q == '-';
    if (neg)
        q++;
    if (q >= p->val_end || !is_digit(*q))
        return bad(c, "\"%s\" must be an integer", p->key);
    uint64_t v = 0;
    for (; q < p->val_end; q++) {
        if (!is_digit(*q))
            return bad(c, "\"%s\" must be an integer", p->key);
        unsigned dgt = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - dgt) / 10)
            return bad(c, "\"%s\" is out of range", p->key);
        v = v * 10 + dgt;
    }
    if ((neg && v > (uint64_t)INT64_MAX + 1) || (!neg && v > (uint64_t)INT64_MAX))
        return bad(c, "\"%s\" is out of range", p->key);
    int64_t x = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (x < lo || x > hi)
        return bad(c, "\"%s\" is out of range", p->key);
    *out = x;
    return RMQ_OK;
}

static int get_u64(struct ctx *c, const struct pair *p, uint64_t *out)
{
    uint64_t v = 0;
    const unsigned char *q = p->val;
    if (q >= p->val_end || !is_digit(*q))
        return bad(c, "\"%s\" must be a non-negative integer", p->key);
    for (; q < p->val_end; q++) {
        unsigned dgt = (unsigned)(*q - '0');
        if (!is_digit(*q))
            return bad(c, "\"%s\" must be a non-negative integer", p->key);
        if (v > (UINT64_MAX - dgt) / 10)
            return bad(c, "\"%s\" is out of range", p->key);
        v = v * 10 + dgt;
    }
    *out = v;
    return RMQ_OK;
}

/* Unescapes a string value in place. */
static int get_str(struct ctx *c, const struct pair *p, const char **out)
{
    if (*p->val != '"')
        return bad(c, "\"%s\" must be a string", p->key);
    struct scan s = {p->val, p->val_end, c->base, NULL, 0};
    char *v;
    if (trace_scan_string(&s, true, &v) != 0)
        return bad(c, "\"%s\": %s", p->key, s.err);
    *out = v;
    return RMQ_OK;
}

/* Walks the members of the object (or elements of the array) in p, calling
 * fn with each as a pair (key NULL for array elements). The separator after
 * a value is consumed before fn runs, so fn may write a NUL right after its
 * value. The structure was validated in phase one. */
typedef int (*member_fn)(struct ctx *c, const struct pair *m, void *arg);
static int each_member(struct ctx *c, const struct pair *p, bool object, member_fn fn, void *arg)
{
    struct scan s = {p->val, p->val_end, c->base, NULL, 0};
    if (s.p >= s.end || *s.p != (object ? '{' : '['))
        return bad(c, "\"%s\" must be %s", p->key, object ? "an object" : "an array");
    s.p++;
    trace_scan_ws(&s);
    if (s.p < s.end && *s.p == (object ? '}' : ']'))
        return RMQ_OK;
    for (;;) {
        struct pair m = {NULL, NULL, NULL};
        trace_scan_ws(&s);
        if (object) {
            char *key;
            if (trace_scan_string(&s, true, &key) != 0)
                return bad(c, "\"%s\": %s", p->key, s.err);
            m.key = key;
            trace_scan_ws(&s);
            s.p++; /* ':' */
        }
        trace_scan_ws(&s);
        m.val = s.p;
        if (trace_scan_value(&s, 3) != 0)
            return bad(c, "\"%s\": %s", p->key, s.err);
        m.val_end = s.p;
        trace_scan_ws(&s);
        unsigned char sep = s.p < s.end ? *s.p++ : 0;
        if (!m.key)
            m.key = p->key;
        int rc = fn(c, &m, arg);
        if (rc != 0)
            return rc;
        if (sep != ',')
            return RMQ_OK;
    }
}

/* One extFields member: strings as they are, numbers as written, booleans
 * as text, null skipped (the JSON header codec's rules). */
static int ext_member(struct ctx *c, const struct pair *m, void *arg)
{
    (void)arg;
    struct trace_decoder *d = c->d;
    const char *val;
    switch (*m->val) {
    case '"':
        if (get_str(c, m, &val) != 0)
            return RMQ_EPROTO;
        break;
    case 't': val = "true"; break;
    case 'f': val = "false"; break;
    case 'n': return RMQ_OK;
    case '{':
    case '[': return bad(c, "ext value \"%s\" must be a string", m->key);
    default: *m->val_end = '\0'; val = (const char *)m->val;
    }
    if (RMQ_GROW(d->kv, d->kv_cap, d->nkv + 1, 8) != 0)
        return bad(c, "out of memory"), RMQ_ENOMEM;
    d->kv[d->nkv++] = (struct trace_kv){m->key, val};
    return RMQ_OK;
}

struct broker_seen {
    struct trace_broker b;
    unsigned seen;
};

static int broker_field(struct ctx *c, const struct pair *m, void *arg)
{
    struct broker_seen *bs = arg;
    static const char *const keys[] = {"brokerName", "readQueueNums", "writeQueueNums", "perm"};
    int64_t v = 0;
    for (unsigned i = 0; i < 4; i++) {
        if (strcmp(m->key, keys[i]) != 0)
            continue;
        if (bs->seen & (1u << i))
            return bad(c, "duplicate \"%s\" in a broker", m->key);
        bs->seen |= 1u << i;
        if (i == 0)
            return get_str(c, m, &bs->b.broker_name);
        if (get_int(c, m, 0, i == 3 ? 7 : 65535, &v) != 0)
            return RMQ_EPROTO;
        if (i == 1)
            bs->b.read_queue_nums = (int)v;
        else if (i == 2)
            bs->b.write_queue_nums = (int)v;
        else
            bs->b.perm = (int)v;
        return RMQ_OK;
    }
    return bad(c, "unknown key \"%s\" in a broker", m->key);
}

static int broker_elem(struct ctx *c, const struct pair *m, void *arg)
{
    (void)arg;
    struct trace_decoder *d = c->d;
    struct broker_seen bs = {{NULL, 0, 0, 6}, 0};
    int rc = each_member(c, m, true, broker_field, &bs);
    if (rc != 0)
        return rc;
    if ((bs.seen & 7u) != 7u)
        return bad(c, "a broker needs brokerName, readQueueNums and writeQueueNums");
    if (!bs.b.broker_name[0])
        return bad(c, "empty brokerName");
    if (d->nbrokers == 256)
        return bad(c, "more than 256 brokers in a route");
    if (RMQ_GROW(d->brokers, d->brokers_cap, d->nbrokers + 1, 8) != 0)
        return bad(c, "out of memory"), RMQ_ENOMEM;
    d->brokers[d->nbrokers++] = bs.b;
    return RMQ_OK;
}

static int b64_val(unsigned char ch)
{
    const char *q = ch ? strchr(trace_fmt_b64, ch) : NULL;
    return q ? (int)(q - trace_fmt_b64) : -1;
}

/* Strict standard base64 with padding into d->body64. */
static int decode_b64(struct ctx *c, const char *s, struct trace_event *ev)
{
    struct trace_decoder *d = c->d;
    size_t n = strlen(s);
    if (n % 4)
        return bad(c, "bodyBase64: length is not a multiple of 4");
    size_t need = n / 4 * 3 + 1;
    if (RMQ_GROW(d->body64, d->body64_cap, need, 8) != 0)
        return bad(c, "out of memory"), RMQ_ENOMEM;
    size_t w = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            bool last = i + 4 == n;
            if (last && k >= 2 && s[i + (size_t)k] == '=' && (k == 3 || s[i + 3] == '=')) {
                v[k] = 0, pad++;
                continue;
            }
            if ((v[k] = b64_val((unsigned char)s[i + (size_t)k])) < 0)
                return bad(c, "bodyBase64: invalid character");
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        d->body64[w++] = (uint8_t)(x >> 16);
        if (pad < 2)
            d->body64[w++] = (uint8_t)(x >> 8);
        if (pad < 1)
            d->body64[w++] = (uint8_t)x;
    }
    ev->body = d->body64;
    ev->body_len = w;
    return RMQ_OK;
}

#define KB(k) (1u << (k))

static int check_keys(struct ctx *c, const struct pairs *ps, const char *kind, unsigned allowed)
{
    if (ps->other)
        return bad(c, "unknown key \"%s\" in a %s event", ps->other, kind);
    unsigned extra = ps->present & ~allowed;
    for (int i = 0; extra && i < K_COUNT; i++)
        if (extra & (1u << i))
            return bad(c, "unknown key \"%s\" in a %s event", key_names[i], kind);
    return RMQ_OK;
}

/* Optional string: absent leaves *out NULL. */
static int opt_str(struct ctx *c, const struct pairs *ps, int key, const char **out)
{
    const struct pair *p = find(ps, key);
    *out = NULL;
    return p ? get_str(c, p, out) : RMQ_OK;
}

static int req_str(struct ctx *c, const struct pairs *ps, int key, const char **out)
{
    const struct pair *p = find(ps, key);
    if (!p)
        return bad(c, "missing \"%s\"", key_names[key]);
    return get_str(c, p, out);
}

static int opt_i32(struct ctx *c, const struct pairs *ps, int key, int32_t dflt, int32_t *out)
{
    const struct pair *p = find(ps, key);
    int64_t v = dflt;
    if (p && get_int(c, p, INT32_MIN, INT32_MAX, &v) != 0)
        return RMQ_EPROTO;
    *out = (int32_t)v;
    return RMQ_OK;
}

static int decode_request(struct ctx *c, const struct pairs *ps, struct trace_event *ev)
{
    const unsigned keys = KB(K_TS) | KB(K_EVENT) | KB(K_CONN) | KB(K_PEER) | KB(K_CODE) | KB(K_LANG) |
                          KB(K_VERSION) | KB(K_FLAG) | KB(K_EXT) | KB(K_BODY) | KB(K_BODY64);
    const char *lang = NULL, *b64 = NULL;
    const struct pair *code = find(ps, K_CODE), *ext = find(ps, K_EXT), *body = find(ps, K_BODY);
    if (check_keys(c, ps, "request", keys) != 0)
        return RMQ_EPROTO;
    if (!code)
        return bad(c, "missing \"code\"");
    if (opt_i32(c, ps, K_CODE, 0, &ev->code) != 0 || opt_str(c, ps, K_LANG, &lang) != 0 ||
        opt_i32(c, ps, K_VERSION, 0, &ev->cmd_version) != 0 || opt_i32(c, ps, K_FLAG, 0, &ev->flag) != 0 ||
        opt_str(c, ps, K_BODY64, &b64) != 0)
        return RMQ_EPROTO;
    ev->language = lang ? rmq_language_from_name(lang) : RMQ_LANG_JAVA;
    int rc = ext && *ext->val != 'n' ? each_member(c, ext, true, ext_member, NULL) : RMQ_OK;
    if (rc != 0)
        return rc;
    ev->ext = c->d->kv;
    ev->next = c->d->nkv;
    if (body && b64)
        return bad(c, "both \"body\" and \"bodyBase64\"");
    if (body && *body->val != 'n') {
        ev->body = body->val;
        ev->body_len = (size_t)(body->val_end - body->val);
    }
    return b64 ? decode_b64(c, b64, ev) : RMQ_OK;
}

static int decode_route(struct ctx *c, const struct pairs *ps, struct trace_event *ev)
{
    const struct pair *b = find(ps, K_BROKERS);
    if (check_keys(c, ps, "route", KB(K_TS) | KB(K_EVENT) | KB(K_TOPIC) | KB(K_BROKERS)) != 0 ||
        req_str(c, ps, K_TOPIC, &ev->topic) != 0)
        return RMQ_EPROTO;
    if (!ev->topic[0])
        return bad(c, "empty \"topic\"");
    if (!b)
        return bad(c, "missing \"brokers\" (null for a deleted topic)");
    if (*b->val == 'n') {
        ev->deleted = true;
        return RMQ_OK;
    }
    int rc = each_member(c, b, false, broker_elem, NULL);
    if (rc != 0)
        return rc;
    ev->brokers = c->d->brokers;
    ev->nbrokers = c->d->nbrokers;
    return RMQ_OK;
}

/* connect, close, notify: conn plus a few strings. */
static int decode_conn_event(struct ctx *c, const struct pairs *ps, struct trace_event *ev)
{
    const unsigned base = KB(K_TS) | KB(K_EVENT) | KB(K_CONN) | KB(K_PEER);
    int extra = ev->kind == TRACE_CONNECT ? K_BROKER : ev->kind == TRACE_CLOSE ? K_REASON : K_GROUP;
    if (check_keys(c, ps, trace_kind_name(ev->kind), base | KB(extra)) != 0)
        return RMQ_EPROTO;
    if (ev->kind == TRACE_CONNECT)
        return opt_str(c, ps, K_BROKER, &ev->broker);
    if (ev->kind == TRACE_CLOSE)
        return opt_str(c, ps, K_REASON, &ev->reason);
    if (req_str(c, ps, K_GROUP, &ev->group) != 0)
        return RMQ_EPROTO;
    return ev->group[0] ? RMQ_OK : bad(c, "empty \"group\"");
}

struct mq_seen {
    struct trace_mq q;
    unsigned seen;
};

static int mq_field(struct ctx *c, const struct pair *m, void *arg)
{
    struct mq_seen *ms = arg;
    static const char *const keys[] = {"topic", "brokerName", "queueId"};
    for (unsigned i = 0; i < 3; i++) {
        if (strcmp(m->key, keys[i]) != 0)
            continue;
        if (ms->seen & (1u << i))
            return bad(c, "duplicate \"%s\" in a queue", m->key);
        ms->seen |= 1u << i;
        if (i == 0)
            return get_str(c, m, &ms->q.topic);
        if (i == 1)
            return get_str(c, m, &ms->q.broker_name);
        int64_t v;
        if (get_int(c, m, 0, INT32_MAX, &v) != 0)
            return RMQ_EPROTO;
        ms->q.queue_id = (int32_t)v;
        return RMQ_OK;
    }
    return bad(c, "unknown key \"%s\" in a queue", m->key);
}

static int mq_elem(struct ctx *c, const struct pair *m, void *arg)
{
    (void)arg;
    struct trace_decoder *d = c->d;
    struct mq_seen ms = {{NULL, NULL, 0}, 0};
    int rc = each_member(c, m, true, mq_field, &ms);
    if (rc != 0)
        return rc;
    if (ms.seen != 7u)
        return bad(c, "a queue needs topic, brokerName and queueId");
    if (!ms.q.topic[0] || !ms.q.broker_name[0])
        return bad(c, "empty topic or brokerName in a queue");
    if (d->nmqs == TRACE_FMT_MAX_QUEUES)
        return bad(c, "more than 65536 queues in a holdings event");
    if (RMQ_GROW(d->mqs, d->mqs_cap, d->nmqs + 1, 16) != 0)
        return bad(c, "out of memory"), RMQ_ENOMEM;
    d->mqs[d->nmqs++] = ms.q;
    return RMQ_OK;
}

/* holdings: conn, group, clientId, asked, queues (an array, or null with an
 * optional reason). */
static int decode_holdings(struct ctx *c, const struct pairs *ps, struct trace_event *ev)
{
    const unsigned keys = KB(K_TS) | KB(K_EVENT) | KB(K_CONN) | KB(K_PEER) | KB(K_GROUP) | KB(K_CLIENT_ID) |
                          KB(K_ASKED) | KB(K_QUEUES) | KB(K_REASON);
    const struct pair *asked = find(ps, K_ASKED), *q = find(ps, K_QUEUES);
    if (check_keys(c, ps, "holdings", keys) != 0 || req_str(c, ps, K_GROUP, &ev->group) != 0 ||
        req_str(c, ps, K_CLIENT_ID, &ev->client_id) != 0 || opt_str(c, ps, K_REASON, &ev->reason) != 0)
        return RMQ_EPROTO;
    if (!ev->group[0])
        return bad(c, "empty \"group\"");
    if (!asked)
        return bad(c, "missing \"asked\"");
    if (get_int(c, asked, 0, INT64_MAX / 4, &ev->asked) != 0)
        return RMQ_EPROTO;
    if (!q)
        return bad(c, "missing \"queues\" (null when the client gave none)");
    if (*q->val == 'n')
        return RMQ_OK;
    int rc = each_member(c, q, false, mq_elem, NULL);
    if (rc != 0)
        return rc;
    ev->answered = true;
    ev->queues = c->d->mqs;
    ev->nqueues = c->d->nmqs;
    return RMQ_OK;
}

static int decode_event(struct ctx *c, const struct pairs *ps, struct trace_event *ev)
{
    const char *kind;
    const struct pair *ts = find(ps, K_TS), *hdr = find(ps, K_HDR);
    if (!ts)
        return bad(c, "missing \"ts\"");
    if (get_int(c, ts, 0, INT64_MAX / 4, &ev->ts) != 0)
        return RMQ_EPROTO;
    if (hdr) {
        /* A header may carry any other informational keys. */
        int64_t v;
        if (get_int(c, hdr, 0, 1000000, &v) != 0)
            return RMQ_EPROTO;
        if (v != TRACE_FMT_VERSION)
            return bad(c, "unsupported trace format version %" PRId64 " (this build reads %d)", v,
                       TRACE_FMT_VERSION);
        ev->kind = TRACE_HEADER;
        ev->version = (int)v;
        return RMQ_OK;
    }
    if (req_str(c, ps, K_EVENT, &kind) != 0)
        return RMQ_EPROTO;
    size_t k = 1;
    while (k <= TRACE_HOLDINGS && strcmp(trace_kind_name((enum trace_kind)k), kind) != 0)
        k++;
    if (k > TRACE_HOLDINGS)
        return bad(c, "unknown event \"%s\"", kind);
    ev->kind = (enum trace_kind)k;
    if (ev->kind == TRACE_ROUTE)
        return decode_route(c, ps, ev);
    const struct pair *conn = find(ps, K_CONN);
    if (!conn)
        return bad(c, "missing \"conn\"");
    if (get_u64(c, conn, &ev->conn) != 0 || opt_str(c, ps, K_PEER, &ev->peer) != 0)
        return RMQ_EPROTO;
    if (ev->kind == TRACE_HOLDINGS)
        return decode_holdings(c, ps, ev);
    return ev->kind == TRACE_REQUEST ? decode_request(c, ps, ev) : decode_conn_event(c, ps, ev);
}

#ifndef NDEBUG
/* The decoder's arrays have room for what they hold; a decoded event names
 * a kind of the table and carries its arrays with their counts (a
 * request's extFields are the decoder's or a cached line's). */
static int decode_sanity(const struct trace_decoder *d, const struct trace_event *ev)
{
    assert(d->nkv <= d->kv_cap && d->nbrokers <= d->brokers_cap && d->nmqs <= d->mqs_cap);
    assert(strcmp(trace_kind_name(ev->kind), "?") != 0);
    assert(ev->ext || ev->next == 0);
    assert(!ev->body_len || ev->body);
    assert(ev->brokers || ev->nbrokers == 0);
    assert(ev->queues || ev->nqueues == 0);
    for (size_t i = 0; i < ev->next; i++)
        assert(ev->ext[i].key && ev->ext[i].val);
    return 1;
}
#endif

int trace_decode_line(struct trace_decoder *d, const char *line, size_t len, size_t lineno,
                      struct trace_event *ev)
{
    d->error[0] = '\0';
    d->nkv = d->nbrokers = d->nmqs = 0;
    if (trace_line_hit(d, (const unsigned char *)line, len, ev)) {
        d->line_hits++;
        assert(ev->kind == TRACE_REQUEST && ev->tag != 0 &&
               decode_sanity(d, ev)); /* only requests are kept */
        return RMQ_OK;
    }
    memset(ev, 0, sizeof *ev);
    struct ctx c = {d, lineno, NULL};
    if (len > TRACE_FMT_MAX_LINE) {
        bad(&c, "%s", TRACE_FMT_LINE_LIMIT_TEXT);
        _Static_assert(TRACE_FMT_MAX_LINE == 50331648, "TRACE_FMT_LINE_LIMIT_TEXT names the limit");
        return RMQ_E2BIG;
    }
    buf_reset(&d->line);
    int rc = buf_append(&d->line, line, len);
    if (rc == 0)
        rc = buf_terminate(&d->line);
    if (rc != 0) {
        bad(&c, "out of memory");
        return RMQ_ENOMEM;
    }
    unsigned char *p = d->line.data + d->line.pos;
    struct scan s = {p, p + len, p, NULL, 0};
    c.base = p;
    struct pairs ps;
    if (scan_top(&s, &ps) != 0)
        return bad(&c, "column %zu: %s", s.col, s.err);
    rc = decode_event(&c, &ps, ev);
    assert(rc || decode_sanity(d, ev));
    if (rc != 0)
        memset(ev, 0, sizeof *ev);
    else if (ev->kind == TRACE_REQUEST && !find(&ps, K_BODY64) && !d->line_cache_off)
        trace_line_remember(d, (const unsigned char *)line, len, p, ev); /* base64 bodies live in d->body64 */
    return rc;
}
