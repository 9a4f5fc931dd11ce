/* replay_out.c — the replay's output: the timeline as it happens (changes,
 * notifications, allocation changes) and the report at the end (clients,
 * overlap and stall intervals, the --explain history, totals), as text or
 * JSON Lines. Everything in the report is sorted by name and time, never
 * by hash order, so the output is a pure function of the input. Text
 * times are the wall clock (ISO 8601, UTC) with the milliseconds after the
 * trace start beside them ("+1234"); JSON carries "ts" and "t". A client is
 * shown by its label, C<n> in order of appearance; the clients section is
 * the legend (label, group, client id, connection).
 */
#include "replay_out.h"

#include "err.h"
#include "mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *rp_reason_name(int kind)
{
    return kind == RP_ACT_START ? "start" : kind == RP_ACT_NOTIFY ? "notify" : "timer";
}

bool rp_out_json(const struct replay *rp)
{
    return rp->opt.format == REPLAY_JSON;
}

long long rp_out_rel(const struct replay *rp, int64_t ts)
{
    return (long long)(ts - rp->start_ms);
}

/* ts as 2023-11-14T22:13:20.123Z; the formatted second is cached (the
 * timeline prints many lines a second). */
void rp_out_iso(struct replay *rp, struct buf *o, int64_t ts)
{
    int64_t sec = ts >= 0 ? ts / 1000 : (ts - 999) / 1000, ms = ts - sec * 1000;
    if (!rp->iso_valid || rp->iso_sec != sec) {
        time_t t = (time_t)sec;
        struct tm tm;
        if (!gmtime_r(&t, &tm) || !strftime(rp->iso, sizeof rp->iso, "%Y-%m-%dT%H:%M:%S", &tm))
            snprintf(rp->iso, sizeof rp->iso, "%lld", (long long)sec);
        rp->iso_sec = sec;
        rp->iso_valid = true;
    }
    char frac[8] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10), 'Z'};
    buf_append_str(o, rp->iso);
    buf_append(o, frac, 5);
}

/* See replay_out.h. */
void rp_out_when(struct replay *rp, struct buf *o, int64_t ts)
{
    rp_out_iso(rp, o, ts);
    buf_appendf(o, "(+%lld)", rp_out_rel(rp, ts));
}

/* `[a,b]` of strings, JSON-quoted or bare. */
static void put_list(struct buf *o, const char *const *v, size_t n, bool quoted)
{
    buf_append_u8(o, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_append_u8(o, ',');
        if (quoted)
            rmq_json_append_string(o, v[i]);
        else
            buf_append_str(o, v[i]);
    }
    buf_append_u8(o, ']');
}

/* Queues as "broker-a:0-3,broker-b:1" (sorted input), or a JSON array of "broker:q". */
/* printf's "%lld" without printf: the report prints many small numbers. */
static void put_int(struct buf *o, long long v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *--p = '-';
    buf_append(o, p, (size_t)(tmp + sizeof tmp - p));
}

void rp_out_queues(struct buf *o, struct rp_queue *const *q, size_t n, bool as_json)
{
    buf_append_u8(o, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_append_u8(o, ',');
        if (as_json) {
            buf_append_u8(o, '"');
            buf_append_str(o, q[i]->broker);
            buf_append_u8(o, ':');
            put_int(o, q[i]->qid);
            buf_append_u8(o, '"');
            continue;
        }
        size_t j = i;
        while (j + 1 < n && q[j + 1]->qid == q[j]->qid + 1 && !strcmp(q[j + 1]->broker, q[i]->broker))
            j++;
        if (!(i > 0 && !strcmp(q[i - 1]->broker, q[i]->broker))) {
            buf_append_str(o, q[i]->broker);
            buf_append_u8(o, ':');
        }
        put_int(o, q[i]->qid);
        if (j > i) {
            buf_append_u8(o, '-');
            put_int(o, q[j]->qid);
        }
        i = j;
    }
    buf_append_u8(o, ']');
}

