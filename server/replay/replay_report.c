/* replay_report.c — the report at the end of a replay: the clients (the
 * legend of the C<n> labels), the overlap and stall intervals, the --explain
 * history, totals, as text or JSON Lines. Everything is sorted by name and
 * time, never by hash order, so the report is a pure function of the input.
 */
#include "replay_report.h"

#include "err.h"
#include "mem.h"
#include "replay_out.h"
#include "replay_state.h"
#include "replay_truth.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the report ---- */

static int cmp_client(const void *a, const void *b)
{
    const struct rp_client *x = *(struct rp_client *const *)a, *y = *(struct rp_client *const *)b;
    int c = strcmp(x->group, y->group);
    if (!c)
        c = strcmp(x->client_id, y->client_id);
    if (!c)
        c = (x->conn > y->conn) - (x->conn < y->conn);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static void report_client(struct replay *rp, const struct rp_client *c)
{
    struct buf *o = &rp->out;
    if (rp_out_json(rp)) {
        buf_appendf(o, "{\"type\":\"client\",\"label\":\"C%llu\",\"group\":", (unsigned long long)c->seq);
        rmq_json_append_string(o, c->group);
        buf_append_str(o, ",\"clientId\":");
        rmq_json_append_string(o, c->client_id);
        buf_appendf(o, ",\"conn\":%llu,\"view\":", (unsigned long long)c->conn);
        rmq_json_append_string(o, c->view->name);
        buf_appendf(o, ",\"joined\":%lld,\"left\":", rp_out_rel(rp, c->joined_ms));
        if (c->alive)
            buf_append_str(o, "null");
        else
            buf_appendf(o, "%lld", rp_out_rel(rp, c->left_ms));
        buf_appendf(o,
                    ",\"leftWhy\":\"%s\",\"notify\":%s,\"rebalances\":{\"start\":%llu,\"notify\":%llu,"
                    "\"timer\":%llu},\"changes\":%llu,\"final\":{",
                    c->alive ? "" : c->left_why, c->deaf ? "false" : "true", (unsigned long long)c->n_start,
                    (unsigned long long)c->n_notify, (unsigned long long)c->n_timer,
                    (unsigned long long)c->n_changes);
    } else {
        buf_appendf(o, "C%llu = %s %s conn=%llu%s%s joined=", (unsigned long long)c->seq, c->group,
                    c->client_id, (unsigned long long)c->conn, c->view->name[0] ? " @" : "", c->view->name);
        rp_out_when(rp, o, c->joined_ms);
        if (c->alive) {
            buf_append_str(o, " left=-");
        } else {
            buf_append_str(o, " left=");
            rp_out_when(rp, o, c->left_ms);
            buf_appendf(o, "(%s)", c->left_why);
        }
        buf_appendf(o, " notify=%s rebalances=%llu/%llu/%llu changes=%llu final=",
                    !c->deaf                                       ? "on"
                    : !strcmp(c->notify_src, "no NOTIFY received") ? "missed"
                                                                   : "ignored",
                    (unsigned long long)c->n_start, (unsigned long long)c->n_notify,
                    (unsigned long long)c->n_timer, (unsigned long long)c->n_changes);
    }
    size_t shown = 0;
    for (size_t i = 0; i < c->nholds; i++) {
        if (!c->holds[i].nq)
            continue;
        if (rp_out_json(rp)) {
            buf_append_str(o, shown ? "," : "");
            rmq_json_append_string(o, c->holds[i].topic);
            buf_append_u8(o, ':');
        } else {
            buf_appendf(o, "%s%s=", shown ? ";" : "", c->holds[i].topic);
        }
        rp_out_queues(o, c->holds[i].q, c->holds[i].nq, rp_out_json(rp));
        shown++;
    }
    buf_append_str(o, rp_out_json(rp) ? "}}\n" : (shown ? "\n" : "-\n"));
}

/* One client's behaviour and where it came from. */
static void report_behaviour(struct replay *rp, const struct rp_client *c)
{
    struct buf *o = &rp->out;
    const struct replay_behaviour *b = &c->seen;
    if (rp_out_json(rp)) {
        buf_appendf(o, "{\"type\":\"behaviour\",\"label\":\"C%llu\",\"group\":", (unsigned long long)c->seq);
        rmq_json_append_string(o, c->group);
        buf_append_str(o, ",\"client\":");
        rmq_json_append_string(o, c->client_id);
        buf_appendf(o,
                    ",\"conn\":%llu,\"notify\":%s,\"notifySource\":\"%s\",\"rebalanceMs\":%lld,"
                    "\"periodSource\":\"%s\",\"queryRounds\":%u,\"notifiesTelling\":%u,\"reacted\":%u,"
                    "\"measuredPeriodMs\":%lld,\"gaps\":%u}\n",
                    (unsigned long long)c->conn, c->deaf ? "false" : "true", c->notify_src,
                    (long long)c->rebalance_ms, c->period_src, b->rounds, b->notifies, b->reacted,
                    (long long)b->period_ms, b->gaps);
        return;
    }
    buf_appendf(o, "C%llu %s notify=%s (%s", (unsigned long long)c->seq, c->client_id,
                c->deaf ? "ignored" : "reacts", c->notify_src);
    if (b->notifies)
        buf_appendf(o, "; re-queried after %u/%u NOTIFY", b->reacted, b->notifies);
    else if (b->rounds)
        buf_append_str(o, "; no NOTIFY after its start to judge by");
    buf_appendf(o, ") rebalance-ms=%lld (%s", (long long)c->rebalance_ms, c->period_src);
    if (b->period_ms)
        buf_appendf(o, "; measured %lld over %u gap(s)", (long long)b->period_ms, b->gaps);
    if (b->rounds)
        buf_appendf(o, "; %u query round(s))\n", b->rounds);
    else
        buf_append_str(o, "; no consumer-list queries recorded)\n");
}

static int report_clients(struct replay *rp)
{
    struct rp_client **v = rmq_malloc((rp->nall + 1) * sizeof *v);
    if (!v)
        return RMQ_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < rp->nall; i++) {
        const struct rp_client *c = rp->all[i];
        bool before = rp->opt.has_from && !c->alive && c->left_ms < rp->from_abs;
        if (!before && rp_in_window(rp, c->joined_ms < rp->from_abs ? rp->from_abs : c->joined_ms))
            v[n++] = rp->all[i];
    }
    qsort(v, n, sizeof *v, cmp_client);
    if (!rp_out_json(rp))
        buf_append_str(&rp->out, "== clients (rebalances = start/notify/timer)\n");
    for (size_t i = 0; i < n; i++)
        report_client(rp, v[i]);
    if (!rp_out_json(rp))
        buf_append_str(&rp->out, "== behaviour (on NOTIFY, and the timer: from --client, a flag, the "
                                 "recorded consumer-list queries, or the defaults)\n");
    for (size_t i = 0; i < n; i++)
        report_behaviour(rp, v[i]);
    rmq_free(v);
    return RMQ_OK;
}

