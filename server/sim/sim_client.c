/* sim_client.c — one simulated push consumer: its subscriptions, the start
 * sequence (routes, then heartbeats, then the first rebalance, as
 * DefaultMQPushConsumer.start does), route refresh, and the work its timer
 * does when it fires (sim_timer.c arms it). Loop thread only. */
#include "sim_client.h"

#include "sim_balance.h"
#include "sim_conn.h"
#include "sim_heartbeat.h"
#include "sim_pull.h"
#include "sim_timer.h"

#include "clocks.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "request_codes.h"
#include "sim_rebalance.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define NEVER (INT64_MAX / 4)

static void on_timer(struct loop *l, int id, void *ctx);

static int add_topic(struct sim_client *c, const char *name, bool retry, int64_t version)
{
    assert(c->ntopics < SIM_MAX_TOPICS); /* sim_opts.c caps --topic below it, the retry topic included */
    struct sim_topic *t = &c->topics[c->ntopics];
    memset(t, 0, sizeof *t);
    t->client = c;
    t->retry = retry;
    t->sub_version = version;
    if (!(t->name = rmq_strdup(name)))
        return RMQ_ENOMEM;
    c->ntopics++;
    return RMQ_OK;
}

int sim_client_init(struct sim_client *c, struct sim *sim, struct sim_group *grp, const char *id)
{
    memset(c, 0, sizeof *c);
    c->sim = sim;
    c->grp = grp;
    c->due_heartbeat = c->due_route = c->due_persist = c->due_rebalance = NEVER;
    c->start_wall = rmq_wall_ms();
    if (!(c->id = rmq_strdup(id)))
        return RMQ_ENOMEM;
    const struct sim_config *cfg = sim->cfg;
    int rc = 0;
    for (size_t i = 0; !rc && i < cfg->ntopics; i++)
        rc = add_topic(c, cfg->topics[i], false,
                       c->start_wall); /* PROTOCOL (docs/protocol.md §3.1): subVersion = ms at subscribe */
    if (!rc && !cfg->broadcast) {
        /* PROTOCOL: docs/protocol.md §4.8 clustering consumers subscribe to %RETRY%<group> too. */
        char retry[300];
        snprintf(retry, sizeof retry, "%%RETRY%%%s", cfg->group);
        rc = add_topic(c, retry, true, c->start_wall);
    }
    if (!rc)
        /* Periodic with a far period: the slot stays ours; sim_client_arm
         * moves the next firing to the client's earliest deadline. */
        rc = loop_add_timer(sim->loop, NEVER, NEVER, on_timer, c, &c->timer_id);
    return rc;
}

void sim_client_fini(struct sim_client *c)
{
    for (size_t i = 0; i < c->ntopics; i++) {
        struct sim_topic *t = &c->topics[i];
        for (size_t j = 0; j < t->nheld; j++)
            sim_pq_unref(t->held[j]);
        rmq_free(t->held);
        rmq_free(t->mq_all);
        rmq_route_info_clear(&t->route);
        rmq_free(t->name);
    }
    rmq_free(c->id);
    memset(c, 0, sizeof *c);
}

/* Keeps a new route unless it is the same as the one held. */
static void apply_route(struct sim_topic *t, int status, const struct rmq_cmd *resp)
{
    if (status != 0 || resp->code != RMQ_RESP_SUCCESS || !resp->body_len) {
        /* PROTOCOL: docs/protocol.md §8.1 on 17 the Java client keeps what it had. */
        log_debug("sim: %s: no route for %s (%s)", t->client->id, t->name,
                  status         ? rmq_strerror(status)
                  : resp->remark ? resp->remark
                                 : "empty");
        return;
    }
    struct rmq_route_info r = {0};
    char err[160];
    if (rmq_route_parse(resp->body, resp->body_len, &r, err, sizeof err) != 0) {
        log_warn("sim: %s: bad route for %s: %s", t->client->id, t->name, err);
        return;
    }
    if (t->has_route && rmq_route_info_equal(&t->route, &r)) {
        rmq_route_info_clear(&r);
        return;
    }
    /* The subscribe set changes only with the route: sort it once here,
     * not in every rebalance of every client. */
    struct allocate_queue *mq = NULL;
    size_t nmq = 0;
    int rc = sim_rebalance_mq_all(&r, t->name, &mq, &nmq);
    if (rc) {
        log_warn("sim: %s: route for %s unusable: %s", t->client->id, t->name, rmq_strerror(rc));
        rmq_route_info_clear(&r);
        return;
    }
    assert(nmq == 0 || mq != NULL);
    rmq_free(t->mq_all);
    rmq_route_info_clear(&t->route);
    t->route = r;
    t->has_route = true;
    t->mq_all = mq; /* strings borrowed from t->route and t->name */
    t->nmq_all = nmq;
}

