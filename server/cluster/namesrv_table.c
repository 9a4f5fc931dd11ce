/* namesrv_table.c — the name-server side of cluster mode (--role namesrv):
 * brokers registered with REGISTER_BROKER, their topic configs, expiry, and
 * GET_ROUTEINFO_BY_TOPIC built from them (see cluster.h, docs/cluster.md).
 *
 * The table is small (one entry per broker name) and kept as an array
 * sorted by broker name, so routes list brokers in name order as the Java
 * name server's sorted output does. Loop thread only.
 */
#include "namesrv_table.h"

#include "broker.h"
#include "buf.h"
#include "cluster_info.h"
#include "config.h"
#include "conn.h"
#include "crc32.h"
#include "err.h"
#include "error_json.h"
#include "log.h"
#include "mem.h"
#include "reply.h"
#include "request_codes.h"
#include "rmq_body.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_MAX_BROKERS 256
#define NS_MAX_TOPICS_PER_BROKER 1000000 /* the flag's upper bound */
#define NS_BODY_BYTES_PER_TOPIC 512      /* a Java 5.x TopicConfig entry with a long name, generously */
#define NS_BODY_BYTES_BASE 65536         /* the wrapper, data version, filter servers, static mappings */
#define NS_ADMIN_PAGE_DEFAULT 100
#define NS_ADMIN_TOPICS_PREVIEW 16 /* topics listed per broker unless topicsOf names it */

struct ns_topic {
    char *name; /* owned */
    int read_queue_nums, write_queue_nums, perm, topic_sys_flag;
};

struct ns_broker {
    char *broker_name, *cluster, *addr, *ha_addr, *http_addr; /* owned; http_addr may be NULL */
    uint64_t conn_id;                                         /* the connection it registered over */
    bool signed_by_account;    /* the latest registration passed the --acl signature check */
    int64_t first_ms, last_ms; /* broker_now_ms of the first and the latest registration */
    int64_t timeout_ms;        /* heartbeatTimeoutMillis if sent, else --broker-expiry-ms */
    int64_t dv_counter, dv_timestamp;
    int64_t registrations;
    struct ns_topic *topics; /* owned, sorted by name */
    size_t ntopics;
};

struct namesrv_table {
    struct ns_broker *b; /* owned, sorted by broker_name */
    size_t n;
    size_t ntopics; /* sum of every entry's ntopics (--ns-max-topics) */
};

#ifndef NDEBUG
/* The table: at most NS_MAX_BROKERS entries, sorted by broker name with no
 * name twice (find's linear search stops at the first greater one), each
 * with its name, cluster and address, topics in bsearch order; the slots
 * past n are empty (install moves them up whole). O(brokers + topics). */
static int table_sanity(const struct namesrv_table *t)
{
    assert(t->n <= NS_MAX_BROKERS);
    size_t total = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ns_broker *b = &t->b[i];
        total += b->ntopics;
        assert(b->broker_name && b->cluster && b->addr);
        assert(i == 0 || strcmp(t->b[i - 1].broker_name, b->broker_name) < 0);
        assert(b->ntopics <= NS_MAX_TOPICS_PER_BROKER && (b->topics || b->ntopics == 0));
        for (size_t k = 0; k < b->ntopics; k++)
            assert(b->topics[k].name && (k == 0 || strcmp(b->topics[k - 1].name, b->topics[k].name) <= 0));
        assert(b->registrations >= 1);
    }
    assert(total == t->ntopics);
    for (size_t i = t->n; i < NS_MAX_BROKERS; i++)
        assert(!t->b[i].broker_name && !t->b[i].topics);
    return 1;
}
#endif

int namesrv_table_new(struct namesrv_table **out)
{
    struct namesrv_table *t = rmq_calloc(1, sizeof *t);
    if (!t)
        return RMQ_ENOMEM;
    t->b = rmq_calloc(NS_MAX_BROKERS, sizeof *t->b);
    if (!t->b) {
        rmq_free(t);
        return RMQ_ENOMEM;
    }
    *out = t;
    return 0;
}

static void topics_clear(struct ns_topic *tp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rmq_free(tp[i].name);
    rmq_free(tp);
}