struct ivref {
    const struct rp_queue *q;
    const struct rp_interval *iv;
    int64_t s, e; /* clipped to the window */
};

static int cmp_ivref(const void *a, const void *b)
{
    const struct ivref *x = a, *y = b;
    int c = strcmp(x->q->gt->group, y->q->gt->group);
    if (!c)
        c = strcmp(x->q->gt->topic, y->q->gt->topic);
    if (!c)
        c = allocate_string_compare(x->q->broker, y->q->broker);
    if (!c)
        c = (x->q->qid > y->q->qid) - (x->q->qid < y->q->qid);
    return c ? c : (x->s > y->s) - (x->s < y->s);
}

static void report_interval(struct replay *rp, const struct ivref *r)
{
    struct buf *o = &rp->out;
    const char *kind = r->iv->kind == RP_Q_OVERLAP ? "overlap" : "stall";
    if (rp_out_json(rp)) {
        buf_appendf(o, "{\"type\":\"%s\",\"group\":", kind);
        rmq_json_append_string(o, r->q->gt->group);
        buf_append_str(o, ",\"topic\":");
        rmq_json_append_string(o, r->q->gt->topic);
        buf_append_str(o, ",\"broker\":");
        rmq_json_append_string(o, r->q->broker);
        buf_appendf(o, ",\"queueId\":%d,\"from\":%lld,\"to\":%lld,\"ms\":%lld,\"open\":%s,\"owners\":",
                    (int)r->q->qid, rp_out_rel(rp, r->s), rp_out_rel(rp, r->e), (long long)(r->e - r->s),
                    r->iv->open ? "true" : "false");
        rmq_json_append_string(o, r->iv->owners ? r->iv->owners : "");
        if (r->iv->deaf) {
            buf_append_str(o, ",\"cause\":{\"client\":");
            rmq_json_append_string(o, r->iv->deaf->client_id);
            buf_appendf(o, ",\"conn\":%llu,\"ignoresNotify\":\"%s\",\"rebalanceMs\":%lld}",
                        (unsigned long long)r->iv->deaf->conn, r->iv->deaf->notify_src,
                        (long long)r->iv->deaf->rebalance_ms);
        }
        buf_append_str(o, "}\n");
        return;
    }
    buf_appendf(o, "%s %s %s %s:%d ", kind, r->q->gt->group, r->q->gt->topic, r->q->broker, (int)r->q->qid);
    rp_out_iso(rp, o, r->s);
    buf_append_str(o, "..");
    rp_out_iso(rp, o, r->e);
    buf_appendf(o, " (+%lld..+%lld) %lldms", rp_out_rel(rp, r->s), rp_out_rel(rp, r->e),
                (long long)(r->e - r->s));
    if (r->iv->owners)
        buf_appendf(o, " owners=%s", r->iv->owners);
    if (r->iv->deaf)
        buf_appendf(o,
                    " cause: C%llu (%s) does not rebalance on NOTIFY (%s), so it kept its queues until its "
                    "timer (every %lld ms)",
                    (unsigned long long)r->iv->deaf->seq, r->iv->deaf->client_id, r->iv->deaf->notify_src,
                    (long long)r->iv->deaf->rebalance_ms);
    buf_append_str(o, r->iv->open ? " (open at end)\n" : "\n");
}

