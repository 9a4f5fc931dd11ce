/* consumer_requests.c — HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
 * CHECK_CLIENT_CONFIG and GET_CONSUMER_CONNECTION_LIST. Loop thread only. */
#include "consumer_requests.h"
#include "allocate.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "member_events.h"
#include "notify_policy.h"
#include "reply.h"
#include "request_codes.h"
#include "rmq_body.h"
#include "store.h"

#include <assert.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Replies SUCCESS with the heartbeat v2 fields (PROTOCOL: docs/protocol.md §3.2); a 4.9
 * broker's reply (--compat broker-4.9) has none, a 5.x broker's says IS_SUB_CHANGE=true to a
 * heartbeat without consumer data (--compat broker-5, §12). */
static void reply_heartbeat(struct broker *s, struct conn *c, const struct rmq_cmd *req, bool sub_change)
{
    if (!s->cfg->dialect.heartbeat_v2) {
        reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
        return;
    }
    if (s->cfg->dialect.heartbeat_sub_change_without_data && !sub_change) {
        const struct reg_channel *ch = registry_channel(&s->reg, c->id);
        sub_change = !ch || ch->ngroups == 0;
    }
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req, RMQ_RESP_SUCCESS, NULL) != 0 ||
        rmq_cmd_ext_set(&resp, "IS_SUPPORT_HEART_BEAT_V2", "true") != 0 ||
        rmq_cmd_ext_set(&resp, "IS_SUB_CHANGE", sub_change ? "true" : "false") != 0) {
        rmq_cmd_clear(&resp);
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    reply_send(s, c, req, &resp, false);
}

/* The client row only needs refreshing now and then (see HEARTBEAT_STORE_MS). */
static void refresh_client_row(struct broker *s, struct conn *c, const struct rmq_cmd *req)
{
    struct reg_channel *ch = registry_channel(&s->reg, c->id);
    if (!ch || !ch->client_id || (ch->client_stored_ms != 0 && ch->last_hb_ms - ch->client_stored_ms < 1000))
        return;
    /* The first row is a fact (first seen); later ones only refresh times. */
    store_soft_writes(s->store, ch->client_stored_ms != 0);
    ch->client_stored_ms = ch->last_hb_ms;
    if (store_put_client(s->store, ch->client_id, rmq_language_name(req->language), req->version,
                         ch->last_hb_ms) != 0)
        log_error("store: recording client %s failed: %s", ch->client_id, store_errmsg(s->store));
    store_soft_writes(s->store, false);
}

void consumer_req_heartbeat(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    s->stats.heartbeats++;
    struct registry_hb_result res;
    /* Steady state: a client repeats the same heartbeat every 30 s; skip the parse. */
    if (registry_heartbeat_repeat(&s->reg, c->id, req->language, req->version, req->body, req->body_len,
                                  broker_now_ms(s), &res)) {
        s->stats.heartbeats_repeated++;
        refresh_client_row(s, c, req);
        reply_heartbeat(s, c, req, res.sub_change);
        return;
    }
    struct rmq_heartbeat hb;
    memset(&hb, 0, sizeof hb);
    char err[200], remark[256];
    /* Bounded before parsing: a heartbeat is a few KB; a megabyte of JSON
     * is already several ms of the loop's time. */
    if ((int64_t)req->body_len > s->cfg->max_heartbeat_bytes) {
        s->stats.limit_hits++;
        snprintf(remark, sizeof remark, "heartbeat body of %zu bytes is over --max-heartbeat-bytes %lld",
                 req->body_len, (long long)s->cfg->max_heartbeat_bytes);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        return;
    }
    if (rmq_heartbeat_parse(req->body, req->body_len, &hb, err, sizeof err) != 0) {
        snprintf(remark, sizeof remark, "bad heartbeat body: %s", err);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        rmq_heartbeat_clear(&hb);
        return;
    }
    if (!s->cfg->dialect.heartbeat_v2) {
        /* A 4.9 broker knows no heartbeat v2: every heartbeat is a full one (§12). */
        hb.fingerprint = 0;
        hb.without_sub = false;
    }
    struct registry_limits lim = {s->cfg->max_client_id_bytes, s->cfg->max_groups_per_client,
                                  s->cfg->max_subscriptions, s->cfg->max_heartbeat_subscriptions};
    int bad = registry_heartbeat_check(&hb, &lim, remark, sizeof remark);
    size_t ngroups = bad ? 0 : registry_channel_groups_after(&s->reg, c->id, &hb);
    if (!bad && (int64_t)ngroups > s->cfg->max_groups_per_client) {
        bad = RMQ_E2BIG;
        snprintf(remark, sizeof remark,
                 "this connection would be in %zu consumer groups, more than --max-groups-per-client %lld",
                 ngroups, (long long)s->cfg->max_groups_per_client);
    }
    if (bad) {
        if (bad == RMQ_E2BIG)
            s->stats.limit_hits++;
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        rmq_heartbeat_clear(&hb);
        return;
    }
    int rc = registry_heartbeat(&s->reg, c->id, req->language, req->version, &hb, req->body, req->body_len,
                                broker_now_ms(s), &res);
    rmq_heartbeat_clear(&hb);
    if (rc != 0) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "heartbeat not applied: out of memory");
        return;
    }
    /* The limit checked above holds for what was applied. */
    assert(!registry_channel(&s->reg, c->id) ||
           (int64_t)registry_channel(&s->reg, c->id)->ngroups <= s->cfg->max_groups_per_client);
    refresh_client_row(s, c, req);
    reply_heartbeat(s, c, req, res.sub_change);
}