static void put_prefix(struct replay *rp, const char *type, const struct rp_view *v, const char *group)
{
    struct buf *o = &rp->out;
    if (rp_out_json(rp)) {
        buf_appendf(o, "{\"type\":\"%s\",\"ts\":%" PRId64 ",\"t\":%lld,\"view\":", type, rp->now,
                    rp_out_rel(rp, rp->now));
        rmq_json_append_string(o, v ? v->name : "");
        buf_append_str(o, ",\"group\":");
        rmq_json_append_string(o, group);
    } else {
        rp_out_iso(rp, o, rp->now);
        buf_append_str(o, " +");
        put_int(o, rp_out_rel(rp, rp->now));
        buf_append_u8(o, ' ');
        if (v && v->name[0]) {
            buf_append_u8(o, '@');
            buf_append_str(o, v->name);
            buf_append_u8(o, ' ');
        }
        buf_append_str(o, group);
    }
}

void rp_out_header(struct replay *rp)
{
    const struct replay_options *o = &rp->opt;
    static const char *const src[] = {"auto", "model", "trace"};
    char start_iso[40] = "";
    if (!rp_out_json(rp)) {
        struct buf b;
        buf_init(&b, 0);
        rp_out_iso(rp, &b, rp->start_ms);
        if (buf_terminate(&b) == 0)
            snprintf(start_iso, sizeof start_iso, "%s", (const char *)buf_head(&b));
        buf_free(&b);
    }
    buf_appendf(&rp->out,
                rp_out_json(rp)
                    ? "{\"type\":\"meta\",\"start\":%" PRId64
                      "%s,\"strategy\":\"%s\",\"virtualNodes\":%ld,\"clientRebalanceMs\":%" PRId64
                      ",\"notifyDelayMs\":%" PRId64 ",\"channelExpiryMs\":%" PRId64
                      ",\"expiryScanMs\":%" PRId64 ",\"notifyOnExpiry\":%s,\"notifySource\":\"%s\"}\n"
                    : "# rmqcoord replay, start %" PRId64 " (%s)\n# strategy=%s virtual-nodes=%ld "
                      "client-rebalance-ms=%" PRId64 " notify-delay-ms=%" PRId64 " channel-expiry-ms=%" PRId64
                      " expiry-scan-ms=%" PRId64 " notify-on-expiry=%s notify-source=%s\n== timeline\n",
                rp->start_ms, rp_out_json(rp) ? "" : start_iso, allocate_strategy_name(o->alloc.strategy),
                o->alloc.virtual_nodes, o->rebalance_ms, o->notify_delay_ms, o->expiry_ms, o->scan_ms,
                o->dialect.notify_on_expiry ? (rp_out_json(rp) ? "true" : "on")
                                            : (rp_out_json(rp) ? "false" : "off"),
                src[o->notify_source]);
}

void rp_out_change(struct replay *rp, const struct rp_view *v, const char *group, const char *kind,
                   const char *cid, uint64_t conn, const struct mship_group *g)
{
    if (!rp_in_window(rp, rp->now))
        return;
    struct buf *o = &rp->out;
    const char *ids[256], *topics[256];
    size_t n = g->nmembers < 256 ? g->nmembers : 256, nt = g->nsubs < 256 ? g->nsubs : 256;
    for (size_t i = 0; i < n; i++)
        ids[i] = g->members[i].client_id;
    for (size_t i = 0; i < nt; i++)
        topics[i] = g->subs[i].topic;
    put_prefix(rp, "change", v, group);
    if (rp_out_json(rp)) {
        buf_appendf(o, ",\"kind\":\"%s\",\"clientId\":", kind);
        if (cid)
            rmq_json_append_string(o, cid);
        else
            buf_append_str(o, "null");
        buf_appendf(o, ",\"conn\":%llu,\"members\":", (unsigned long long)conn);
        put_list(o, ids, n, true);
        buf_append_str(o, ",\"topics\":");
        put_list(o, topics, nt, true);
        buf_append_str(o, "}\n");
        return;
    }
    buf_appendf(o, " %s", kind);
    if (cid)
        buf_appendf(o, " %s conn=%llu", cid, (unsigned long long)conn);
    buf_append_str(o, " members=");
    put_list(o, ids, n, false);
    if (!cid) {
        buf_append_str(o, " topics=");
        put_list(o, topics, nt, false);
    }
    buf_append_u8(o, '\n');
}

