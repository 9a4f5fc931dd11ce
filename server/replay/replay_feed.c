/* replay_feed.c — trace events into the replay engine (see replay_feed.h):
 * connections, HEART_BEAT / UNREGISTER_CLIENT through the daemon's registry,
 * closes, recorded NOTIFYs, routes, daemon restarts (a header line in the
 * middle of an appended trace), and the virtual clock that runs client
 * actions and expiry scans between them. One thread; no I/O.
 */
#include "replay_feed.h"
#include "err.h"
#include "mem.h"
#include "notify_policy.h"
#include "replay_infer.h"
#include "replay_out.h"
#include "replay_own.h"
#include "replay_report.h"
#include "replay_state.h"
#include "replay_truth.h"
#include "replay_views.h"
#include "request_codes.h"
#include "topics.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* As check_groups in server/requests/consumer_requests.c: the daemon refuses the whole heartbeat. */
/* The daemon's own acceptance rule, at its default limits. */
static bool heartbeat_acceptable(const struct rmq_heartbeat *hb)
{
    static const struct registry_limits lim = REGISTRY_LIMITS_DEFAULT;
    char why[160];
    return registry_heartbeat_check(hb, &lim, why, sizeof why) == 0;
}

static struct rp_conn *open_conn(struct replay *rp, uint64_t id, const char *broker)
{
    assert(!hashmap_get(&rp->conns, &id, sizeof id)); /* ids are opened once; callers look first */
    struct rp_view *v = rp_get_view(rp, broker ? broker : "");
    struct rp_conn *c = v ? rmq_calloc(1, sizeof *c) : NULL;
    if (!c)
        return NULL;
    c->id = id;
    c->view = v;
    c->open = true;
    c->deaf = rp->opt.notify_source == REPLAY_NOTIFY_AUTO && rp->any_recorded_notify &&
              !hashmap_get(&rp->notified, &id, sizeof id);
    if (registry_channel_open(&v->reg, id, NULL, "", rp->now) != 0 ||
        hashmap_put(&rp->conns, &id, sizeof id, c, NULL) != 0) {
        registry_channel_close(&v->reg, id);
        rmq_free(c);
        return NULL;
    }
    return c;
}

static void drop_hb_cache(struct rp_conn *c)
{
    rmq_heartbeat_clear(&c->hb);
    memset(&c->hb, 0, sizeof c->hb);
    rmq_free(c->last_body);
    c->last_body = NULL;
    c->last_len = 0;
    c->last_tag = 0;
    c->hb_cached = c->hb_valid = false;
}

static void close_conn(struct replay *rp, struct rp_conn *c)
{
    if (!c->open)
        return;
    c->open = false;
    registry_channel_close(&c->view->reg, c->id);
    drop_hb_cache(c);
    (void)rp;
}

static int on_connect(struct replay *rp, const struct trace_event *ev)
{
    struct rp_conn *c = rp_find_conn(rp, ev->conn);
    rp->st.connects++;
    if (c) {
        rp->st.duplicate_connects++; /* ids are unique per daemon run; keep the first */
        return RMQ_OK;
    }
    return open_conn(rp, ev->conn, ev->broker) ? RMQ_OK : RMQ_ENOMEM;
}

/* Parses the body unless it is byte-identical to the connection's previous
 * heartbeat, whose parse is reused: same bytes, same parse. A line with the
 * tag of one that carried those bytes carries them too (trace_fmt.h), so
 * the compare is skipped then. */