#ifndef NDEBUG
/* For asserts: whether channel id is a member of g. */
static bool in_group(const struct reg_group *g, uint64_t id)
{
    for (size_t i = 0; g && i < g->g.nmembers; i++)
        if (g->g.members[i].channel_id == id)
            return true;
    return false;
}
#endif

void consumer_req_unregister_client(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group = rmq_cmd_ext_get(req, "consumerGroup");
    if (group && *group) {
        registry_unregister(&s->reg, c->id, group);
        assert(!in_group(registry_group(&s->reg, group), c->id));
        /* --notify-on-noop-unregister: the broker NOTIFYs a live group even when the channel
         * was not in it (§12); rmqcoord by default only when a member left. */
        struct reg_group *g = registry_group(&s->reg, group);
        if (g && notify_policy_unregister_marks(&g->g, &s->cfg->dialect))
            member_events_mark_notify(s, g);
    }
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}

/* CHECK_CLIENT_CONFIG: rmqcoord filters nothing (it stores no messages), so every expression type
 * is accepted; with --sql92 refuse a non-TAG type is refused as by a broker without
 * enablePropertyFilter (§12). */
void consumer_req_check_client_config(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    if (s->cfg->refuse_sql92 && req->body_len > 0) {
        json_t *root = json_loadb((const char *)req->body, req->body_len, 0, NULL);
        const char *type =
            json_string_value(json_object_get(json_object_get(root, "subscriptionData"), "expressionType"));
        if (type && strcmp(type, "TAG")) {
            char remark[160];
            snprintf(remark, sizeof remark, "The broker does not support consumer to filter message by %.40s",
                     type);
            json_decref(root);
            reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
            return;
        }
        json_decref(root);
    }
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}

/* The live group the request's consumerGroup names, or NULL after replying
 * code with the remark before + group + after, as the broker words it. */
static const struct reg_group *live_group(struct broker *s, struct conn *c, const struct rmq_cmd *req,
                                          int32_t code, const char *before, const char *after)
{
    const char *group;
    if (reply_require_str(s, c, req, "consumerGroup", &group) != 0)
        return NULL;
    const struct reg_group *g = registry_group(&s->reg, group);
    if (g && g->g.nmembers > 0)
        return g;
    char remark[300];
    snprintf(remark, sizeof remark, "%s%s%s", before, group, after);
    reply_code(s, c, req, code, remark);
    return NULL;
}