static void broker_clear(struct ns_broker *b)
{
    rmq_free(b->broker_name);
    rmq_free(b->cluster);
    rmq_free(b->addr);
    rmq_free(b->ha_addr);
    rmq_free(b->http_addr);
    topics_clear(b->topics, b->ntopics);
    memset(b, 0, sizeof *b);
}

void namesrv_table_free(struct namesrv_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        broker_clear(&t->b[i]);
    rmq_free(t->b);
    rmq_free(t);
}

static void remove_at(struct namesrv_table *t, size_t i, const char *why)
{
    assert(i < t->n);
    log_info("namesrv: broker %s at %s removed (%s)", t->b[i].broker_name, t->b[i].addr, why);
    t->ntopics -= t->b[i].ntopics;
    broker_clear(&t->b[i]);
    memmove(&t->b[i], &t->b[i + 1], (t->n - i - 1) * sizeof *t->b);
    t->n--;
    memset(&t->b[t->n], 0, sizeof *t->b);
    assert(table_sanity(t));
}

static struct ns_broker *find(struct namesrv_table *t, const char *name, size_t *at)
{
    size_t i = 0;
    while (i < t->n && strcmp(t->b[i].broker_name, name) < 0)
        i++;
    *at = i;
    assert(i <= t->n);
    return i < t->n && !strcmp(t->b[i].broker_name, name) ? &t->b[i] : NULL;
}

static int cmp_topic(const void *a, const void *b)
{
    return strcmp(((const struct ns_topic *)a)->name, ((const struct ns_topic *)b)->name);
}

static int json_int_field(const json_t *o, const char *key, int def)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : def;
}

/* Parses topicConfigSerializeWrapper.topicConfigTable into a new sorted
 * array (*out, owned by the caller). 0, RMQ_EINVAL (bad shape, with why) or
 * RMQ_ENOMEM. An absent table is an empty one. */
static int parse_topics(const json_t *wrapper, size_t max, struct ns_topic **out, size_t *nout, int64_t *dvc,
                        int64_t *dvt, const char **why)
{
    const json_t *table = json_object_get(wrapper, "topicConfigTable");
    const json_t *dv = json_object_get(wrapper, "dataVersion");
    *dvc = json_integer_value(json_object_get(dv, "counter"));
    *dvt = json_integer_value(json_object_get(dv, "timestamp"));
    *out = NULL;
    *nout = 0;
    if (!table)
        return 0;
    if (!json_is_object(table)) {
        *why = "topicConfigTable must be an object";
        return RMQ_EINVAL;
    }
    if (json_object_size(table) > max)
        return RMQ_E2BIG;
    size_t cap = json_object_size(table), n = 0;
    struct ns_topic *tp = rmq_calloc(cap ? cap : 1, sizeof *tp);
    if (!tp)
        return RMQ_ENOMEM;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)table, key, v)
    {
        const char *name = json_string_value(json_object_get(v, "topicName"));
        if (!name)
            name = key;
        int r = json_int_field(v, "readQueueNums", -1), w = json_int_field(v, "writeQueueNums", -1);
        if (!json_is_object(v) || !topics_name_ok(name) || r < 0 || w < 0 || r > TOPIC_MAX_QUEUES ||
            w > TOPIC_MAX_QUEUES) {
            topics_clear(tp, n);
            *why = "a topicConfigTable entry needs topicName, readQueueNums and writeQueueNums (0..1024)";
            return RMQ_EINVAL;
        }
        tp[n] = (struct ns_topic){rmq_strdup(name), r, w, json_int_field(v, "perm", TOPIC_PERM_RW),
                                  json_int_field(v, "topicSysFlag", 0)};
        if (!tp[n++].name) {
            topics_clear(tp, n);
            return RMQ_ENOMEM;
        }
    }
    assert(n == cap); /* one entry per member of the table */
    qsort(tp, n, sizeof *tp, cmp_topic);
    *out = tp;
    *nout = n;
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s && *s ? rmq_strdup(s) : NULL;
}

/* Installs the registration into the table (a new entry, or the existing
 * one of that broker name replaced in place). Takes topics. */
