/* replay_own.c — what each modeled client holds and who owns each queue.
 *
 * A client's rebalance takes, per subscribed topic, the subscribe set of
 * the route it would fetch now (PROTOCOL: §4.3, readable queues) and the
 * consumer list its broker view would answer now (§3.7, one id per channel),
 * and runs the strategy (common/allocate.c, §5). The allocate_group result
 * is shared by every member of a (view, group, topic) until the member list
 * or the route changes, and a client whose inputs did not move skips the
 * work: that is what keeps timers cheap at a million events.
 * Ownership is per (group, topic, broker, queue); a queue is in overlap when
 * two clients hold it and stalled when the group subscribes it and nobody
 * does; each such interval of non-zero length is kept for the report.
 */
#include "err.h"
#include "mem.h"
#include "replay_int.h"
#include "topics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_owner(const void *a, const void *b)
{
    const struct rp_client *x = *(struct rp_client *const *)a, *y = *(struct rp_client *const *)b;
    int c = strcmp(x->client_id, y->client_id);
    return c ? c : (x->conn > y->conn) - (x->conn < y->conn);
}

static int cmp_queue(const void *a, const void *b)
{
    const struct rp_queue *x = *(struct rp_queue *const *)a, *y = *(struct rp_queue *const *)b;
    int c = allocate_string_compare(x->broker, y->broker);
    return c ? c : (x->qid > y->qid) - (x->qid < y->qid);
}

/* New "cid#conn,..." of q's owners, sorted. */
static char *owners_string(const struct rp_queue *q)
{
    struct rp_client *tmp[64];
    size_t n = q->nowners < 64 ? q->nowners : 64;
    memcpy(tmp, q->owners, n * sizeof *tmp);
    qsort(tmp, n, sizeof *tmp, cmp_owner);
    struct buf b;
    buf_init(&b, 0);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = buf_appendf(&b, "%s%s#%llu", i ? "," : "", tmp[i]->client_id, (unsigned long long)tmp[i]->conn);
    if (rc == 0)
        rc = buf_terminate(&b);
    char *s = rc == 0 ? rmq_strdup((const char *)buf_head(&b)) : NULL;
    buf_free(&b);
    return s;
}

/* Ends q's current overlap/stall at now, keeping it when it lasted. */
static void close_interval(struct replay *rp, struct rp_queue *q, bool open)
{
    if ((q->state == RP_Q_OVERLAP || q->state == RP_Q_STALL) && rp->now > q->since &&
        rp_ptr_push((void ***)&q->iv, &q->niv, &q->iv_cap, NULL) == 0) {
        /* rp_ptr_push grew an array of pointers; intervals are bigger, so grow for real. */
        q->niv--;
        struct rp_interval *p = rmq_realloc(q->iv, (q->niv + 1) * sizeof *p);
        if (p) {
            q->iv = p;
            q->iv[q->niv++] = (struct rp_interval){q->state, q->since, rp->now, q->snapshot, open};
            q->snapshot = NULL;
        }
    }
    rmq_free(q->snapshot);
    q->snapshot = NULL;
}

static void eval_queue(struct replay *rp, struct rp_queue *q, bool owners_changed)
{
    int ns = !q->in_route           ? RP_Q_NONE
             : q->nowners >= 2      ? RP_Q_OVERLAP
             : q->nowners == 0 && q->gt->nsubs > 0 ? RP_Q_STALL
                                                   : RP_Q_OK;
    if (ns == q->state && !(ns == RP_Q_OVERLAP && owners_changed))
        return;
    close_interval(rp, q, false);
    q->state = ns;
    q->since = rp->now;
    if (ns == RP_Q_OVERLAP)
        q->snapshot = owners_string(q);
}