/* Sends one GET_ROUTEINFO_BY_TOPIC; 0 when a callback will follow. */
static int request_route(struct sim_topic *t, rclient_reply_cb cb)
{
    struct sim_client *c = t->client;
    struct rclient_conn *ns = sim_group_conn(c->grp, c->sim->cfg->namesrv);
    if (!ns)
        return RMQ_EINVAL;
    struct rmq_cmd cmd;
    sim_request_init(c->sim, &cmd, RMQ_REQ_GET_ROUTEINFO_BY_TOPIC);
    int rc = rmq_cmd_ext_set(&cmd, "topic", t->name);
    if (!rc)
        rc = rclient_conn_request(ns, &cmd, SIM_TIMEOUT_API_MS, SIM_REQ_SYNC, cb, t);
    rmq_cmd_clear(&cmd);
    return rc;
}

static void on_route_refresh(void *ctx, int status, const struct rmq_cmd *resp)
{
    apply_route(ctx, status, resp);
}

static void start_running(struct sim_client *c)
{
    const struct sim_config *cfg = c->sim->cfg;
    int64_t now = loop_now_ms(c->sim->loop);
    assert(!c->running && c->start_waiting == 0); /* starts once, when the start sequence is done */
    c->running = true;
    c->due_heartbeat = now + cfg->heartbeat_ms;
    c->due_route = now + cfg->route_ms;
    c->due_persist = now + cfg->persist_ms;
    sim_balance_start(c, SIM_REASON_START);
    sim_client_arm(c);
}

static void on_start_heartbeat(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_client *c = ctx;
    (void)resp;
    if (status == RMQ_ESTATE)
        return;
    if (--c->start_waiting == 0 && !c->sim->stopping)
        start_running(c);
}

static void on_start_route(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_topic *t = ctx;
    struct sim_client *c = t->client;
    if (status == RMQ_ESTATE)
        return;
    apply_route(t, status, resp);
    if (--c->start_waiting > 0 || c->sim->stopping)
        return;
    /* PROTOCOL: docs/protocol.md §10.1 start: routes, then heartbeat every broker, then rebalance. */
    c->start_waiting = sim_heartbeat_send(c, on_start_heartbeat);
    if (c->start_waiting == 0)
        start_running(c);
}

int sim_client_start(struct sim_client *c)
{
    c->start_waiting = 0;
    for (size_t i = 0; i < c->ntopics; i++)
        if (request_route(&c->topics[i], on_start_route) == 0)
            c->start_waiting++;
    if (c->start_waiting == 0) {
        log_warn("sim: %s: name server %s unreachable; retrying on the route timer", c->id,
                 c->sim->cfg->namesrv);
        start_running(c);
    }
    return RMQ_OK;
}

static void on_timer(struct loop *l, int id, void *ctx)
{
    (void)id;
    struct sim_client *c = ctx;
    const struct sim_config *cfg = c->sim->cfg;
    int64_t now = loop_now_ms(l);
    if (!c->running || c->sim->stopping)
        return;
    if (now >= c->due_heartbeat) {
        c->due_heartbeat = now + cfg->heartbeat_ms;
        sim_client_heartbeat_all(c);
    }
    if (now >= c->due_route) {
        c->due_route = now + cfg->route_ms;
        for (size_t i = 0; i < c->ntopics; i++)
            (void)request_route(&c->topics[i], on_route_refresh);
    }
    if (now >= c->due_persist) {
        c->due_persist = now + cfg->persist_ms;
        sim_pq_persist_all(c);
    }
    if (now >= c->due_rebalance)
        sim_balance_start(c, c->due_reason);
    sim_pq_run_due(c, now);
    sim_client_arm(c);
}