void consumer_req_get_list(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const struct reg_group *g =
        live_group(s, c, req, RMQ_RESP_SYSTEM_ERROR, "no consumer for this group, ", "");
    if (!g)
        return;
    assert(g->g.nmembers > 0); /* live_group answered for an empty group */
    const char **ids = rmq_malloc(g->g.nmembers * sizeof *ids);
    struct buf body;
    buf_init(&body, 0);
    int rc = ids ? 0 : RMQ_ENOMEM;
    if (rc == 0) {
        /* PROTOCOL: docs/protocol.md §4.7 — one id per channel, duplicates kept. */
        for (size_t i = 0; i < g->g.nmembers; i++)
            ids[i] = g->g.members[i].client_id;
        rc = rmq_consumer_list_encode(ids, g->g.nmembers, &body);
    }
    rmq_free(ids);
    reply_body(s, c, req, rc, &body, false);
}

/* SUCCESS for requests with nothing to do. CHECK_CLIENT_CONFIG: rmqcoord filters nothing (it stores no
 * messages), so every expression type is accepted. CONSUMER_SEND_MSG_BACK: there is no message to put back,
 * and a success spares the client its fallback resend through SEND_MESSAGE_V2, which rmqcoord does not serve.
 */
void consumer_req_reply_success(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}

/* Appends {"messageQueueAssignments":[...]} of the queues qs, each in mode PULL. */
static int encode_assignments(const struct allocate_queue *qs, size_t n, struct buf *out)
{
    int rc = buf_append_str(out, "{\"messageQueueAssignments\":[");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = buf_append_str(out,
                            i ? ",{\"messageQueue\":{\"brokerName\":" : "{\"messageQueue\":{\"brokerName\":");
        if (rc == 0)
            rc = rmq_json_append_string(out, qs[i].broker_name);
        if (rc == 0)
            rc = buf_appendf(out, ",\"queueId\":%d,\"topic\":", (int)qs[i].queue_id);
        if (rc == 0)
            rc = rmq_json_append_string(out, qs[i].topic);
        if (rc == 0)
            rc = buf_append_str(out, "},\"mode\":\"PULL\"}");
    }
    return rc == 0 ? buf_append_str(out, "]}") : rc;
}

/* QUERY_ASSIGNMENT (400), --compat broker only: the server-side allocation of a 5.x broker
 * (QueryAssignmentProcessor, PULL mode): the topic's readable queues, allocated among the group's
 * live members by the client's strategy (broadcasting: every queue). rmqcoord's own answer is
 * REQUEST_CODE_NOT_SUPPORTED, on which a 5.x client rebalances itself (docs/protocol.md §12). */