static int install(struct broker *s, const struct rmq_cmd *req, const char *name, const char *addr,
                   const char *cluster, struct ns_topic *topics, size_t ntopics, uint64_t conn_id)
{
    struct namesrv_table *t = s->ns;
    size_t at;
    struct ns_broker *b = find(t, name, &at);
    bool fresh = !b;
    if (fresh && t->n == NS_MAX_BROKERS) {
        topics_clear(topics, ntopics);
        return RMQ_E2BIG;
    }
    struct ns_broker nb = {0};
    nb.broker_name = rmq_strdup(name);
    nb.cluster = rmq_strdup(cluster);
    nb.addr = rmq_strdup(addr);
    nb.ha_addr = dup_or_null(rmq_cmd_ext_get(req, "haServerAddr"));
    nb.http_addr = dup_or_null(rmq_cmd_ext_get(req, CLUSTER_EXT_HTTP));
    nb.topics = topics;
    nb.ntopics = ntopics;
    if (!nb.broker_name || !nb.cluster || !nb.addr) {
        broker_clear(&nb);
        return RMQ_ENOMEM;
    }
    int64_t now = broker_now_ms(s), hb = 0;
    nb.conn_id = conn_id;
    nb.last_ms = now;
    nb.first_ms = fresh || strcmp(b->addr, addr) ? now : b->first_ms;
    nb.registrations = fresh ? 1 : b->registrations + 1;
    /* PROTOCOL (docs/protocol.md §8.4): 5.x brokers may send heartbeatTimeoutMillis; otherwise the name
     * server's own expiry. */
    nb.timeout_ms = rmq_cmd_ext_get_i64(req, "heartbeatTimeoutMillis", &hb) == 0 && hb > 0
                        ? hb
                        : s->cfg->broker_expiry_ms;
    if (fresh) {
        assert(t->n < NS_MAX_BROKERS); /* the memmove has a free slot to move into */
        memmove(&t->b[at + 1], &t->b[at], (t->n - at) * sizeof *t->b);
        t->n++;
        log_info("namesrv: broker %s registered from %s (cluster %s, %zu topic(s))", name, addr, cluster,
                 ntopics);
    } else {
        if (strcmp(b->addr, addr))
            log_info("namesrv: broker %s moved from %s to %s", name, b->addr, addr);
        t->ntopics -= b->ntopics;
        broker_clear(b);
    }
    t->b[at] = nb;
    t->ntopics += ntopics;
    assert(table_sanity(t) && find(t, name, &at) == &t->b[at]);
    return 0;
}

/* Whether s is "HOST:PORT" as a broker advertises itself: a port 1..65535
 * and a host of letters, digits, '.', '-' and '_' (a name or IPv4), or
 * "[v6]" of hex digits, ':' and '.'; 1..255 bytes of host. Clients connect
 * to whatever the route names, so nothing else may enter it. */
static bool broker_addr_ok(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || colon - s > 255)
        return false;
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hl < 3 || s[hl - 1] != ']')
            return false;
        for (size_t i = 1; i + 1 < hl; i++)
            if (!strchr("0123456789abcdefABCDEF:.", s[i]))
                return false;
    } else {
        for (size_t i = 0; i < hl; i++)
            if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
                !(s[i] >= '0' && s[i] <= '9') && !strchr(".-_", s[i]))
                return false;
    }
    const char *p = colon + 1;
    long port = 0;
    for (; *p >= '0' && *p <= '9' && port <= 65535; p++)
        port = port * 10 + (*p - '0');
    return *p == 0 && p > colon + 1 && p - colon <= 6 && port >= 1 && port <= 65535;
}

/* Whether req carries a verified account signature: with --acl the gate
 * (requests/turn.c) answered NO_PERMISSION to anything not signed by a
 * known account before it got here. --admin-token alone does not check
 * these codes, so it signs nothing. */
static bool signed_by_account(const struct broker *s, const struct rmq_cmd *req)
{
    return s->cfg->acl_path[0] && rmq_cmd_ext_get(req, "AccessKey") && rmq_cmd_ext_get(req, "Signature");
}

/* The ownership rule (docs/cluster.md "Who may change a registration"):
 * an existing entry may be replaced or removed only over the connection
 * that registered it, or by a request signed by an account. false after
 * answering SYSTEM_ERROR. */