/* Collects every interval, clipped to the window, sorted. */
static int collect_intervals(struct replay *rp, struct ivref **out, size_t *nout)
{
    size_t total = 0, b, n = 0;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b))
        for (size_t i = 0; i < ((struct rp_gt *)e->val)->nq; i++)
            total += ((struct rp_gt *)e->val)->queues[i]->niv;
    struct ivref *v = rmq_malloc((total + 1) * sizeof *v);
    if (!v)
        return RMQ_ENOMEM;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        const struct rp_gt *gt = e->val;
        for (size_t i = 0; i < gt->nq; i++)
            for (size_t k = 0; k < gt->queues[i]->niv; k++) {
                const struct rp_interval *iv = &gt->queues[i]->iv[k];
                int64_t s = iv->start, en = iv->end;
                if (rp->opt.has_from && s < rp->from_abs)
                    s = rp->from_abs;
                if (rp->opt.has_to && en > rp->to_abs)
                    en = rp->to_abs;
                if (en > s)
                    v[n++] = (struct ivref){gt->queues[i], iv, s, en};
            }
    }
    qsort(v, n, sizeof *v, cmp_ivref);
    *out = v;
    *nout = n;
    return RMQ_OK;
}

/* Whether some group's view of the --explain topic has that queue. */
static bool explain_known(struct replay *rp)
{
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        const struct rp_gt *gt = e->val;
        if (strcmp(gt->topic, rp->opt.explain_topic))
            continue;
        for (size_t i = 0; i < gt->nq; i++)
            if (gt->queues[i]->qid == rp->opt.explain_qid &&
                !strcmp(gt->queues[i]->broker, rp->opt.explain_broker))
                return true;
    }
    return false;
}

static int report_intervals(struct replay *rp)
{
    struct ivref *v;
    size_t n;
    if (collect_intervals(rp, &v, &n) != 0)
        return RMQ_ENOMEM;
    struct replay_stats *st = &rp->st;
    if (!rp_out_json(rp))
        buf_append_str(&rp->out, "== queues (overlap: two owners, duplicate consumption; stall: no owner)\n");
    for (size_t i = 0; i < n; i++) {
        int64_t ms = v[i].e - v[i].s;
        bool ov = v[i].iv->kind == RP_Q_OVERLAP;
        *(ov ? &st->overlap_intervals : &st->stall_intervals) += 1;
        *(ov ? &st->overlap_ms : &st->stall_ms) += ms;
        int64_t *mx = ov ? &st->overlap_max_ms : &st->stall_max_ms;
        *mx = ms > *mx ? ms : *mx;
        st->open_intervals += v[i].iv->open;
        report_interval(rp, &v[i]);
    }
    if (rp->opt.explain_topic) {
        if (!rp_out_json(rp))
            buf_appendf(&rp->out, "== explain %s:%s:%d\n", rp->opt.explain_topic, rp->opt.explain_broker,
                        (int)rp->opt.explain_qid);
        if (!explain_known(rp)) {
            if (rp_out_json(rp)) {
                buf_append_str(&rp->out, "{\"type\":\"warning\",\"line\":");
                rmq_json_append_string(&rp->out, "--explain names a queue no group of the trace consumes");
                buf_append_str(&rp->out, "}\n");
            } else {
                buf_append_str(&rp->out,
                               "warning: no group of the trace consumes this queue (check the topic, "
                               "the broker name and the queue id against the route)\n");
            }
        }
        for (const char *p = (const char *)buf_head(&rp->explain), *end = p + buf_live(&rp->explain);
             p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = (size_t)(nl - p);
            if (rp_out_json(rp)) {
                char *line = rmq_strndup(p, len);
                buf_append_str(&rp->out, "{\"type\":\"explain\",\"line\":");
                rmq_json_append_string(&rp->out, line ? line : "");
                buf_append_str(&rp->out, "}\n");
                rmq_free(line);
            } else {
                buf_append(&rp->out, p, len + 1);
            }
            p = nl + 1;
        }
        for (size_t i = 0; !rp_out_json(rp) && i < n; i++)
            if (v[i].q->qid == rp->opt.explain_qid && !strcmp(v[i].q->broker, rp->opt.explain_broker) &&
                !strcmp(v[i].q->gt->topic, rp->opt.explain_topic))
                report_interval(rp, &v[i]);
    }
    rmq_free(v);
    return RMQ_OK;
}