void consumer_req_query_assignment(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    if (!s->cfg->dialect.query_assignment) {
        char remark[128];
        snprintf(remark, sizeof remark, "request code %d (QUERY_ASSIGNMENT) is not supported by rmqcoord",
                 req->code);
        reply_code(s, c, req, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, remark);
        return;
    }
    json_t *root = req->body_len ? json_loadb((const char *)req->body, req->body_len, 0, NULL) : NULL;
    const char *topic = json_string_value(json_object_get(root, "topic"));
    const char *group = json_string_value(json_object_get(root, "consumerGroup"));
    const char *cid = json_string_value(json_object_get(root, "clientId"));
    const char *strategy = json_string_value(json_object_get(root, "strategyName"));
    const char *model = json_string_value(json_object_get(root, "messageModel"));
    const struct topic *tp = topic ? topics_get(&s->topics, topic) : NULL;
    const struct reg_group *g = group ? registry_group(&s->reg, group) : NULL;
    if (!topic || !group || !cid) {
        json_decref(root);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR,
                   "bad QUERY_ASSIGNMENT body: topic, consumerGroup, clientId");
        return;
    }
    size_t nq = 0;
    for (size_t i = 0; tp && i < tp->nbrokers; i++)
        if (tp->brokers[i].perm & TOPIC_PERM_READ)
            nq += (size_t)tp->brokers[i].read_queue_nums;
    struct allocate_queue *qs = nq ? rmq_calloc(nq, sizeof *qs) : NULL;
    const char **cids = g && g->g.nmembers ? rmq_calloc(g->g.nmembers, sizeof *cids) : NULL;
    struct allocate_queue *mine = NULL;
    size_t nmine = 0;
    int rc = (nq && !qs) || (g && g->g.nmembers && !cids) ? RMQ_ENOMEM : 0;
    size_t k = 0;
    for (size_t i = 0; rc == 0 && tp && i < tp->nbrokers; i++)
        for (int q = 0; (tp->brokers[i].perm & TOPIC_PERM_READ) && q < tp->brokers[i].read_queue_nums; q++)
            qs[k++] = (struct allocate_queue){tp->name, tp->brokers[i].broker_name, q};
    assert(rc != 0 || k == nq); /* every readable queue counted above is listed */
    bool broadcast = model && !strcmp(model, "BROADCASTING");
    enum allocate_strategy st = ALLOCATE_AVG;
    struct buf body;
    buf_init(&body, 0);
    /* The 5.x broker knows AVG and AVG_BY_CIRCLE only; any other name allocates nothing. */
    bool known = strategy && allocate_strategy_parse(strategy, &st) == 0 &&
                 (st == ALLOCATE_AVG || st == ALLOCATE_AVG_BY_CIRCLE);
    if (rc == 0 && (!nq || (!broadcast && (!g || !g->g.nmembers || !known)))) {
        rc = buf_append_str(&body, "{}"); /* nothing to allocate: the broker's null set */
    } else if (rc == 0 && broadcast) {
        rc = encode_assignments(qs, nq, &body);
    } else if (rc == 0) {
        for (size_t i = 0; i < g->g.nmembers; i++)
            cids[i] = g->g.members[i].client_id;
        allocate_sort_queues(qs, nq);
        allocate_sort_consumers(cids, g->g.nmembers);
        struct allocate_options opt;
        allocate_options_init(&opt, st);
        struct allocate_input in = {qs, nq, cids, g->g.nmembers};
        rc = allocate_one(&opt, &in, cid, &mine, &nmine, NULL, 0);
        if (rc == 0)
            rc = encode_assignments(mine, nmine, &body);
        else if (rc != RMQ_ENOMEM)
            rc = buf_append_str(&body, "{}"); /* the strategy refused: no assignment */
    }
    reply_body(s, c, req, rc, &body, false);
    rmq_free(mine);
    rmq_free(qs);
    rmq_free(cids);
    json_decref(root);
}

/* Appends the ConsumerConnection body of g. */
static int encode_connections(const struct broker *s, const struct reg_group *g, struct buf *out)
{
    int rc = buf_append_str(out, "{\"connectionSet\":[");
    for (size_t i = 0; rc == 0 && i < g->g.nmembers; i++) {
        const struct mship_member *m = &g->g.members[i];
        const struct reg_channel *ch = registry_channel(&s->reg, m->channel_id);
        rc = buf_append_str(out, i ? ",{\"clientAddr\":" : "{\"clientAddr\":");
        if (rc == 0)
            rc = rmq_json_append_string(out, ch ? ch->peer : "");
        if (rc == 0)
            rc = buf_append_str(out, ",\"clientId\":");
        if (rc == 0)
            rc = rmq_json_append_string(out, m->client_id);
        if (rc == 0)
            rc = buf_appendf(out, ",\"language\":\"%s\",\"version\":%d}", rmq_language_name(m->language),
                             (int)m->version);
    }
    if (rc == 0)
        rc =
            buf_appendf(out,
                        "],\"consumeFromWhere\":\"%s\",\"consumeType\":\"%s\",\"messageModel\":\"%s\","
                        "\"subscriptionTable\":{",
                        rmq_consume_from_where_name(g->g.consume_from_where),
                        rmq_consume_type_name(g->g.consume_type), rmq_message_model_name(g->g.message_model));
    for (size_t i = 0; rc == 0 && i < g->g.nsubs; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (rc == 0)
            rc = rmq_json_append_string(out, g->g.subs[i].topic);
        if (rc == 0)
            rc = buf_append_u8(out, ':');
        if (rc == 0)
            rc = rmq_subscription_encode(&g->g.subs[i], out);
    }
    if (rc == 0)
        rc = buf_append_str(out, "}}");
    return rc;
}

void consumer_req_get_connection_list(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const struct reg_group *g =
        live_group(s, c, req, RMQ_RESP_CONSUMER_NOT_ONLINE, "the consumer group[", "] not online");
    if (!g)
        return;
    struct buf body;
    buf_init(&body, 0);
    reply_body(s, c, req, encode_connections(s, g, &body), &body, false);
}