static bool may_change(struct broker *s, struct conn *c, struct rmq_cmd *req, const struct ns_broker *b,
                       const char *what)
{
    if (!b || b->conn_id == c->id || signed_by_account(s, req))
        return true;
    char remark[512];
    snprintf(remark, sizeof remark,
             "broker name %s is registered at %s by another connection; an unsigned %s may only come from "
             "that connection (sign it with an --acl account, or wait until that broker leaves)",
             b->broker_name, b->addr, what);
    log_warn("namesrv: %s of %s from %s refused: the name is held by another connection", what,
             b->broker_name, c->peer);
    reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
    return false;
}

/* Refuses a registration at a configured limit: SYSTEM_ERROR naming flag
 * and its value max, what says what crossed it. A limit hit in /metrics. */
static void refuse_limit(struct broker *s, struct conn *c, struct rmq_cmd *req, const char *name,
                         const char *what, const char *flag, int64_t max)
{
    char remark[400];
    s->stats.limit_hits++;
    snprintf(remark, sizeof remark, "broker %s: %s over %s (%lld)", name, what, flag, (long long)max);
    log_warn("namesrv: registration from %s refused: %s", c->peer, remark);
    reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
}

void namesrv_register(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *name, *addr, *cluster;
    if (reply_require_str(s, c, req, "brokerName", &name) != 0 ||
        reply_require_str(s, c, req, "brokerAddr", &addr) != 0 ||
        reply_require_str(s, c, req, "clusterName", &cluster) != 0)
        return;
    if (!broker_addr_ok(addr)) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR,
                   "brokerAddr must be HOST:PORT (a port 1..65535; a host of letters, digits, '.', '-', '_' "
                   "or a [v6] address)");
        return;
    }
    if (!*name || strlen(name) > 127 || !*cluster || strlen(cluster) > 127) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "brokerName and clusterName must be 1..127 bytes");
        return;
    }
    int64_t id = 0;
    if (rmq_cmd_ext_get(req, "brokerId") && reply_require_i64(s, c, req, "brokerId", &id) != 0)
        return;
    bool compressed = false;
    rmq_cmd_ext_get_bool(req, "compressed", &compressed);
    if (compressed) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR,
                   "compressed RegisterBrokerBody is not supported by rmqcoord; register uncompressed");
        return;
    }
    int64_t crc = 0;
    /* PROTOCOL (docs/protocol.md §8.4): a non-zero bodyCrc32 must match the body (the name server's checksum
     * step). */
    if (rmq_cmd_ext_get_i64(req, "bodyCrc32", &crc) == 0 && crc != 0 &&
        (int32_t)crc != crc32_rocketmq(req->body, req->body_len)) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "crc32 not match");
        return;
    }
    if (id != 0) {
        /* Only masters serve consumers in rmqcoord routes; a slave is acknowledged and ignored. */
        log_info("namesrv: broker %s id %lld at %s ignored (only id 0 is routed)", name, (long long)id, addr);
        reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
        return;
    }
    size_t at;
    struct ns_broker *old = find(s->ns, name, &at);
    if (!may_change(s, c, req, old, "REGISTER_BROKER"))
        return;
    /* Bounded before parsing: jansson's tree of a body is several times its size. */
    int64_t per_broker = s->cfg->ns_max_topics_per_broker;
    int64_t max_body = per_broker * NS_BODY_BYTES_PER_TOPIC + NS_BODY_BYTES_BASE;
    if ((int64_t)req->body_len > max_body) {
        refuse_limit(s, c, req, name, "RegisterBrokerBody bytes", "--ns-max-topics-per-broker x 512 + 64 KiB",
                     max_body);
        return;
    }
    /* Every topic entry is an object, so the count of '{' bounds the topics
     * from above; a 5.x entry has two (its attributes), the wrapper a few.
     * Counting is a memchr pass; parsing 65536 topics stalled the loop ~0.3 s. */
    size_t braces = 0;
    for (const uint8_t *p = req->body, *end = p + req->body_len; p && (p = memchr(p, '{', (size_t)(end - p)));
         p++)
        braces++;
    if ((int64_t)braces > 3 * per_broker + 64) {
        refuse_limit(s, c, req, name, "topic entries (JSON objects / 3)", "--ns-max-topics-per-broker",
                     per_broker);
        return;
    }
    struct ns_topic *topics = NULL;
    size_t ntopics = 0;
    int64_t dvc = 0, dvt = 0;
    const char *why = "RegisterBrokerBody is not a JSON object";
    int rc = 0;
    if (req->body_len > 0) {
        json_t *body = NULL;
        char err[160];
        rc = rmq_json_load_object(req->body, req->body_len, "RegisterBrokerBody", &body, err, sizeof err);
        const json_t *wrapper = json_object_get(body, "topicConfigSerializeWrapper");
        if (rc == 0)
            rc = parse_topics(wrapper, (size_t)per_broker, &topics, &ntopics, &dvc, &dvt, &why);
        if (rc == RMQ_E2BIG) {
            char what[64];
            snprintf(what, sizeof what, "%zu topics",
                     json_object_size(json_object_get(wrapper, "topicConfigTable")));
            refuse_limit(s, c, req, name, what, "--ns-max-topics-per-broker", per_broker);
            json_decref(body);
            return;
        }
        json_decref(body);
    }
    size_t others = s->ns->ntopics - (old ? old->ntopics : 0);
    if (rc == 0 && (int64_t)(others + ntopics) > s->cfg->ns_max_topics) {
        topics_clear(topics, ntopics);
        char what[96];
        snprintf(what, sizeof what, "%zu topics of all brokers with this registration", others + ntopics);
        refuse_limit(s, c, req, name, what, "--ns-max-topics", s->cfg->ns_max_topics);
        return;
    }
    if (rc == 0)
        rc = install(s, req, name, addr, cluster, topics, ntopics, c->id);
    if (rc != 0) {
        if (rc == RMQ_E2BIG)
            s->stats.limit_hits++;
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR,
                   rc == RMQ_ENOMEM  ? "out of memory"
                   : rc == RMQ_E2BIG ? "too many brokers (at most 256 per name server)"
                                     : why);
        return;
    }
    struct ns_broker *b = find(s->ns, name, &at);
    assert(b); /* install just put it there */
    b->dv_counter = dvc;
    b->dv_timestamp = dvt;
    b->signed_by_account = signed_by_account(s, req);
    /* Reply: RegisterBrokerResponseHeader (haServerAddr, masterAddr: unset for a master) and the
     * ORDER_TOPIC_CONFIG KV table as body (none here). */
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}

