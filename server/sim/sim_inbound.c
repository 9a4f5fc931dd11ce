/* sim_inbound.c — what the broker sends a simulated client unasked:
 * NOTIFY_CONSUMER_IDS_CHANGED (rebalance now, unless --no-notify),
 * GET_CONSUMER_RUNNING_INFO (answer for the named client), anything else
 * (REQUEST_CODE_NOT_SUPPORTED unless oneway); and the reconnect hook that
 * re-registers every client of a connection. Loop thread only. */
#include "sim_inbound.h"

#include "sim_heartbeat.h"
#include "sim_rinfo.h"
#include "sim_state.h"
#include "sim_timer.h"

#include "err.h"
#include "log.h"
#include "mem.h"
#include "request_codes.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

static void reply(const struct sim *sim, struct rclient_conn *conn, const struct rmq_cmd *req, int32_t code,
                  const char *remark, struct buf *body)
{
    struct rmq_cmd resp;
    int rc = rmq_cmd_init_response(&resp, req, code, remark);
    /* The response header speaks for the client: its version and language. */
    resp.version = sim->cfg->version;
    resp.language = sim->cfg->language;
    if (!rc && body)
        rc = rmq_cmd_set_body_copy(&resp, buf_head(body), buf_live(body));
    if (!rc)
        rc = rclient_conn_reply(conn, &resp);
    if (rc)
        log_warn("sim: reply to request %d not sent: %s", req->code, rmq_strerror(rc));
    rmq_cmd_clear(&resp);
}

/* Fills ri from client c; queues and subs are new arrays (rmq_free). */
static int running_info_of(const struct sim_client *c, struct sim_rinfo *ri, struct sim_rinfo_queue **qs,
                           struct sim_sub **subs)
{
    size_t n = 0;
    for (size_t i = 0; i < c->ntopics; i++)
        n += c->topics[i].nheld;
    *qs = rmq_calloc(n ? n : 1, sizeof **qs);
    *subs = rmq_calloc(c->ntopics ? c->ntopics : 1, sizeof **subs);
    if (!*qs || !*subs)
        return RMQ_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < c->ntopics; i++) {
        const struct sim_topic *t = &c->topics[i];
        (*subs)[i] = (struct sim_sub){t->name, t->sub_version};
        for (size_t j = 0; j < t->nheld; j++) {
            const struct sim_pq *pq = t->held[j];
            (*qs)[k++] = (struct sim_rinfo_queue){
                .mq = {t->name, pq->broker_name, pq->queue_id},
                .commit_offset = pq->offset < 0 ? 0 : pq->offset,
                .last_pull_ms = pq->last_pull_wall,
            };
        }
    }
    assert(k == n); /* every held queue of every topic */
    const struct sim_config *cfg = c->sim->cfg;
    *ri = (struct sim_rinfo){
        .group = cfg->group,
        .namesrv = cfg->namesrv,
        .broadcast = cfg->broadcast,
        .strategy = cfg->alloc.strategy,
        .version = cfg->version,
        .start_ms = c->start_wall,
        .queues = *qs,
        .nqueues = k,
        .subs = *subs,
        .nsubs = c->ntopics,
    };
    return RMQ_OK;
}

static struct sim_client *member_by_id(const struct sim_group *g, const char *id)
{
    for (size_t i = 0; id && i < g->nmembers; i++)
        if (!strcmp(g->members[i]->id, id))
            return g->members[i];
    return NULL;
}

/* PROTOCOL: docs/protocol.md §3.8 GET_CONSUMER_RUNNING_INFO, answered by the client the
 * clientId field names (a shared connection carries several). */
static void running_info(struct sim_group *g, struct rclient_conn *conn, const struct rmq_cmd *req)
{
    const char *group = rmq_cmd_ext_get(req, "consumerGroup");
    struct sim_client *c = member_by_id(g, rmq_cmd_ext_get(req, "clientId"));
    if (!c || !group || strcmp(group, g->sim->cfg->group) != 0) {
        char remark[400];
        snprintf(remark, sizeof remark, "The Consumer Group <%s> not exist in this consumer",
                 group ? group : "");
        reply(g->sim, conn, req, RMQ_RESP_SYSTEM_ERROR, remark, NULL);
        return;
    }
    struct sim_rinfo ri;
    struct sim_rinfo_queue *qs = NULL;
    struct sim_sub *subs = NULL;
    struct buf body;
    buf_init(&body, 0);
    int rc = running_info_of(c, &ri, &qs, &subs);
    if (!rc)
        rc = sim_running_info_encode(&ri, &body);
    if (rc)
        reply(g->sim, conn, req, RMQ_RESP_SYSTEM_ERROR, "out of memory", NULL);
    else
        reply(g->sim, conn, req, RMQ_RESP_SUCCESS, NULL, &body);
    g->sim->stats.running_info += rc == 0;
    buf_free(&body);
    rmq_free(qs);
    rmq_free(subs);
}

void sim_inbound_request(void *ctx, struct rclient_conn *conn, const struct rmq_cmd *req)
{
    struct sim_group *g = ctx;
    assert(g->nmembers > 0); /* sim_build gives every group at least one client */
    switch (req->code) {
    case RMQ_REQ_NOTIFY_CONSUMER_IDS_CHANGED:
        g->sim->stats.notifies++;
        log_debug("sim: NOTIFY on %s", rclient_conn_addr(conn));
        if (g->sim->cfg->no_notify)
            return;
        /* PROTOCOL: docs/protocol.md §10.1 Java wakes its RebalanceService: every consumer of
         * the process rebalances, whatever group the header names. */
        for (size_t i = 0; i < g->nmembers; i++)
            sim_client_wake(g->members[i], SIM_REASON_NOTIFY);
        return;
    case RMQ_REQ_GET_CONSUMER_RUNNING_INFO: running_info(g, conn, req); return;
    default:
        if (!rmq_cmd_is_oneway(req)) { /* PROTOCOL: docs/protocol.md §1.5 never answer a oneway */
            char remark[64];
            snprintf(remark, sizeof remark, " request type %d not supported", req->code);
            reply(g->sim, conn, req, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, remark, NULL);
        }
        return;
    }
}

void sim_inbound_up(void *ctx, struct rclient_conn *conn, bool reconnected)
{
    struct sim_group *g = ctx;
    if (!reconnected || g->sim->stopping)
        return;
    log_info("sim: reconnected to %s; heartbeating %zu clients", rclient_conn_addr(conn), g->nmembers);
    /* The daemon dropped these members with the old connection; a real
     * client re-registers on its next heartbeat, the sim does it now. */
    for (size_t i = 0; i < g->nmembers; i++)
        if (g->members[i]->running)
            sim_client_heartbeat_all(g->members[i]);
}
