/* route_requests.c — GET_ROUTEINFO_BY_TOPIC, the name-server request a consumer
 * needs (served on the same listener as the broker codes). Loop thread only. */
#include "route_requests.h"
#include "broker.h"
#include "cluster_info.h"
#include "conn.h"
#include "err.h"
#include "mem.h"
#include "reply.h"
#include "request_codes.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PROTOCOL: docs/protocol.md §3.4 — quoted brokerAddrs keys for version >= V4_9_4 (401) or
 * acceptStandardJsonOnly, fastjson's bare numbers otherwise. */
static bool wants_quoted_ids(const struct rmq_cmd *req)
{
    bool std_only = false;
    if (rmq_cmd_ext_get_bool(req, "acceptStandardJsonOnly", &std_only) == 0 && std_only)
        return true;
    return req->version >= 401;
}

/* The topic's definition, creating it when the daemon would: the retry
 * topic of a known group, or any topic while auto-create is on; with --compat, TBW102 as a broker
 * with autoCreateTopicEnable registers it (8 queues, perm 7: docs/protocol.md §12). */
static const struct topic *resolve_topic(struct broker *s, const char *name)
{
    const struct topic *tp = topics_get(&s->topics, name);
    if (tp)
        return tp;
    if (s->cfg->dialect.route_tbw102 && s->cfg->role == CONFIG_ROLE_BOTH && !strcmp(name, "TBW102")) {
        struct topic_broker b = {(char *)s->cfg->broker_name, 8, 8, TOPIC_PERM_RW | 1};
        return broker_put_topic(s, name, &b, 1) == 0 ? topics_get(&s->topics, name) : NULL;
    }
    bool retry = !strncmp(name, "%RETRY%", 7);
    if (retry && registry_group_known(&s->reg, name + 7))
        return broker_create_topic(s, name, 1);
    /* Cluster mode: topics are created on brokers only (docs/cluster.md). */
    if (s->cfg->auto_create_queues > 0 && s->cfg->role == CONFIG_ROLE_BOTH)
        return broker_create_topic(s, name, retry ? 1 : s->cfg->auto_create_queues);
    return NULL;
}

/* --compat broker-5: a 5.x BrokerData carries "enableActingMaster":false after "cluster"
 * (fastjson's sorted keys); inserted after every "cluster":"<cluster>" of body. */
static int add_acting_master(const struct broker *s, struct buf *body)
{
    char key[300];
    int n = snprintf(key, sizeof key, "\"cluster\":\"%s\"", s->cfg->cluster_name);
    if (n <= 0 || (size_t)n >= sizeof key)
        return RMQ_OK;
    struct buf out;
    buf_init(&out, buf_live(body) + 64);
    const char *p = (const char *)buf_head(body), *end = p + buf_live(body);
    int rc = RMQ_OK;
    while (rc == 0 && p < end) {
        const char *hit = memmem(p, (size_t)(end - p), key, (size_t)n);
        const char *stop = hit ? hit + n : end;
        rc = buf_append(&out, p, (size_t)(stop - p));
        if (rc == 0 && hit)
            rc = buf_append_str(&out, ",\"enableActingMaster\":false");
        p = stop;
    }
    if (rc == 0) {
        buf_free(body);
        *body = out;
    } else {
        buf_free(&out);
    }
    return rc;
}

void route_req_get_route(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *name;
    const char *given = rmq_cmd_ext_get(req, "topic");
    if (s->cfg->dialect.route_null_topic && (!given || !*given)) {
        /* The name server looks the null topic up and finds nothing (§12). */
        reply_code(s, c, req, RMQ_RESP_TOPIC_NOT_EXIST,
                   "No topic route info in name server for the topic: null");
        return;
    }
    if (reply_require_str(s, c, req, "topic", &name) != 0)
        return;
    const struct topic *tp = resolve_topic(s, name);
    assert(!tp || !strcmp(tp->name, name));
    if (!tp) {
        char remark[400];
        if ((int64_t)s->topics.map.count >= s->cfg->max_topics)
            snprintf(remark, sizeof remark, "No topic route info for %s: --max-topics %lld reached", name,
                     (long long)s->cfg->max_topics);
        else
            snprintf(remark, sizeof remark, "No topic route info in name server for the topic: %s", name);
        reply_code(s, c, req, RMQ_RESP_TOPIC_NOT_EXIST, remark);
        return;
    }
    struct buf body;
    buf_init(&body, 0);
    /* A created topic is a stored fact: the route goes out after its commit. */
    int rc = topics_route_encode(tp, s->cfg->cluster_name, s->advertise, wants_quoted_ids(req), &body);
    if (rc == 0 && s->cfg->dialect.route_acting_master)
        rc = add_acting_master(s, &body);
    reply_body(s, c, req, rc, &body, true);
}

/* GET_KV_CONFIG (101): rmqcoord keeps no KV config, so every item is "not found", as the name
 * server answers an unknown one (QUERY_NOT_FOUND; clients treat it as no value). */
void route_req_get_kv_config(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *ns = rmq_cmd_ext_get(req, "namespace"), *key = rmq_cmd_ext_get(req, "key");
    char remark[400];
    snprintf(remark, sizeof remark, "No config item, Namespace: %.150s Key: %.150s", ns ? ns : "null",
             key ? key : "null");
    reply_code(s, c, req, RMQ_RESP_QUERY_NOT_FOUND, remark);
}

static int cmp_broker_name(const void *a, const void *b)
{
    return strcmp(((const struct cluster_info_broker *)a)->broker_name,
                  ((const struct cluster_info_broker *)b)->broker_name);
}

/* Adds name to list unless it is there already. */
static void add_broker(struct cluster_info_broker *list, size_t *n, size_t cap, const char *name,
                       const struct broker *s)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(list[i].broker_name, name))
            return;
    if (*n < cap)
        list[(*n)++] = (struct cluster_info_broker){name, s->cfg->cluster_name, s->advertise};
}

/* GET_BROKER_CLUSTER_INFO (106) in the single-process role: every broker
 * name a topic uses, all at this process's advertised address. */
void route_req_cluster_info(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    size_t cap = 1, n = 0, b;
    for (struct hashmap_entry *e = hashmap_first(&s->topics.map, &b); e;
         e = hashmap_next(&s->topics.map, e, &b))
        cap += ((const struct topic *)e->val)->nbrokers;
    struct cluster_info_broker *list = rmq_malloc(cap * sizeof *list);
    struct buf body;
    buf_init(&body, 0);
    int rc = list ? 0 : RMQ_ENOMEM;
    if (rc == 0) {
        add_broker(list, &n, cap, s->cfg->broker_name, s);
        for (struct hashmap_entry *e = hashmap_first(&s->topics.map, &b); e;
             e = hashmap_next(&s->topics.map, e, &b)) {
            const struct topic *tp = e->val;
            for (size_t i = 0; i < tp->nbrokers; i++)
                add_broker(list, &n, cap, tp->brokers[i].broker_name, s);
        }
        qsort(list, n, sizeof *list, cmp_broker_name);
        rc = cluster_info_encode(list, n, &body);
    }
    if (rc == 0 && s->cfg->dialect.route_acting_master)
        rc = add_acting_master(s, &body);
    rmq_free(list);
    reply_body(s, c, req, rc, &body, false);
}