void namesrv_unregister(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *name, *addr;
    if (reply_require_str(s, c, req, "brokerName", &name) != 0 ||
        reply_require_str(s, c, req, "brokerAddr", &addr) != 0)
        return;
    size_t at;
    struct ns_broker *b = find(s->ns, name, &at);
    if (b && !strcmp(b->addr, addr)) {
        if (!may_change(s, c, req, b, "UNREGISTER_BROKER"))
            return;
        remove_at(s->ns, at, "UNREGISTER_BROKER");
    }
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}

static const struct ns_topic *broker_topic(const struct ns_broker *b, const char *topic)
{
    struct ns_topic key = {(char *)topic, 0, 0, 0, 0};
    return bsearch(&key, b->topics, b->ntopics, sizeof key, cmp_topic);
}

static bool wants_quoted(const struct rmq_cmd *req)
{
    bool std_only = false;
    if (rmq_cmd_ext_get_bool(req, "acceptStandardJsonOnly", &std_only) == 0 && std_only)
        return true;
    return req->version >= 401; /* PROTOCOL: docs/protocol.md §3.4 */
}

void namesrv_get_route(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    if (reply_require_str(s, c, req, "topic", &topic) != 0)
        return;
    struct namesrv_table *t = s->ns;
    struct rmq_route_broker *rb = rmq_calloc(t->n ? t->n : 1, sizeof *rb);
    struct rmq_route_queue *rq = rmq_calloc(t->n ? t->n : 1, sizeof *rq);
    size_t n = 0;
    for (size_t i = 0; rb && rq && i < t->n; i++) {
        const struct ns_topic *tp = broker_topic(&t->b[i], topic);
        if (!tp)
            continue;
        rb[n] = (struct rmq_route_broker){t->b[i].broker_name, t->b[i].cluster, t->b[i].addr};
        rq[n++] = (struct rmq_route_queue){t->b[i].broker_name, tp->read_queue_nums, tp->write_queue_nums,
                                           tp->perm, tp->topic_sys_flag};
    }
    assert(n <= t->n); /* at most one route entry per broker: rb and rq have t->n slots */
    if (rb && rq && n == 0) {
        /* PROTOCOL: docs/protocol.md §8.1 — no live broker has it: 17, and a pure name server never
         * auto-creates. */
        char remark[400];
        snprintf(remark, sizeof remark, "No topic route info in name server for the topic: %s", topic);
        reply_code(s, c, req, RMQ_RESP_TOPIC_NOT_EXIST, remark);
    } else {
        struct buf body;
        buf_init(&body, 0);
        int rc = rb && rq ? rmq_route_encode(rb, n, rq, n, wants_quoted(req), &body) : RMQ_ENOMEM;
        reply_body(s, c, req, rc, &body, false);
    }
    rmq_free(rb);
    rmq_free(rq);
}

