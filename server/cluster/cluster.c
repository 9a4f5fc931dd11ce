/* cluster.c — role glue for cluster mode (see cluster.h): which requests a
 * role answers itself, the name server's expiry timer, GET /api/cluster's
 * loop side, and the body checksum. Loop thread only. */
#include "cluster.h"

#include "broker.h"
#include "broker_registration.h"
#include "config.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "namesrv_table.h"
#include "reply.h"
#include "request_codes.h"
#include "rmq_body.h"

#include <stdio.h>
#include <string.h>

static const char *role_name(int role)
{
    return role == CONFIG_ROLE_NAMESRV ? "namesrv" : role == CONFIG_ROLE_BROKER ? "broker" : "both";
}

static void expiry_tick(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    namesrv_expire(ctx);
}

int cluster_start(struct broker *s)
{
    if (s->cfg->role == CONFIG_ROLE_BROKER)
        return broker_reg_start(s);
    if (s->cfg->role != CONFIG_ROLE_NAMESRV)
        return RMQ_OK;
    int rc = namesrv_table_new(&s->ns);
    if (rc != 0)
        return rc;
    /* Scan often enough that a broker leaves within a quarter of the expiry of its deadline. */
    int64_t period = s->cfg->broker_expiry_ms / 4;
    if (period > 1000)
        period = 1000;
    if (period < 20)
        period = 20;
    return loop_add_timer(s->loop, period, period, expiry_tick, s, NULL);
}

void cluster_stop(struct broker *s)
{
    broker_reg_stop(s);
    namesrv_table_free(s->ns);
    s->ns = NULL;
}

/* Broker-side codes a pure name server refuses; everything a consumer or
 * admin tool sends to a broker. */
static bool name_server_code(int32_t code)
{
    switch (code) {
    case RMQ_REQ_REGISTER_BROKER:
    case RMQ_REQ_UNREGISTER_BROKER:
    case RMQ_REQ_GET_ROUTEINFO_BY_TOPIC:
    case RMQ_REQ_GET_BROKER_CLUSTER_INFO:
    case RMQ_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
    case RMQ_REQ_DELETE_TOPIC_IN_NAMESRV:
    case RMQ_REQ_DELETE_KV_CONFIG: /* answered 0 by the common handler: no KV store */
    case RMQ_REQ_GET_KV_CONFIG: return true;
    default: return false;
    }
}

bool cluster_dispatch(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    int role = s->cfg->role;
    if (role == CONFIG_ROLE_BOTH)
        return false;
    bool reg = req->code == RMQ_REQ_REGISTER_BROKER || req->code == RMQ_REQ_UNREGISTER_BROKER;
    char remark[160];
    if (role == CONFIG_ROLE_BROKER) {
        if (!reg)
            return false;
        snprintf(remark, sizeof remark,
                 "request code %d is for a name server; this rmqcoord runs --role broker", req->code);
        reply_code(s, c, req, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, remark);
        return true;
    }
    switch (req->code) {
    case RMQ_REQ_REGISTER_BROKER: namesrv_register(s, c, req); return true;
    case RMQ_REQ_UNREGISTER_BROKER: namesrv_unregister(s, c, req); return true;
    case RMQ_REQ_GET_ROUTEINFO_BY_TOPIC: namesrv_get_route(s, c, req); return true;
    case RMQ_REQ_GET_BROKER_CLUSTER_INFO: namesrv_cluster_info(s, c, req); return true;
    case RMQ_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER: namesrv_topic_list(s, c, req); return true;
    case RMQ_REQ_DELETE_TOPIC_IN_NAMESRV: namesrv_delete_topic(s, c, req); return true;
    default: break;
    }
    if (name_server_code(req->code))
        return false;
    /* --compat broker-4.9: a 4.9 name server sends no reply at all to a code it does not
     * serve (docs/protocol.md §12). */
    if (s->cfg->dialect.namesrv_silent_on_broker_code)
        return true;
    /* PROTOCOL (docs/protocol.md §2.3): a broker request sent to a name server gets
     * REQUEST_CODE_NOT_SUPPORTED. */
    snprintf(remark, sizeof remark, "request code %d (%s) is for a broker; this rmqcoord runs --role namesrv",
             req->code, rmq_request_name(req->code));
    reply_code(s, c, req, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, remark);
    return true;
}

void cluster_conn_closed(struct broker *s, const struct conn *c)
{
    if (s->ns)
        namesrv_forget_conn(s, c->id);
}

void cluster_before_sleep(struct broker *s)
{
    broker_reg_before_sleep(s);
}

json_t *cluster_admin_json(struct broker *s, const json_t *query, int *status)
{
    const char *group = json_string_value(json_object_get(query, "group"));
    json_t *o = json_pack("{s:s,s:s,s:s}", "role", role_name(s->cfg->role), "cluster", s->cfg->cluster_name,
                          "advertise", s->advertise);
    if (!o)
        return NULL;
    *status = 200;
    if (s->ns) {
        json_t *b = namesrv_admin_json(s, query, status);
        if (b && *status != 200) {
            json_decref(o);
            return b;
        }
        if (!b || json_object_update(o, b) != 0) {
            json_decref(b);
            json_decref(o);
            return NULL;
        }
        json_decref(b);
    } else if (s->cfg->role == CONFIG_ROLE_BROKER) {
        json_t *r = broker_reg_admin_json(s);
        if (!r || json_object_update(o, r) != 0) {
            json_decref(r);
            json_decref(o);
            return NULL;
        }
        json_decref(r);
    } else {
        /* One process is the whole cluster: it is its own only broker. */
        json_object_set_new(o, "brokerName", json_string(s->cfg->broker_name));
    }
    if (group && *group)
        json_object_set_new(o, "group", json_string(group));
    return o;
}
