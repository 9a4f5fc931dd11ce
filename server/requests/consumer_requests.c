/* consumer_requests.c — HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
 * CHECK_CLIENT_CONFIG and GET_CONSUMER_CONNECTION_LIST. Loop thread only. */
#include "consumer_requests.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "reply.h"
#include "request_codes.h"
#include "rmq_body.h"
#include "store.h"

#include <stdio.h>
#include <string.h>

/* Replies SUCCESS with the heartbeat v2 fields (PROTOCOL: docs/protocol.md §3.2). */
static void reply_heartbeat(struct broker *s, struct conn *c, const struct rmq_cmd *req, bool sub_change)
{
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

void handle_heartbeat(struct broker *s, struct conn *c, struct rmq_cmd *req)
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
    if (rmq_heartbeat_parse(req->body, req->body_len, &hb, err, sizeof err) != 0) {
        snprintf(remark, sizeof remark, "bad heartbeat body: %s", err);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        rmq_heartbeat_clear(&hb);
        return;
    }
    struct registry_limits lim = {s->cfg->max_client_id_bytes, s->cfg->max_groups_per_client,
                                  s->cfg->max_subscriptions};
    if (registry_heartbeat_check(&hb, &lim, remark, sizeof remark) != 0) {
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
    refresh_client_row(s, c, req);
    reply_heartbeat(s, c, req, res.sub_change);
}

void handle_unregister_client(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group = rmq_cmd_ext_get(req, "consumerGroup");
    if (group && *group)
        registry_unregister(&s->reg, c->id, group);
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

void handle_get_consumer_list(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const struct reg_group *g =
        live_group(s, c, req, RMQ_RESP_SYSTEM_ERROR, "no consumer for this group, ", "");
    if (!g)
        return;
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
void handle_reply_success(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
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

void handle_get_consumer_connection_list(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const struct reg_group *g =
        live_group(s, c, req, RMQ_RESP_CONSUMER_NOT_ONLINE, "the consumer group[", "] not online");
    if (!g)
        return;
    struct buf body;
    buf_init(&body, 0);
    reply_body(s, c, req, encode_connections(s, g, &body), &body, false);
}