static struct rp_queue *gt_queue(struct rp_gt *gt, const char *broker, int32_t qid)
{
    for (size_t i = 0; i < gt->nq; i++)
        if (gt->queues[i]->qid == qid && !strcmp(gt->queues[i]->broker, broker))
            return gt->queues[i];
    struct rp_queue *q = rmq_calloc(1, sizeof *q);
    if (!q || !(q->broker = rmq_strdup(broker)) ||
        rp_ptr_push((void ***)&gt->queues, &gt->nq, &gt->cap, q) != 0) {
        if (q)
            rmq_free(q->broker);
        rmq_free(q);
        return NULL;
    }
    q->gt = gt;
    q->qid = qid;
    return q;
}

/* Aligns gt's queues with the topic's current route. */
static int gt_sync(struct replay *rp, struct rp_gt *gt)
{
    const struct rp_route *r = hashmap_get_str(&rp->routes, gt->topic);
    size_t n = r ? r->n : 0;
    struct rp_queue **by = n ? rmq_calloc(n, sizeof *by) : NULL;
    if (n && !by)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < gt->nq; i++)
        gt->queues[i]->mark = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(by[i] = gt_queue(gt, r->queues[i].broker_name, r->queues[i].queue_id))) {
            rmq_free(by);
            return RMQ_ENOMEM;
        }
        by[i]->mark = 1;
    }
    rmq_free(gt->by_route);
    gt->by_route = by;
    gt->nby_route = n;
    gt->route_version = r ? r->version : 0;
    for (size_t i = 0; i < gt->nq; i++) {
        gt->queues[i]->in_route = gt->queues[i]->mark == 1;
        eval_queue(rp, gt->queues[i], false);
    }
    return RMQ_OK;
}

struct rp_gt *rp_gt_get(struct replay *rp, const char *group, const char *topic)
{
    char key[600];
    int n = snprintf(key, sizeof key, "%s%c%s", group, 0, topic);
    if (n < 0 || (size_t)n >= sizeof key)
        return NULL;
    struct rp_gt *gt = hashmap_get(&rp->gts, key, (size_t)n);
    if (gt)
        return gt;
    gt = rmq_calloc(1, sizeof *gt);
    if (!gt || !(gt->group = rmq_strdup(group)) || !(gt->topic = rmq_strdup(topic)) ||
        hashmap_put(&rp->gts, key, (size_t)n, gt, NULL) != 0) {
        if (gt) {
            rmq_free(gt->group);
            rmq_free(gt->topic);
        }
        rmq_free(gt);
        return NULL;
    }
    gt_sync(rp, gt);
    return gt;
}

void rp_gt_subscribers(struct replay *rp, struct rp_client *c, int delta)
{
    for (size_t i = 0; i < c->ntopics; i++) {
        struct rp_gt *gt = rp_gt_get(rp, c->group, c->topics[i]);
        if (!gt)
            continue;
        gt->nsubs = (size_t)((long)gt->nsubs + delta);
        for (size_t k = 0; k < gt->nq; k++)
            eval_queue(rp, gt->queues[k], false);
    }
}

/* ---- holdings ---- */

static struct rp_hold *get_hold(struct rp_client *c, const char *topic)
{
    for (size_t i = 0; i < c->nholds; i++)
        if (!strcmp(c->holds[i].topic, topic))
            return &c->holds[i];
    struct rp_hold *p = rmq_realloc(c->holds, (c->nholds + 1) * sizeof *p);
    if (!p)
        return NULL;
    c->holds = p;
    p = &c->holds[c->nholds];
    memset(p, 0, sizeof *p);
    if (!(p->topic = rmq_strdup(topic)))
        return NULL;
    c->nholds++;
    return p;
}

static void owner_change(struct replay *rp, struct rp_client *c, struct rp_queue *q, bool add)
{
    if (add)
        rp_ptr_push((void ***)&q->owners, &q->nowners, &q->owners_cap, c);
    else
        rp_ptr_remove((void **)q->owners, &q->nowners, c);
    eval_queue(rp, q, true);
}

static bool explained(const struct replay *rp, const struct rp_queue *q)
{
    return rp->opt.explain_topic && q->qid == rp->opt.explain_qid && !strcmp(q->broker, rp->opt.explain_broker) &&
           !strcmp(q->gt->topic, rp->opt.explain_topic);
}