void namesrv_expire(struct broker *s)
{
    int64_t now = broker_now_ms(s);
    for (size_t i = s->ns->n; i-- > 0;)
        if (now - s->ns->b[i].last_ms > s->ns->b[i].timeout_ms)
            remove_at(s->ns, i, "expired: no registration within the broker expiry");
}

void namesrv_forget_conn(struct broker *s, uint64_t conn_id)
{
    /* PROTOCOL (docs/protocol.md §8.4): the name server drops a broker when its channel closes
     * (onChannelDestroy). */
    for (size_t i = s->ns->n; i-- > 0;)
        if (s->ns->b[i].conn_id == conn_id)
            remove_at(s->ns, i, "its connection closed");
}

static json_t *topics_json(const struct ns_broker *b, size_t max)
{
    json_t *topics = json_array();
    for (size_t k = 0; topics && k < b->ntopics && k < max; k++)
        if (json_array_append_new(topics,
                                  json_pack("{s:s,s:i,s:i,s:i}", "topic", b->topics[k].name, "readQueueNums",
                                            b->topics[k].read_queue_nums, "writeQueueNums",
                                            b->topics[k].write_queue_nums, "perm", b->topics[k].perm)) != 0) {
            json_decref(topics);
            return NULL;
        }
    return topics;
}

/* One broker of the admin page: its first NS_ADMIN_TOPICS_PREVIEW topics
 * (the dashboard's column), all of them when all_topics. */
