/* sim_balance.c — a simulated client's rebalance rounds, modelled on the
 * Java RebalanceService + RebalanceImpl: topics are handled one after the
 * other (GET_CONSUMER_LIST_BY_GROUP, then the allocation), a wakeup during
 * a round runs one more round after it, and a changed result updates the
 * subscription version and heartbeats every broker (messageQueueChanged).
 * Loop thread only. */
#include "sim_balance.h"

#include "sim_body.h"
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

const char *sim_reason_name(enum sim_reason r)
{
    switch (r) {
    case SIM_REASON_START: return "start";
    case SIM_REASON_NOTIFY: return "notify";
    default: return "timer";
    }
}

/* Prints a holdings line for client c's topic t (--quiet: none). */
static void emit_holdings(struct sim_client *c, const struct sim_topic *t, enum sim_reason why)
{
    struct sim *sim = c->sim;
    if (sim->cfg->quiet)
        return;
    struct allocate_queue *qs = rmq_calloc(t->nheld ? t->nheld : 1, sizeof *qs);
    if (!qs)
        return;
    for (size_t i = 0; i < t->nheld; i++)
        qs[i] = (struct allocate_queue){t->name, t->held[i]->broker_name, t->held[i]->queue_id};
    buf_reset(&sim->line);
    if (sim_holdings_line_encode(&sim->line, rmq_wall_ms(), c->id, t->name, qs, t->nheld,
                                 sim_reason_name(why)) == 0 &&
        buf_append_u8(&sim->line, '\n') == 0) {
        fwrite(buf_head(&sim->line), 1, buf_live(&sim->line), stdout);
        fflush(stdout); /* tests time these lines: never hold one back */
    }
    rmq_free(qs);
}

/* The held queues as allocate_queue values (strings borrowed). */
static struct allocate_queue *held_queues(const struct sim_topic *t)
{
    struct allocate_queue *q = rmq_calloc(t->nheld ? t->nheld : 1, sizeof *q);
    for (size_t i = 0; q && i < t->nheld; i++)
        q[i] = (struct allocate_queue){t->name, t->held[i]->broker_name, t->held[i]->queue_id};
    return q;
}

static size_t count_dups(const struct sim_diff *d, size_t n)
{
    size_t dups = 0;
    for (size_t i = 0; i < n; i++)
        dups += d->old_of_new[i] == SIM_DIFF_DUP;
    return dups;
}

/* Replaces t's holdings with alloc[0..n): kept queues keep their state,
 * new ones start their offset lookup, dropped ones are persisted and
 * released. 0 or RMQ_ENOMEM (holdings unchanged). */
static int replace_holdings(struct sim_topic *t, const struct allocate_queue *alloc, size_t n,
                            const struct sim_diff *d)
{
    struct sim_pq **held = rmq_calloc(n ? n : 1, sizeof *held);
    bool *made = rmq_calloc(n ? n : 1, sizeof *made);
    size_t k = 0;
    for (size_t i = 0; held && made && i < n; i++) {
        size_t old = d->old_of_new[i];
        if (old == SIM_DIFF_DUP)
            continue;
        assert(old == SIM_DIFF_ADDED || old < t->nheld); /* a kept queue's index into the old holdings */
        made[k] = old == SIM_DIFF_ADDED;
        held[k] = made[k] ? sim_pq_new(t->client, t, alloc[i].broker_name, alloc[i].queue_id) : t->held[old];
        if (!held[k])
            break;
        k++;
    }
    if (!held || !made || k < n - count_dups(d, n)) {
        for (size_t i = 0; held && made && i < k; i++)
            if (made[i])
                sim_pq_unref(held[i]);
        rmq_free(held);
        rmq_free(made);
        return RMQ_ENOMEM;
    }
    assert(k == n - count_dups(d, n));
    for (size_t i = 0; i < d->nremoved; i++) {
        assert(d->removed[i] < t->nheld);
        sim_pq_drop(t->held[d->removed[i]]);
    }
    rmq_free(t->held);
    t->held = held;
    t->nheld = k;
    for (size_t i = 0; i < k; i++) {
        assert(held[i]->topic == t && held[i]->client == t->client && !held[i]->dropped);
        if (made[i])
            sim_pq_begin(held[i]);
    }
    rmq_free(made);
    return RMQ_OK;
}

/* Computes this client's queues for t; *out new. 0 or an error (logged). */
static int compute(struct sim_client *c, struct sim_topic *t, char **ids, size_t nids,
                   struct allocate_queue **out, size_t *nout)
{
    char err[200] = "";
    if (c->sim->cfg->broadcast) {
        /* PROTOCOL: docs/protocol.md §4.8 broadcasting takes every readable queue. */
        *out = rmq_calloc(t->nmq_all ? t->nmq_all : 1, sizeof **out);
        if (!*out)
            return RMQ_ENOMEM;
        if (t->nmq_all)
            memcpy(*out, t->mq_all, t->nmq_all * sizeof **out);
        *nout = t->nmq_all;
        return RMQ_OK;
    }
    int rc = sim_rebalance_allocate(&c->sim->cfg->alloc, t->name, t->mq_all, t->nmq_all,
                                    (const char *const *)ids, nids, c->id, out, nout, err, sizeof err);
    if (rc)
        /* PROTOCOL: docs/protocol.md §11.2 a strategy that throws leaves the held queues alone. */
        log_warn("sim: %s: allocation for %s failed: %s", c->id, t->name, err[0] ? err : rmq_strerror(rc));
    return rc;
}