/* Totals: one table, written as "key value" lines or one JSON object. */
static void report_totals(struct replay *rp)
{
    const struct replay_stats *s = &rp->st;
    const struct {
        const char *key;
        long long v;
    } t[] = {
        {"events", (long long)s->events},
        {"durationMs", (long long)(rp->end_ms - rp->start_ms)},
        {"changes", (long long)s->changes},
        {"joins", (long long)s->joins},
        {"closes", (long long)s->leaves_close},
        {"unregisters", (long long)s->leaves_unregister},
        {"expiries", (long long)s->leaves_expire},
        {"subscriptionChanges", (long long)s->sub_changes},
        {"restarts", (long long)s->restarts},
        {"notifies", (long long)s->notify_groups},
        {"notifyDeliveries", (long long)s->notify_deliveries},
        {"notifyMissed", (long long)s->notify_skipped_deaf},
        {"rebalancesStart", (long long)s->rebalances_start},
        {"rebalancesNotify", (long long)s->rebalances_notify},
        {"rebalancesTimer", (long long)s->rebalances_timer},
        {"allocChanges", (long long)s->alloc_changes},
        {"allocErrors", (long long)s->alloc_errors},
        {"overlaps", (long long)s->overlap_intervals},
        {"overlapMs", (long long)s->overlap_ms},
        {"overlapMaxMs", (long long)s->overlap_max_ms},
        {"stalls", (long long)s->stall_intervals},
        {"stallMs", (long long)s->stall_ms},
        {"stallMaxMs", (long long)s->stall_max_ms},
        {"openIntervals", (long long)s->open_intervals},
        {"clients", (long long)s->clients},
        {"heartbeatsRejected", (long long)s->heartbeats_rejected},
        {"ignoredOnClosedConn", (long long)s->ignored_closed_conn},
        {"implicitConnects", (long long)s->implicit_connects},
        {"recordedNotifies", (long long)s->notifies_recorded},
        {"consumerListQueries", (long long)s->consumer_list_queries},
        {"inferredIgnoreNotify", (long long)s->inferred_ignore},
        {"inferredReactNotify", (long long)s->inferred_react},
        {"inferredPeriod", (long long)s->inferred_period},
        {"holdingsSamples", (long long)s->holdings_samples},
        {"holdingsUnanswered", (long long)s->holdings_unanswered},
        {"holdingsRounds", (long long)s->holdings_rounds},
        {"realOverlaps", (long long)s->real_overlaps},
        {"realOverlapMs", (long long)s->real_overlap_ms},
        {"realGaps", (long long)s->real_gaps},
        {"realGapMs", (long long)s->real_gap_ms},
        {"disagreements", (long long)s->disagreements},
        {"disagreementMs", (long long)s->disagreement_ms},
        {"disagreementsModel", (long long)s->dis_model},
        {"disagreementsClient", (long long)s->dis_client},
    };
    size_t n = sizeof t / sizeof t[0];
    buf_append_str(&rp->out, rp_out_json(rp) ? "{\"type\":\"totals\"" : "== totals\n");
    for (size_t i = 0; i < n; i++)
        buf_appendf(&rp->out, rp_out_json(rp) ? ",\"%s\":%lld" : "%s %lld\n", t[i].key, t[i].v);
    if (rp_out_json(rp))
        buf_append_str(&rp->out, "}\n");
}

int rp_report(struct replay *rp)
{
    if (!rp->started)
        rp_out_header(rp);
    if (report_clients(rp) != 0 || report_intervals(rp) != 0 || rp_truth_report(rp) != 0)
        return RMQ_ENOMEM;
    report_totals(rp);
    return RMQ_OK;
}