/* Replaces h's queues with nq[0..n) (any order), updating owners and
 * reporting the change. */
static int set_holding(struct replay *rp, struct rp_client *c, struct rp_hold *h, struct rp_queue **nq, size_t n,
                       const char *reason, const struct allocate_result *res)
{
    struct rp_queue **added = rmq_malloc((n + h->nq + 1) * sizeof *added), **removed = added + n;
    if (!added)
        return RMQ_ENOMEM;
    size_t na = 0, nr = 0;
    uint64_t in_new = ++rp->mark;
    for (size_t i = 0; i < n; i++)
        nq[i]->mark = in_new;
    for (size_t i = 0; i < h->nq; i++)
        if (h->q[i]->mark != in_new)
            removed[nr++] = h->q[i];
    uint64_t in_old = ++rp->mark;
    for (size_t i = 0; i < h->nq; i++)
        h->q[i]->mark = in_old;
    for (size_t i = 0; i < n; i++)
        if (nq[i]->mark != in_old)
            added[na++] = nq[i];
    int rc = RMQ_OK;
    if (na || nr) {
        struct rp_queue **q = n ? rmq_realloc(h->q, n * sizeof *q) : h->q;
        if (n && !q) {
            rmq_free(added);
            return RMQ_ENOMEM;
        }
        h->q = q;
        memcpy(h->q, nq, n * sizeof *nq);
        h->nq = n;
        qsort(h->q, n, sizeof *h->q, cmp_queue);
        qsort(added, na, sizeof *added, cmp_queue);
        qsort(removed, nr, sizeof *removed, cmp_queue);
        for (size_t i = 0; i < nr; i++) {
            owner_change(rp, c, removed[i], false);
            if (explained(rp, removed[i]))
                rp_out_explain(rp, c, removed[i], false, reason, res);
        }
        for (size_t i = 0; i < na; i++) {
            owner_change(rp, c, added[i], true);
            if (explained(rp, added[i]))
                rp_out_explain(rp, c, added[i], true, reason, res);
        }
        c->n_changes++;
        rp->st.alloc_changes++;
        rp_out_alloc(rp, c, h, reason, added, na, removed, nr);
    }
    rmq_free(added);
    return rc;
}

void rp_client_drop_all(struct replay *rp, struct rp_client *c, const char *why)
{
    for (size_t i = 0; i < c->nholds; i++)
        if (c->holds[i].nq)
            set_holding(rp, c, &c->holds[i], NULL, 0, why, NULL);
}

int rp_client_set_topics(struct replay *rp, struct rp_client *c, const struct rmq_consumer_data *cd)
{
    char **t = rmq_calloc(cd->nsubs + 1, sizeof *t);
    if (!t)
        return RMQ_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < cd->nsubs; i++)
        t[n++] = cd->subs[i].topic; /* borrowed until copied below */
    qsort(t, n, sizeof *t, cmp_strp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (!w || strcmp(t[w - 1], t[i]) != 0)
            t[w++] = t[i];
    bool same = w == c->ntopics;
    for (size_t i = 0; same && i < w; i++)
        same = !strcmp(t[i], c->topics[i]);
    if (same) {
        rmq_free(t);
        return RMQ_OK;
    }
    for (size_t i = 0; i < w; i++)
        if (!(t[i] = rmq_strdup(t[i]))) {
            while (i > 0)
                rmq_free(t[--i]);
            rmq_free(t);
            return RMQ_ENOMEM;
        }
    rp_gt_subscribers(rp, c, -1);
    for (size_t i = 0; i < c->ntopics; i++)
        rmq_free(c->topics[i]);
    rmq_free(c->topics);
    c->topics = t;
    c->ntopics = w;
    rp_gt_subscribers(rp, c, +1);
    rp_mark_stale(rp, c);
    return RMQ_OK;
}

#include "replay_alloc.inc"