static json_t *broker_json(const struct ns_broker *b, int64_t now, bool all_topics)
{
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I},s:I,s:b}", "brokerName", b->broker_name, "brokerAddr",
        b->addr, "cluster", b->cluster, "firstRegisteredMs", (json_int_t)b->first_ms, "lastRegisteredMs",
        (json_int_t)b->last_ms, "ageMs", (json_int_t)(now - b->last_ms), "expiresInMs",
        (json_int_t)(b->timeout_ms - (now - b->last_ms)), "registrations", (json_int_t)b->registrations,
        "dataVersion", "counter", (json_int_t)b->dv_counter, "timestamp", (json_int_t)b->dv_timestamp,
        "topicCount", (json_int_t)b->ntopics, "signed", b->signed_by_account);
    size_t shown = all_topics || b->ntopics < NS_ADMIN_TOPICS_PREVIEW ? b->ntopics : NS_ADMIN_TOPICS_PREVIEW;
    if (o && b->http_addr && json_object_set_new(o, "httpAddr", json_string(b->http_addr)) != 0) {
        json_decref(o);
        return NULL;
    }
    json_t *topics = o ? topics_json(b, shown) : NULL;
    if (o && (!topics || json_object_set_new(o, "topics", topics) != 0 ||
              json_object_set_new(o, "topicsTruncated", json_boolean(shown < b->ntopics)) != 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *namesrv_admin_json(struct broker *s, const json_t *query, int *status)
{
    const char *after = json_string_value(json_object_get(query, "brokersAfter"));
    const char *lim = json_string_value(json_object_get(query, "limit"));
    const char *topics_of = json_string_value(json_object_get(query, "topicsOf"));
    long limit = NS_ADMIN_PAGE_DEFAULT;
    if (lim) {
        char *end;
        limit = strtol(lim, &end, 10);
        if (!*lim || *end || limit < 1 || limit > NS_MAX_BROKERS) {
            *status = 400;
            return rmq_error_json("bad parameter", "limit must be an integer 1..256");
        }
    }
    struct namesrv_table *t = s->ns;
    size_t i = 0;
    while (after && i < t->n && strcmp(t->b[i].broker_name, after) <= 0)
        i++;
    json_t *arr = json_array();
    int64_t now = broker_now_ms(s);
    size_t first = i;
    for (; arr && i < t->n && i - first < (size_t)limit; i++) {
        const struct ns_broker *b = &t->b[i];
        json_t *o = broker_json(b, now, topics_of && !strcmp(topics_of, b->broker_name));
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    json_t *out = arr ? json_pack("{s:o,s:I,s:I}", "brokers", arr, "brokerCount", (json_int_t)t->n,
                                  "topicCount", (json_int_t)t->ntopics)
                      : NULL;
    if (out && i < t->n && i > 0 &&
        json_object_set_new(out, "nextBrokersAfter", json_string(t->b[i - 1].broker_name)) != 0) {
        json_decref(out);
        return NULL;
    }
    *status = 200;
    return out;
}

void namesrv_cluster_info(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    struct namesrv_table *t = s->ns;
    struct cluster_info_broker *list = rmq_malloc((t->n ? t->n : 1) * sizeof *list);
    struct buf body;
    buf_init(&body, 0);
    int rc = list ? 0 : RMQ_ENOMEM;
    assert(table_sanity(t)); /* the answer names every live broker's cluster and address */
    for (size_t i = 0; rc == 0 && i < t->n; i++)
        list[i] = (struct cluster_info_broker){t->b[i].broker_name, t->b[i].cluster, t->b[i].addr};
    if (rc == 0)
        rc = cluster_info_encode(list, t->n, &body);
    rmq_free(list);
    reply_body(s, c, req, rc, &body, false);
}

void namesrv_topic_list(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    /* Every topic some live broker registered, once, sorted. */
    json_t *set = json_object();
    for (size_t i = 0; set && i < s->ns->n; i++)
        for (size_t k = 0; k < s->ns->b[i].ntopics; k++)
            (void)json_object_set_new(set, s->ns->b[i].topics[k].name, json_true());
    json_t *list = set ? json_array() : NULL;
    const char *name;
    json_t *v;
    json_object_foreach(set, name, v)
    {
        if (list)
            (void)json_array_append_new(list, json_string(name));
    }
    json_decref(set);
    json_t *body = list ? json_pack("{s:o}", "topicList", list) : NULL;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct buf out;
    buf_init(&out, 0);
    int rc = text ? buf_append_str(&out, text) : RMQ_ENOMEM;
    free(text);
    reply_body(s, c, req, rc, &out, false);
}

void namesrv_delete_topic(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    if (reply_require_str(s, c, req, "topic", &topic) != 0)
        return;
    const char *cluster = rmq_cmd_ext_get(req, "clusterName");
    size_t removed = 0;
    for (size_t i = 0; i < s->ns->n; i++) {
        struct ns_broker *b = &s->ns->b[i];
        if (!b->ntopics || (cluster && *cluster && strcmp(b->cluster, cluster) != 0))
            continue;
        struct ns_topic key = {(char *)topic, 0, 0, 0, 0};
        struct ns_topic *tp = bsearch(&key, b->topics, b->ntopics, sizeof key, cmp_topic);
        if (!tp)
            continue;
        size_t at = (size_t)(tp - b->topics);
        rmq_free(tp->name);
        memmove(&b->topics[at], &b->topics[at + 1], (b->ntopics - at - 1) * sizeof *tp);
        b->ntopics--;
        s->ns->ntopics--;
        removed++;
    }
    assert(table_sanity(s->ns));
    if (removed)
        log_info("namesrv: topic %s removed from %zu broker(s) by an admin request from %s", topic, removed,
                 c->peer);
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}
