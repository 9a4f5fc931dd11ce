/* replay_infer.c — each client's behaviour as the trace shows it.
 *
 * A recording daemon writes the GET_CONSUMER_LIST_BY_GROUP requests (code
 * 38) beside the NOTIFYs it sent. A client asks for its group's consumer
 * list at the start of every rebalance round (one query per topic), so the
 * queries are its rounds: a client that re-queried within
 * REPLAY_REACT_WINDOW_MS of most NOTIFYs reacts to them; one that did not
 * ignores them (the ali-ons client, `sim --no-notify`) and rebalances only
 * on its timer, whose period is the median gap between its rounds that no
 * NOTIFY explains. The notify pre-pass collects both (replay_note_notify,
 * replay_note_query) per (connection, group); rp_client_behaviour applies
 * the result, below the per-client --client override and the global flags.
 * One thread; no I/O.
 */
#include "replay_infer.h"
#include "array.h"
#include "err.h"
#include "mem.h"
#include "replay_state.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct rp_obs {
    int64_t *n, *q; /* NOTIFY times, query times */
    size_t nn, ncap, nq, qcap;
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Whether some NOTIFY in n[0..nn) (sorted) lies in [t - REPLAY_REACT_WINDOW_MS, t]. */
static bool notify_before(const int64_t *n, size_t nn, int64_t t)
{
    size_t lo = 0, hi = nn;
    while (lo < hi) { /* first NOTIFY >= t - window */
        size_t mid = lo + (hi - lo) / 2;
        if (n[mid] < t - REPLAY_REACT_WINDOW_MS)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nn && n[lo] <= t;
}

void replay_infer_behaviour(int64_t *notifies, size_t nn, int64_t *queries, size_t nq, int64_t end_ms,
                            struct replay_behaviour *out)
{
    memset(out, 0, sizeof *out);
    out->notify = -1;
    if (nq == 0)
        return; /* nothing recorded of its rounds: an old trace, or a client that never rebalanced */
    if (nn)
        qsort(notifies, nn, sizeof *notifies, cmp_i64); /* qsort(NULL, 0) is undefined */
    qsort(queries, nq, sizeof *queries, cmp_i64);
    /* Rounds: a query starts one unless it follows the round's first within REPLAY_ROUND_GAP_MS. */
    size_t nr = 0;
    for (size_t i = 0; i < nq; i++)
        if (nr == 0 || queries[i] - queries[nr - 1] > REPLAY_ROUND_GAP_MS)
            queries[nr++] = queries[i];
    assert(nr >= 1 && nr <= nq); /* rounds are compacted in place */
    out->rounds = (uint32_t)nr;
    /* A NOTIFY tells when the client had started already (its first round
     * coalesces with the NOTIFY its own join sent) and its whole window is
     * in the trace. */
    size_t r = 0;
    for (size_t i = 0; i < nn; i++) {
        int64_t t = notifies[i];
        if (t < queries[0] + REPLAY_REACT_WINDOW_MS || t + REPLAY_REACT_WINDOW_MS > end_ms)
            continue;
        while (r < nr && queries[r] < t)
            r++;
        out->notifies++;
        out->reacted += r < nr && queries[r] <= t + REPLAY_REACT_WINDOW_MS;
    }
    assert(out->reacted <= out->notifies);
    if (out->notifies)
        out->notify = out->reacted * 2 > out->notifies ? 1 : 0;
    /* The period: the median gap before a round no NOTIFY explains. */
    int64_t *gaps = nr > 1 ? rmq_malloc((nr - 1) * sizeof *gaps) : NULL;
    size_t ng = 0;
    for (size_t i = 1; gaps && i < nr; i++)
        if (!notify_before(notifies, nn, queries[i]))
            gaps[ng++] = queries[i] - queries[i - 1];
    assert(ng < nr || ng == 0);
    if (ng) {
        qsort(gaps, ng, sizeof *gaps, cmp_i64);
        int64_t p = gaps[ng / 2];
        if (p >= 1000)
            p = (p + 50) / 100 * 100; /* timers fire a few ms late: 8003 is an 8000 ms timer */
        out->period_ms = p > 0 ? p : 0;
        out->gaps = (uint32_t)ng;
    }
    rmq_free(gaps);
}

static struct rp_obs *obs_get(struct replay *rp, uint64_t conn, const char *group, bool create)
{
    char key[8 + 512];
    if (strlen(group) > 500)
        return NULL;
    size_t kn = rp_client_key(key, conn, group);
    struct rp_obs *o = hashmap_get(&rp->obs, key, kn);
    if (o || !create)
        return o;
    if (!(o = rmq_calloc(1, sizeof *o)) || hashmap_put(&rp->obs, key, kn, o, NULL) != 0) {
        rmq_free(o);
        return NULL;
    }
    return o;
}

static int push_time(int64_t **v, size_t *n, size_t *cap, int64_t t)
{
    if (RMQ_GROW(*v, *cap, *n + 1, 16) != 0)
        return RMQ_ENOMEM;
    (*v)[(*n)++] = t;
    return RMQ_OK;
}

int replay_note_recorded_notify(struct replay *rp, uint64_t conn)
{
    rp->any_recorded_notify = true;
    return hashmap_get(&rp->notified, &conn, sizeof conn)
               ? RMQ_OK
               : hashmap_put(&rp->notified, &conn, sizeof conn, rp, NULL);
}

int replay_note_notify(struct replay *rp, uint64_t conn, const char *group, int64_t ts)
{
    int rc = replay_note_recorded_notify(rp, conn);
    if (rc != 0 || !group)
        return rc;
    rp->obs_end = ts > rp->obs_end ? ts : rp->obs_end;
    struct rp_obs *o = obs_get(rp, conn, group, true);
    return o ? push_time(&o->n, &o->nn, &o->ncap, ts) : (strlen(group) > 500 ? RMQ_OK : RMQ_ENOMEM);
}

int replay_note_query(struct replay *rp, uint64_t conn, const char *group, int64_t ts)
{
    rp->obs_end = ts > rp->obs_end ? ts : rp->obs_end;
    if (!group || !*group)
        return RMQ_OK;
    struct rp_obs *o = obs_get(rp, conn, group, true);
    return o ? push_time(&o->q, &o->nq, &o->qcap, ts) : (strlen(group) > 500 ? RMQ_OK : RMQ_ENOMEM);
}

static const struct replay_client_override *find_override(const struct replay *rp, const char *cid)
{
    const struct replay_client_override *hit = NULL;
    for (size_t i = 0; i < rp->opt.n_overrides; i++)
        if (!strcmp(rp->opt.overrides[i].client_id, cid))
            hit = &rp->opt.overrides[i]; /* the last one wins */
    return hit;
}

void rp_client_behaviour(struct replay *rp, struct rp_client *c, bool conn_deaf)
{
    memset(&c->seen, 0, sizeof c->seen);
    c->seen.notify = -1;
    struct rp_obs *o = rp->obs.count ? obs_get(rp, c->conn, c->group, false) : NULL;
    if (o)
        replay_infer_behaviour(o->n, o->nn, o->q, o->nq, rp->obs_end, &c->seen);
    const struct replay_client_override *ov = find_override(rp, c->client_id);
    bool flagged = false;
    for (size_t i = 0; i < rp->opt.n_ignore; i++)
        flagged = flagged || !strcmp(rp->opt.ignore_notify[i], c->client_id);
    bool use_seen = rp->opt.infer && !conn_deaf;
    if (ov && ov->notify >= 0)
        c->deaf = !ov->notify, c->notify_src = "override";
    else if (flagged)
        c->deaf = true, c->notify_src = "flag";
    else if (conn_deaf)
        c->deaf = true, c->notify_src = "no NOTIFY received";
    else if (use_seen && c->seen.notify >= 0)
        c->deaf = !c->seen.notify, c->notify_src = "inferred";
    else
        c->deaf = false, c->notify_src = "default";
    if (ov && ov->rebalance_ms > 0)
        c->rebalance_ms = ov->rebalance_ms, c->period_src = "override";
    else if (rp->opt.rebalance_explicit)
        c->rebalance_ms = rp->opt.rebalance_ms, c->period_src = "flag";
    else if (rp->opt.infer && c->seen.period_ms > 0)
        c->rebalance_ms = c->seen.period_ms, c->period_src = "inferred";
    else
        c->rebalance_ms = rp->opt.rebalance_ms, c->period_src = "default";
    assert(c->rebalance_ms > 0 && c->notify_src && c->period_src); /* every client has a behaviour */
    if (!strcmp(c->notify_src, "inferred"))
        (*(c->deaf ? &rp->st.inferred_ignore : &rp->st.inferred_react))++;
    rp->st.inferred_period += !strcmp(c->period_src, "inferred");
}

static void free_obs(void *p)
{
    struct rp_obs *o = p;
    rmq_free(o->n);
    rmq_free(o->q);
    rmq_free(o);
}

void rp_obs_free(struct replay *rp)
{
    hashmap_free(&rp->obs, free_obs);
}