static int parse_heartbeat(struct rp_conn *c, const struct trace_event *ev)
{
    if (c->hb_cached && ev->tag && ev->tag == c->last_tag)
        return RMQ_OK;
    if (c->hb_cached && c->last_len == ev->body_len &&
        (!ev->body_len || !memcmp(c->last_body, ev->body, ev->body_len))) {
        c->last_tag = ev->tag;
        return RMQ_OK;
    }
    c->parse_seq++;
    drop_hb_cache(c);
    if (ev->body_len) {
        c->last_body = rmq_malloc(ev->body_len);
        if (!c->last_body)
            return RMQ_ENOMEM;
        memcpy(c->last_body, ev->body, ev->body_len);
    }
    c->last_len = ev->body_len;
    c->last_tag = ev->tag;
    char err[200];
    int rc = rmq_heartbeat_parse(ev->body, ev->body_len, &c->hb, err, sizeof err);
    if (rc == RMQ_ENOMEM) {
        drop_hb_cache(c);
        return rc;
    }
    c->hb_valid = rc == 0 && heartbeat_acceptable(&c->hb);
    c->hb_cached = true;
    return RMQ_OK;
}

/* rp_find_client(rp, c->id, group), looking first among c->clients (a
 * handful): an alive client is there from its creation, which put it in
 * rp->clients first, until it leaves, and no other client of its (conn,
 * group) can be created meanwhile (that takes a join, and it has not left),
 * so the hash entry is the same client. */
static struct rp_client *conn_client(struct replay *rp, const struct rp_conn *c, const char *group)
{
    for (size_t i = 0; i < c->nclients; i++)
        if (c->clients[i]->alive && !strcmp(c->clients[i]->group, group))
            return c->clients[i];
    return rp_find_client(rp, c->id, group);
}

static int on_heartbeat(struct replay *rp, struct rp_conn *c, const struct trace_event *ev)
{
    assert(c->open);
    rp->st.heartbeats++;
    int rc = parse_heartbeat(c, ev);
    if (rc != 0)
        return rc;
    if (!c->hb_valid) {
        rp->st.heartbeats_rejected++;
        return RMQ_OK;
    }
    struct registry_hb_result res;
    const uint8_t *raw = (const uint8_t *)ev->body;
    /* The daemon's steady-state shortcut, so replay pays for a parse only when the body changes. */
    if (!registry_heartbeat_repeat(&c->view->reg, c->id, ev->language, ev->cmd_version, raw, ev->body_len,
                                   rp->now, &res)) {
        rc = registry_heartbeat(&c->view->reg, c->id, ev->language, ev->cmd_version, &c->hb, raw,
                                ev->body_len, rp->now, &res);
        if (rc != 0)
            return rc;
    }
    bool full = !(c->hb.fingerprint != 0 && c->hb.without_sub);
    for (size_t i = 0; i < c->hb.nconsumers; i++) {
        const struct rmq_consumer_data *cd = &c->hb.consumers[i];
        struct rp_client *cl = conn_client(rp, c, cd->group);
        if (!cl)
            continue;
        assert(cl->conn == c->id && cl->alive);
        rp_heartbeat_seen(rp, cl);
        if (full && cl->topics_seq != c->parse_seq) { /* same parse, same topics: skip the sort */
            if ((rc = rp_client_set_topics(rp, cl, cd)) != 0)
                return rc;
            cl->topics_seq = c->parse_seq;
        }
    }
    return RMQ_OK;
}

static int on_request(struct replay *rp, const struct trace_event *ev)
{
    rp->st.requests++;
    struct rp_conn *c = rp_find_conn(rp, ev->conn);
    if (!c) {
        rp->st.implicit_connects++; /* a hand-written trace may skip connect lines */
        if (!(c = open_conn(rp, ev->conn, NULL)))
            return RMQ_ENOMEM;
    }
    if (!c->open) {
        rp->st.ignored_closed_conn++;
        return RMQ_OK;
    }
    if (ev->code == RMQ_REQ_HEART_BEAT)
        return on_heartbeat(rp, c, ev);
    if (ev->code == RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP) {
        rp->st.consumer_list_queries++; /* read by the pre-pass (replay_infer.c); no membership change */
        return RMQ_OK;
    }
    if (ev->code != RMQ_REQ_UNREGISTER_CLIENT) {
        rp->st.other_requests++;
        return RMQ_OK;
    }
    rp->st.unregisters++;
    /* As consumer_req_unregister_client: the consumerGroup extField names the group. */
    const char *group = NULL;
    for (size_t i = 0; i < ev->next; i++)
        if (!strcmp(ev->ext[i].key, "consumerGroup"))
            group = ev->ext[i].val; /* the last one wins, as rmq_cmd_ext_set does */
    if (group && *group) {
        registry_unregister(&c->view->reg, c->id, group);
        /* The dialect may notify the group besides (--notify-on-noop-unregister), as the daemon does. */
        struct reg_group *g = registry_group(&c->view->reg, group);
        if (g && notify_policy_unregister_marks(&g->g, &rp->opt.dialect))
            registry_mark_notify(&c->view->reg, g);
    }
    return RMQ_OK;
}