void rp_out_notify(struct replay *rp, const struct rp_view *v, const char *group, size_t delivered,
                   size_t deaf)
{
    if (!rp_in_window(rp, rp->now))
        return;
    put_prefix(rp, "notify", v, group);
    buf_appendf(&rp->out,
                rp_out_json(rp) ? ",\"clients\":%zu,\"missed\":%zu}\n" : " notify clients=%zu missed=%zu\n",
                delivered, deaf);
}

void rp_out_alloc(struct replay *rp, const struct rp_client *c, const struct rp_hold *h, const char *reason,
                  struct rp_queue *const *added, size_t nadded, struct rp_queue *const *removed,
                  size_t nremoved)
{
    if (!rp_in_window(rp, rp->now))
        return;
    struct buf *o = &rp->out;
    put_prefix(rp, "alloc", c->view, c->group);
    if (rp_out_json(rp)) {
        buf_append_str(o, ",\"clientId\":");
        rmq_json_append_string(o, c->client_id);
        buf_appendf(o, ",\"conn\":%llu,\"topic\":", (unsigned long long)c->conn);
        rmq_json_append_string(o, h->topic);
        buf_appendf(o, ",\"reason\":\"%s\",\"queues\":", reason);
    } else {
        buf_appendf(o, " alloc C%llu %s %s ", (unsigned long long)c->seq, h->topic, reason);
    }
    rp_out_queues(o, h->q, h->nq, rp_out_json(rp));
    buf_append_str(o, rp_out_json(rp) ? ",\"added\":" : " +");
    rp_out_queues(o, added, nadded, rp_out_json(rp));
    buf_append_str(o, rp_out_json(rp) ? ",\"removed\":" : " -");
    rp_out_queues(o, removed, nremoved, rp_out_json(rp));
    buf_append_str(o, rp_out_json(rp) ? "}\n" : "\n");
}

void rp_out_explain(struct replay *rp, const struct rp_client *c, const struct rp_queue *q, bool took,
                    const char *reason, const struct allocate_result *res)
{
    if (!rp_in_window(rp, rp->now))
        return;
    struct buf *o = &rp->explain;
    size_t idx = 0;
    bool listed = res && allocate_result_find(res, c->client_id, &idx) == 0;
    rp_out_iso(rp, o, rp->now);
    buf_appendf(o, " +%lld %s C%llu %s %s:%d (%s)", rp_out_rel(rp, rp->now), q->gt->group,
                (unsigned long long)c->seq, took ? "took" : "dropped", q->broker, (int)q->qid, reason);
    if (res) {
        buf_appendf(o, " view: %zu queue(s), consumers ", res->n_queues);
        put_list(o, res->consumers, res->n_consumers, false);
        if (listed)
            buf_appendf(o, " index %zu", idx);
        else
            buf_append_str(o, " (not listed: gets nothing)");
    }
    struct rp_client *tmp[64];
    size_t n = q->nowners < 64 ? q->nowners : 64;
    memcpy(tmp, q->owners, n * sizeof *tmp);
    buf_appendf(o, " -> owners now %zu:", q->nowners);
    for (size_t i = 0; i < n; i++)
        buf_appendf(o, "%sC%llu", i ? "," : " ", (unsigned long long)tmp[i]->seq);
    buf_append_u8(o, '\n');
}
