/* sim_client.c — one simulated push consumer: its subscriptions, the start
 * sequence (routes, then heartbeats, then the first rebalance, as
 * DefaultMQPushConsumer.start does), route refresh, heartbeats and its
 * timers. Loop thread only. */
#include "sim.h"

#include "clocks.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "request_codes.h"
#include "sim_rebalance.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define NEVER (INT64_MAX / 4)

void sim_request_init(const struct sim *sim, struct rmq_cmd *cmd, int32_t code)
{
    rmq_cmd_init_request(cmd, code, 0, 0);
    cmd->version = sim->cfg->version;
    cmd->language = sim->cfg->language;
}

struct rclient_conn *sim_group_conn(struct sim_group *g, const char *addr)
{
    for (size_t i = 0; i < g->nconns; i++)
        if (!strcmp(rclient_conn_addr(g->conns[i]), addr))
            return g->conns[i];
    if (g->nconns == SIM_MAX_CONNS_PER_GROUP)
        return NULL;
    struct rclient_conn_handler h = {.on_request = sim_inbound_request, .on_up = sim_inbound_up, .ctx = g};
    struct rclient_conn *c;
    if (rclient_conn_new(g->sim->net, addr, &h, &g->next_opaque, &c) != 0) {
        log_warn("sim: cannot use broker address '%s'", addr);
        return NULL;
    }
    g->conns[g->nconns++] = c;
    return c;
}

static void on_timer(struct loop *l, int id, void *ctx);

static int add_topic(struct sim_client *c, const char *name, bool retry, int64_t version)
{
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
        sim_route_clear(&t->route);
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
    struct sim_route r = {0};
    char err[160];
    if (sim_route_parse(resp->body, resp->body_len, &r, err, sizeof err) != 0) {
        log_warn("sim: %s: bad route for %s: %s", t->client->id, t->name, err);
        return;
    }
    if (t->has_route && sim_route_equal(&t->route, &r)) {
        sim_route_clear(&r);
        return;
    }
    /* The subscribe set changes only with the route: sort it once here,
     * not in every rebalance of every client. */
    struct allocate_queue *mq = NULL;
    size_t nmq = 0;
    int rc = sim_rebalance_mq_all(&r, t->name, &mq, &nmq);
    if (rc) {
        log_warn("sim: %s: route for %s unusable: %s", t->client->id, t->name, rmq_strerror(rc));
        sim_route_clear(&r);
        return;
    }
    rmq_free(t->mq_all);
    sim_route_clear(&t->route);
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

/* Collects the distinct broker addresses of every route into addrs. */
static size_t broker_addrs(const struct sim_client *c, const char **addrs, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < c->ntopics; i++) {
        const struct sim_route *r = &c->topics[i].route;
        for (size_t b = 0; b < r->nbrokers; b++)
            for (size_t a = 0; a < r->brokers[b].naddrs; a++) {
                const char *addr = r->brokers[b].addrs[a];
                size_t k = 0;
                while (k < n && strcmp(addrs[k], addr) != 0)
                    k++;
                if (k == n && n < cap)
                    addrs[n++] = addr;
            }
    }
    return n;
}

bool sim_client_is_broker(const struct sim_client *c, const char *addr)
{
    const char *addrs[SIM_MAX_CONNS_PER_GROUP];
    size_t n = broker_addrs(c, addrs, SIM_MAX_CONNS_PER_GROUP);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(addrs[i], addr))
            return true;
    return false;
}

/* Sends HEART_BEAT to every broker; returns how many callbacks follow. */
static int heartbeat_to_all(struct sim_client *c, rclient_reply_cb cb)
{
    struct sim_sub subs[SIM_MAX_TOPICS];
    for (size_t i = 0; i < c->ntopics; i++)
        subs[i] = (struct sim_sub){c->topics[i].name, c->topics[i].sub_version};
    struct sim_heartbeat_spec hb = {
        .client_id = c->id,
        .group = c->sim->cfg->group,
        .broadcast = c->sim->cfg->broadcast,
        .v5_fields = c->sim->cfg->version >= 413, /* PROTOCOL: docs/protocol.md §3.1 5.x adds two fields */
        .subs = subs,
        .nsubs = c->ntopics,
    };
    struct buf body;
    buf_init(&body, 0);
    struct rmq_cmd cmd;
    sim_request_init(c->sim, &cmd, RMQ_REQ_HEART_BEAT);
    int sent = 0;
    if (sim_heartbeat_encode(&hb, &body) == 0 &&
        rmq_cmd_set_body_copy(&cmd, buf_head(&body), buf_live(&body)) == 0) {
        const char *addrs[SIM_MAX_CONNS_PER_GROUP];
        size_t n = broker_addrs(c, addrs, SIM_MAX_CONNS_PER_GROUP);
        for (size_t i = 0; i < n; i++) {
            struct rclient_conn *conn = sim_group_conn(c->grp, addrs[i]);
            if (conn && rclient_conn_request(conn, &cmd, SIM_TIMEOUT_API_MS, SIM_REQ_SYNC, cb, c) == 0)
                sent++;
        }
    }
    c->sim->stats.heartbeats += (uint64_t)sent;
    rmq_cmd_clear(&cmd);
    buf_free(&body);
    return sent;
}

static void on_heartbeat(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_client *c = ctx;
    if (status == 0 && resp->code != RMQ_RESP_SUCCESS)
        log_warn("sim: %s: heartbeat refused: %d %s", c->id, resp->code, resp->remark ? resp->remark : "");
}

void sim_client_heartbeat_all(struct sim_client *c)
{
    if (!c->sim->stopping)
        (void)heartbeat_to_all(c, on_heartbeat);
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
    c->start_waiting = heartbeat_to_all(c, on_start_heartbeat);
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

void sim_client_wake(struct sim_client *c, enum sim_reason why)
{
    if (c->sim->stopping)
        return;
    if (!c->running) {
        /* Java's RebalanceService remembers a wakeup that comes before the
         * first round (the daemon may NOTIFY before the heartbeat reply):
         * one more round follows the start round. */
        c->rb_again = true;
        c->rb_again_reason = why;
        return;
    }
    c->due_rebalance = loop_now_ms(c->sim->loop);
    c->due_reason = why;
    sim_client_arm(c);
}

void sim_client_arm(struct sim_client *c)
{
    int64_t next = NEVER;
    if (c->running && !c->sim->stopping) {
        int64_t due[] = {c->due_heartbeat, c->due_route, c->due_persist, c->due_rebalance};
        for (size_t i = 0; i < sizeof due / sizeof due[0]; i++)
            next = due[i] < next ? due[i] : next;
        for (size_t i = 0; i < c->ntopics; i++)
            for (size_t j = 0; j < c->topics[i].nheld; j++) {
                int64_t at = c->topics[i].held[j]->retry_at;
                next = at && at < next ? at : next;
            }
    }
    loop_timer_set(c->sim->loop, c->timer_id, next);
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