static void on_recorded_notify(struct replay *rp, const struct trace_event *ev)
{
    rp->st.notifies_recorded++;
    if (rp->opt.notify_source != REPLAY_NOTIFY_TRACE)
        return;
    struct rp_client *c = rp_find_client(rp, ev->conn, ev->group);
    if (c && !c->deaf)
        rp_push_action(rp, rp->now + rp->opt.notify_delay_ms, RP_ACT_NOTIFY, c);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A header after the first: the daemon restarted. Its channels are gone
 * (recorded as "restart" leaves) and its expiry timer starts over. */
static int restart(struct replay *rp, const struct trace_event *ev)
{
    uint64_t *ids = rmq_malloc((rp->conns.count + 1) * sizeof *ids);
    if (!ids)
        return RMQ_ENOMEM;
    size_t n = 0, b;
    for (struct hashmap_entry *e = hashmap_first(&rp->conns, &b); e; e = hashmap_next(&rp->conns, e, &b))
        if (((struct rp_conn *)e->val)->open) {
            assert(n < rp->conns.count + 1);
            ids[n++] = ((struct rp_conn *)e->val)->id;
        }
    qsort(ids, n, sizeof *ids, cmp_u64);
    rp->restarting = true;
    for (size_t i = 0; i < n; i++)
        close_conn(rp, rp_find_conn(rp, ids[i]));
    rp->restarting = false;
    rmq_free(ids);
    rp->scan_base = ev->ts;
    return RMQ_OK;
}

static void run_scan(struct replay *rp);

/* The daemon's expiry timer phase is not in the trace (its timer starts a
 * little after the header is written). A close the daemon recorded as an
 * expiry, of a connection whose membership is past its deadline in the
 * model too, shows a scan ran right then: align the virtual scans to it and
 * run that scan, so the expiry is an expiry and not a close. */
static void sync_scan_phase(struct replay *rp, struct rp_conn *c, const struct trace_event *ev)
{
    if (!c->open || !ev->reason || strncmp(ev->reason, "expired", 7) != 0)
        return;
    bool due = false;
    for (size_t i = 0; i < c->nclients; i++)
        due = due || rp->now - c->clients[i]->last_hb > rp->opt.expiry_ms;
    if (!due)
        return;
    rp->scan_base = ev->ts;
    run_scan(rp);
}

static int on_event(struct replay *rp, const struct trace_event *ev)
{
    struct rp_conn *c;
    switch (ev->kind) {
    case TRACE_HEADER: return ++rp->st.headers > 1 ? restart(rp, ev) : RMQ_OK;
    case TRACE_CONNECT: return on_connect(rp, ev);
    case TRACE_REQUEST: return on_request(rp, ev);
    case TRACE_CLOSE:
        rp->st.closes++;
        if ((c = rp_find_conn(rp, ev->conn)) == NULL)
            return RMQ_OK;
        sync_scan_phase(rp, c, ev);
        close_conn(rp, c); /* already closed after an expiry: nothing left to do */
        return RMQ_OK;
    case TRACE_NOTIFY: on_recorded_notify(rp, ev); return RMQ_OK;
    case TRACE_ROUTE: rp->st.routes++; return rp_route_update(rp, ev);
    case TRACE_HOLDINGS: return rp_truth_feed(rp, ev);
    default: return RMQ_OK;
    }
}

/* One expiry scan at t (broker_expire in server/requests/broker.c): expired memberships leave,
 * and their channels are closed, which removes them from other groups. */
static void run_scan(struct replay *rp)
{
    for (size_t vi = 0; vi < rp->nviews; vi++) {
        /* As the daemon does (broker_expire): rounds until one is not full,
         * so every expired channel is closed in the same scan. */
        uint64_t ids[256];
        size_t n;
        do {
            n = registry_expire(&rp->views[vi]->reg, rp->now, rp->opt.expiry_ms, ids, 256);
            for (size_t i = 0; i < n; i++) {
                struct rp_conn *c = rp_find_conn(rp, ids[i]);
                if (c)
                    close_conn(rp, c);
            }
        } while (n == 256);
    }
}

static void run_action(struct replay *rp, struct rp_action a)
{
    struct rp_client *c = a.c;
    assert(a.kind == RP_ACT_START || a.kind == RP_ACT_NOTIFY || a.kind == RP_ACT_TIMER);
    if (!c->alive)
        return;
    if (a.kind == RP_ACT_TIMER) {
        if (c->tick_at != a.at)
            return;
        c->tick_at = RP_NO_TIME;
        if (!rp_client_stale(rp, c))
            return; /* caught up through a NOTIFY meanwhile: the tick finds nothing new */
        c->n_timer++;
        rp->st.rebalances_timer++;
    } else if (a.kind == RP_ACT_NOTIFY) {
        c->n_notify++;
        rp->st.rebalances_notify++;
    } else {
        c->n_start++;
        rp->st.rebalances_start++;
    }
    if (rp_rebalance(rp, c, a.kind) != 0)
        rp->st.alloc_errors++;
}

/* Runs scans and actions due before limit (at or before it with inclusive). */
static void advance(struct replay *rp, int64_t limit, bool inclusive)
{
    for (;;) {
        int64_t ts = rp_next_scan(rp), ta = rp->nheap ? rp->heap[0].at : INT64_MAX;
        int64_t t = ts <= ta ? ts : ta;
        if (t == INT64_MAX || (inclusive ? t > limit : t >= limit))
            return;
        if (t > rp->now)
            rp->now = t;
        assert(rp->now >= t); /* a late scan runs at now: time never goes back */
        if (ts <= ta)
            run_scan(rp);
        else
            run_action(rp, rp_pop_action(rp));
        rp_flush_notifies(rp);
    }
}

static void start(struct replay *rp, const struct trace_event *ev)
{
    rp->started = true;
    rp->start_ms = rp->scan_base = rp->now = rp->end_ms = ev->ts;
    rp->from_abs = rp->opt.from_rel ? rp->start_ms + rp->opt.from_ms : rp->opt.from_ms;
    rp->to_abs = rp->opt.to_rel ? rp->start_ms + rp->opt.to_ms : rp->opt.to_ms;
    rp_out_header(rp);
}

int replay_feed(struct replay *rp, const struct trace_event *ev)
{
    if (rp->finished)
        return RMQ_ESTATE;
    if (!rp->started)
        start(rp, ev);
    int64_t ts = ev->ts;
    if (ts < rp->now) {
        rp->st.time_regressions++; /* e.g. a restart after a clock step: keep time monotonic */
        ts = rp->now;
    }
    assert(ts >= rp->now);
    if (rp->opt.has_to && ts > rp->to_abs)
        return 1;
    rp->st.events++;
    advance(rp, ts, false);
    rp->now = rp->end_ms = ts;
    int rc = on_event(rp, ev);
    rp_flush_notifies(rp);
    return rc;
}

int replay_finish(struct replay *rp)
{
    if (rp->finished)
        return RMQ_ESTATE;
    rp->finished = true;
    if (!rp->started)
        return rp_report(rp);
    int64_t end = rp->opt.has_to ? rp->to_abs : rp->end_ms;
    if (end < rp->now)
        end = rp->now;
    advance(rp, end, true);
    assert(end >= rp->now);
    rp->now = rp->end_ms = end;
    rp_truth_finish(rp);
    rp_queue_close_all(rp, end);
    return rp_report(rp);
}