/* Allocates t and applies the result; reports and heartbeats on change. */
static void apply(struct sim_client *c, struct sim_topic *t, char **ids, size_t nids)
{
    struct allocate_queue *alloc = NULL, *old = NULL;
    size_t n = 0;
    struct sim_diff d = {0};
    if (compute(c, t, ids, nids, &alloc, &n) != 0)
        return;
    old = held_queues(t);
    if (!old || sim_diff_compute(old, t->nheld, alloc, n, &d) != 0)
        goto out;
    bool changed = sim_diff_changed(&d);
    if ((changed || !t->allocated) && replace_holdings(t, alloc, n, &d) == 0) {
        t->allocated = true;
        emit_holdings(c, t, c->rb_reason);
        if (changed) {
            c->sim->stats.changes++;
            /* PROTOCOL: docs/protocol.md §10.1 messageQueueChanged: new subVersion, heartbeat all. */
            int64_t now = rmq_wall_ms();
            t->sub_version = now > t->sub_version ? now : t->sub_version + 1;
            sim_client_heartbeat_all(c);
        }
    }
out:
    sim_diff_clear(&d);
    rmq_free(old);
    rmq_free(alloc);
}

/* The address GET_CONSUMER_LIST_BY_GROUP goes to: the first broker of the
 * topic's route (PROTOCOL: docs/protocol.md §10.4 Java picks one at random; with one
 * coordinator address every pick is the same). */
static const char *list_addr(const struct sim_topic *t)
{
    for (size_t i = 0; i < t->route.nbrokers; i++) {
        const char *a = rmq_route_info_addr_of(&t->route, t->route.brokers[i].name);
        if (a)
            return a;
    }
    return NULL;
}

static void next_topic(struct sim_client *c);

static void on_list(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_client *c = ctx;
    if (status == RMQ_ESTATE || c->sim->stopping) {
        c->rb_running = false;
        return;
    }
    assert(c->rb_running && c->rb_cursor < c->ntopics); /* the round waits on this topic's list */
    struct sim_topic *t = &c->topics[c->rb_cursor];
    char **ids = NULL;
    size_t n = 0;
    char err[160];
    if (status == 0 && resp->code == RMQ_RESP_SUCCESS &&
        sim_consumer_list_parse(resp->body, resp->body_len, &ids, &n, err, sizeof err) == 0)
        apply(c, t, ids, n);
    else /* PROTOCOL: docs/protocol.md §10.5 no list: Java skips the topic and keeps its queues */
        log_debug("sim: %s: no consumer list for %s", c->id, t->name);
    sim_ids_free(ids, n);
    c->rb_cursor++;
    next_topic(c);
}

/* Asks for the consumer list of the topic under the cursor. 0 when a
 * callback follows. */
static int request_list(struct sim_client *c, const struct sim_topic *t)
{
    const char *addr = list_addr(t);
    struct rclient_conn *conn = addr ? sim_group_conn(c->grp, addr) : NULL;
    if (!conn)
        return RMQ_ENOTFOUND;
    struct rmq_cmd cmd;
    sim_request_init(c->sim, &cmd, RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP);
    int rc = rmq_cmd_ext_set(&cmd, "consumerGroup", c->sim->cfg->group);
    if (!rc)
        rc = rclient_conn_request(conn, &cmd, SIM_TIMEOUT_API_MS, SIM_REQ_SYNC, on_list, c);
    rmq_cmd_clear(&cmd);
    return rc;
}

static void next_topic(struct sim_client *c)
{
    assert(c->rb_running);
    while (c->rb_cursor < c->ntopics) {
        struct sim_topic *t = &c->topics[c->rb_cursor];
        if (t->has_route) {
            if (c->sim->cfg->broadcast)
                apply(c, t, NULL, 0);
            else if (request_list(c, t) == 0)
                return;
        }
        c->rb_cursor++;
    }
    assert(c->rb_cursor == c->ntopics);
    c->rb_running = false;
    if (c->rb_again) {
        c->rb_again = false;
        sim_client_wake(c, c->rb_again_reason);
    }
}

void sim_balance_start(struct sim_client *c, enum sim_reason why)
{
    if (!c->running || c->sim->stopping)
        return;
    log_debug("sim: %s: rebalance (%s)%s", c->id, sim_reason_name(why),
              c->rb_running ? ", after this one" : "");
    c->due_rebalance = loop_now_ms(c->sim->loop) + c->sim->cfg->rebalance_ms;
    c->due_reason = SIM_REASON_TIMER;
    if (c->rb_running) {
        /* Wakeups coalesce into one more round; a notify names it. */
        if (!c->rb_again || why == SIM_REASON_NOTIFY)
            c->rb_again_reason = why;
        c->rb_again = true;
        return;
    }
    c->rb_running = true;
    c->rb_reason = why;
    c->rb_cursor = 0;
    c->sim->stats.rebalances++;
    next_topic(c);
}
