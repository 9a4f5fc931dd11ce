/* replay_own.c — what each modeled client holds and who owns each queue.
 *
 * A client's rebalance takes, per subscribed topic, the subscribe set of
 * the route it would fetch now (PROTOCOL: docs/protocol.md §8.2, readable queues) and the
 * consumer list its broker view would answer now (§3.7, one id per channel),
 * and runs the strategy (common/alloc/allocate.c, §5). The allocate_group result
 * is shared by every member of a (view, group, topic) until the member list
 * or the route changes, and a client whose inputs did not move skips the
 * work: that is what keeps timers cheap at a million events.
 * Ownership is per (group, topic, broker, queue); a queue is in overlap when
 * two clients hold it and stalled when the group subscribes it and nobody
 * does; each such interval of non-zero length is kept for the report.
 */
#include "replay_own.h"
#include "array.h"
#include "err.h"
#include "mem.h"
#include "replay_out.h"
#include "topics.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_owner(const void *a, const void *b)
{
    const struct rp_client *x = *(struct rp_client *const *)a, *y = *(struct rp_client *const *)b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_queue(const void *a, const void *b)
{
    const struct rp_queue *x = *(struct rp_queue *const *)a, *y = *(struct rp_queue *const *)b;
    int c = allocate_string_compare(x->broker, y->broker);
    return c ? c : (x->qid > y->qid) - (x->qid < y->qid);
}

/* New "C1,C3" of q's owners' labels, in label order. */
char *rp_owners_string(const struct rp_queue *q)
{
    struct rp_client *tmp[64];
    size_t n = q->nowners < 64 ? q->nowners : 64;
    memcpy(tmp, q->owners, n * sizeof *tmp);
    qsort(tmp, n, sizeof *tmp, cmp_owner);
    struct buf b;
    buf_init(&b, 0);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = buf_appendf(&b, "%sC%llu", i ? "," : "", (unsigned long long)tmp[i]->seq);
    if (rc == 0)
        rc = buf_terminate(&b);
    char *s = rc == 0 ? rmq_strdup((const char *)buf_head(&b)) : NULL;
    buf_free(&b);
    return s;
}

/* Ends q's current overlap/stall at now, keeping it when it lasted. */
static void close_interval(struct replay *rp, struct rp_queue *q, bool open)
{
    assert(q->since <= rp->now); /* set at a past now; virtual time never goes back */
    if ((q->state == RP_Q_OVERLAP || q->state == RP_Q_STALL) && rp->now > q->since) {
        if (RMQ_GROW(q->iv, q->iv_cap, q->niv + 1, 4) == 0) {
            q->iv[q->niv++] = (struct rp_interval){q->state, q->since, rp->now, q->snapshot, open, q->deaf};
            q->snapshot = NULL;
        }
    }
    rmq_free(q->snapshot);
    q->snapshot = NULL;
}

static void eval_queue(struct replay *rp, struct rp_queue *q, bool owners_changed)
{
    int ns = !q->in_route                          ? RP_Q_NONE
             : q->nowners >= 2                     ? RP_Q_OVERLAP
             : q->nowners == 0 && q->gt->nsubs > 0 ? RP_Q_STALL
                                                   : RP_Q_OK;
    if (ns == q->state && !(ns == RP_Q_OVERLAP && owners_changed))
        return;
    close_interval(rp, q, false);
    q->state = ns;
    q->since = rp->now;
    q->deaf = NULL;
    if (ns == RP_Q_OVERLAP) {
        q->snapshot = rp_owners_string(q);
        for (size_t i = 0; i < q->nowners && !q->deaf; i++)
            if (q->owners[i]->deaf)
                q->deaf = q->owners[i]; /* it holds on until its timer: the usual cause */
    }
}

/* The index key of (broker, qid); its length, 0 when the name is too long
 * for one (no route or holdings line carries such a name). */
static size_t qkey(char *key, size_t cap, const char *broker, int32_t qid)
{
    size_t n = strlen(broker);
    if (n + 1 + sizeof qid > cap)
        return 0;
    memcpy(key, broker, n + 1);
    memcpy(key + n + 1, &qid, sizeof qid);
    return n + 1 + sizeof qid;
}

struct rp_queue *rp_gt_queue(struct rp_gt *gt, const char *broker, int32_t qid)
{
    char key[512];
    size_t kn = qkey(key, sizeof key, broker, qid);
    if (!kn)
        return NULL;
    struct rp_queue *q = hashmap_get(&gt->qindex, key, kn);
    if (q) {
        assert(q->qid == qid && !strcmp(q->broker, broker));
        return q;
    }
    q = rmq_calloc(1, sizeof *q);
    if (!q || !(q->broker = rmq_strdup(broker)) || hashmap_put(&gt->qindex, key, kn, q, NULL) != 0) {
        if (q)
            rmq_free(q->broker);
        rmq_free(q);
        return NULL;
    }
    if (rp_ptr_push((void ***)&gt->queues, &gt->nq, &gt->cap, q) != 0) {
        (void)hashmap_remove(&gt->qindex, key, kn);
        rmq_free(q->broker);
        rmq_free(q);
        return NULL;
    }
    q->gt = gt;
    q->qid = qid;
    assert(gt->qindex.count == gt->nq);
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
        if (!(by[i] = rp_gt_queue(gt, r->queues[i].broker_name, r->queues[i].queue_id))) {
            rmq_free(by);
            return RMQ_ENOMEM;
        }
        by[i]->mark = 1;
    }
    rmq_free(gt->by_route);
    gt->by_route = by;
    gt->nby_route = n;
    assert(n <= gt->nq); /* every route queue has its rp_queue now */
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
        assert(delta == 1 || delta == -1);
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
    if (RMQ_GROW(c->holds, c->holds_cap, c->nholds + 1, 4) != 0)
        return NULL;
    struct rp_hold *p = &c->holds[c->nholds];
    memset(p, 0, sizeof *p);
    if (!(p->topic = rmq_strdup(topic)))
        return NULL;
    c->nholds++;
    return p;
}

static void owner_change(struct replay *rp, struct rp_client *c, struct rp_queue *q, bool add)
{
    assert(q->owners_ms <= rp->now);
    if (add)
        rp_ptr_push((void ***)&q->owners, &q->nowners, &q->owners_cap, c);
    else
        rp_ptr_remove((void **)q->owners, &q->nowners, c);
    q->owners_ms = rp->now;
    eval_queue(rp, q, true);
}

static bool explained(const struct replay *rp, const struct rp_queue *q)
{
    return rp->opt.explain_topic && q->qid == rp->opt.explain_qid &&
           !strcmp(q->broker, rp->opt.explain_broker) && !strcmp(q->gt->topic, rp->opt.explain_topic);
}

/* Replaces h's queues with nq[0..n) (any order), updating owners and
 * reporting the change. */
static int set_holding(struct replay *rp, struct rp_client *c, struct rp_hold *h, struct rp_queue **nq,
                       size_t n, const char *reason, const struct allocate_result *res)
{
    struct rp_queue *small[128];
    size_t need = n + h->nq;
    struct rp_queue **added = need <= 128 ? small : rmq_malloc(need * sizeof *added), **removed = added + n;
    if (!added)
        return RMQ_ENOMEM;
    size_t na = 0, nr = 0;
    assert(n == 0 || nq != NULL);
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
    assert(na <= n && nr <= h->nq);
    int rc = RMQ_OK;
    if (na || nr) {
        struct rp_queue **q = n ? rmq_realloc(h->q, n * sizeof *q) : h->q;
        if (n && !q) {
            if (added != small)
                rmq_free(added);
            return RMQ_ENOMEM;
        }
        h->q = q;
        if (n)
            memcpy(h->q, nq, n * sizeof *nq); /* nq is NULL when dropping everything */
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
        c->changed_ms = rp->now;
        rp->st.alloc_changes++;
        rp_out_alloc(rp, c, h, reason, added, na, removed, nr);
    }
    if (added != small)
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
    qsort(t, n, sizeof *t, rmq_strp_cmp);
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

/* ---- routes ---- */

static void route_clear(struct rp_route *r)
{
    for (size_t i = 0; i < r->nnames; i++)
        rmq_free(r->names[i]);
    rmq_free(r->names);
    rmq_free(r->queues);
    r->names = NULL;
    r->queues = NULL;
    r->n = r->nnames = 0;
}

/* Fills r with the subscribe set of ev's brokers (PROTOCOL: docs/protocol.md §8.2 — every
 * broker with the read bit, queues 0..readQueueNums-1), sorted. */
static int route_fill(struct rp_route *r, const struct trace_event *ev)
{
    size_t total = 0;
    for (size_t i = 0; i < ev->nbrokers; i++)
        if (ev->brokers[i].perm & TOPIC_PERM_READ)
            total += (size_t)ev->brokers[i].read_queue_nums;
    if (total > 65536)
        return RMQ_E2BIG;
    r->names = rmq_calloc(ev->nbrokers + 1, sizeof *r->names);
    r->queues = rmq_calloc(total + 1, sizeof *r->queues);
    if (!r->names || !r->queues)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < ev->nbrokers; i++) {
        const struct trace_broker *b = &ev->brokers[i];
        if (!(r->names[r->nnames] = rmq_strdup(b->broker_name)))
            return RMQ_ENOMEM;
        const char *name = r->names[r->nnames++];
        for (int q = 0; (b->perm & TOPIC_PERM_READ) && q < b->read_queue_nums; q++)
            r->queues[r->n++] = (struct allocate_queue){r->topic, name, q};
    }
    assert(r->n == total && r->nnames == ev->nbrokers);
    allocate_sort_queues(r->queues, r->n);
    return RMQ_OK;
}

int rp_route_update(struct replay *rp, const struct trace_event *ev)
{
    struct rp_route *r = hashmap_get_str(&rp->routes, ev->topic);
    if (!r) {
        r = rmq_calloc(1, sizeof *r);
        if (!r || !(r->topic = rmq_strdup(ev->topic)) ||
            hashmap_put_str(&rp->routes, ev->topic, r, NULL) != 0) {
            if (r)
                rmq_free(r->topic);
            rmq_free(r);
            return RMQ_ENOMEM;
        }
    }
    route_clear(r);
    int rc = ev->deleted ? RMQ_OK : route_fill(r, ev);
    if (rc != 0) {
        route_clear(r);
        return rc;
    }
    r->version = ++rp->route_version;
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        struct rp_gt *gt = e->val;
        if (!strcmp(gt->topic, ev->topic) && (rc = gt_sync(rp, gt)) != 0)
            return rc;
    }
    for (size_t i = 0; i < rp->nall; i++) {
        struct rp_client *c = rp->all[i];
        for (size_t k = 0; c->alive && k < c->ntopics; k++)
            if (!strcmp(c->topics[k], ev->topic))
                rp_mark_stale(rp, c);
    }
    return RMQ_OK;
}

/* ---- rebalance ---- */

static void free_cache(void *p)
{
    struct rp_cache *k = p;
    allocate_result_free(k->res);
    rmq_free(k->cids);
    rmq_free(k);
}

/* The group's allocation of topic as c's view sees it now, computed once per
 * (member list, route) version. */
static struct rp_cache *group_alloc(struct replay *rp, struct rp_client *c, const struct reg_group *g,
                                    const struct rp_route *r, struct rp_cache *k)
{
    if (!k) {
        char key[800];
        int n = snprintf(key, sizeof key, "%s%c%s%c%s", c->view->name, 0, c->group, 0, r->topic);
        if (n < 0 || (size_t)n >= sizeof key)
            return NULL;
        k = hashmap_get(&rp->caches, key, (size_t)n);
        if (!k &&
            (!(k = rmq_calloc(1, sizeof *k)) || hashmap_put(&rp->caches, key, (size_t)n, k, NULL) != 0)) {
            rmq_free(k);
            return NULL;
        }
        if (!k->cids)
            k->gv = UINT64_MAX;
    }
    assert(g->g.nmembers > 0); /* rp_rebalance skips empty groups */
    if (k->gv == c->gv->version && k->rv == r->version && k->cids)
        return k;
    allocate_result_free(k->res);
    rmq_free(k->cids);
    k->res = NULL;
    k->gv = c->gv->version;
    k->rv = r->version;
    /* PROTOCOL: docs/protocol.md §4.7/§11.1 — cidAll is every channel's id, duplicates kept. */
    k->cids = rmq_calloc(g->g.nmembers + 1, sizeof *k->cids);
    if (!k->cids)
        return NULL;
    for (size_t i = 0; i < g->g.nmembers; i++)
        k->cids[i] = g->g.members[i].client_id;
    struct allocate_input in = {r->queues, r->n, k->cids, g->g.nmembers};
    k->rc = allocate_group(&rp->opt.alloc, &in, &k->res, NULL, 0);
    return k;
}

static int rebalance_topic(struct replay *rp, struct rp_client *c, const struct reg_group *g,
                           const char *topic, int kind)
{
    struct rp_hold *h = get_hold(c, topic);
    if (!h)
        return RMQ_ENOMEM;
    if (!h->route)
        h->route = hashmap_get_str(&rp->routes, topic);
    const struct rp_route *r = h->route;
    if (!r || r->n == 0)
        return RMQ_OK; /* no route: the client skips the topic and keeps what it has */
    if (h->computed && h->gv == c->gv->version && h->rv == r->version)
        return RMQ_OK; /* same inputs, same answer */
    if (!h->gt && !(h->gt = rp_gt_get(rp, c->group, topic)))
        return RMQ_ENOMEM;
    struct rp_gt *gt = h->gt;
    struct rp_cache *k = group_alloc(rp, c, g, r, h->cache);
    if (!k)
        return RMQ_ENOMEM;
    assert(k->gv == c->gv->version && k->rv == r->version); /* computed for the inputs of now */
    h->cache = k;
    h->computed = true;
    h->gv = k->gv;
    h->rv = k->rv;
    if (k->rc != 0)
        return k->rc; /* the client's strategy throws: it keeps its queues (§5.2) */
    if (gt->route_version != r->version && gt_sync(rp, gt) != 0)
        return RMQ_ENOMEM;
    size_t idx, n = 0;
    struct rp_queue *small[64];
    struct rp_queue **nq = gt->nby_route <= 64 ? small : rmq_calloc(gt->nby_route, sizeof *nq);
    if (!nq)
        return RMQ_ENOMEM;
    /* Not in cidAll (e.g. expired while alive): the "[BUG] not in cidAll" path, nothing. */
    if (allocate_result_find(k->res, c->client_id, &idx) == 0) {
        const struct allocate_assignment *a = allocate_result_queues_of(k->res, idx);
        for (size_t i = 0; i < allocate_result_count_of(k->res, idx); i++)
            if (a[i].queue_index < gt->nby_route)
                nq[n++] = gt->by_route[a[i].queue_index];
    }
    assert(n <= gt->nby_route);
    int rc = set_holding(rp, c, h, nq, n, rp_reason_name(kind), k->res);
    if (nq != small)
        rmq_free(nq);
    return rc;
}

bool rp_client_stale(struct replay *rp, const struct rp_client *c)
{
    for (size_t i = 0; i < c->ntopics; i++) {
        const struct rp_route *r = hashmap_get_str(&rp->routes, c->topics[i]);
        const struct rp_hold *h = NULL;
        for (size_t k = 0; k < c->nholds && !h; k++)
            if (!strcmp(c->holds[k].topic, c->topics[i]))
                h = &c->holds[k];
        if (r && r->n && (!h || !h->computed || h->gv != c->gv->version || h->rv != r->version))
            return true;
    }
    for (size_t k = 0; k < c->nholds; k++)
        if (c->holds[k].nq &&
            !bsearch(&c->holds[k].topic, c->topics, c->ntopics, sizeof *c->topics, rmq_strp_cmp))
            return true;
    return false;
}

int rp_rebalance(struct replay *rp, struct rp_client *c, int kind)
{
    assert(c->alive); /* actions of a client that left are dropped before this */
    const struct reg_group *g = registry_group(&c->view->reg, c->group);
    if (!g || g->g.nmembers == 0 || g->g.message_model == RMQ_MODEL_BROADCASTING)
        return RMQ_OK; /* broadcast clients take every queue; nothing to compare */
    int rc = RMQ_OK;
    for (size_t i = 0; i < c->ntopics; i++) {
        int r = rebalance_topic(rp, c, g, c->topics[i], kind);
        rc = rc ? rc : r;
    }
    for (size_t i = 0; i < c->nholds; i++) {
        if (!c->holds[i].nq ||
            bsearch(&c->holds[i].topic, c->topics, c->ntopics, sizeof *c->topics, rmq_strp_cmp))
            continue;
        set_holding(rp, c, &c->holds[i], NULL, 0, "unsubscribed", NULL); /* a topic it no longer lists */
        c->holds[i].computed = false;
    }
    return rc;
}

void rp_queue_close_all(struct replay *rp, int64_t end)
{
    assert(end >= rp->now);
    rp->now = end;
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        struct rp_gt *gt = e->val;
        for (size_t i = 0; i < gt->nq; i++) {
            close_interval(rp, gt->queues[i], true);
            gt->queues[i]->state = RP_Q_NONE;
        }
    }
}

static void free_gt(void *p)
{
    struct rp_gt *gt = p;
    for (size_t i = 0; i < gt->nq; i++) {
        struct rp_queue *q = gt->queues[i];
        for (size_t k = 0; k < q->niv; k++)
            rmq_free(q->iv[k].owners);
        rmq_free(q->iv);
        rmq_free(q->owners);
        rmq_free(q->snapshot);
        rmq_free(q->broker);
        rmq_free(q);
    }
    hashmap_free(&gt->qindex, NULL);
    rmq_free(gt->queues);
    rmq_free(gt->by_route);
    rmq_free(gt->group);
    rmq_free(gt->topic);
    rmq_free(gt);
}

static void free_route(void *p)
{
    struct rp_route *r = p;
    route_clear(r);
    rmq_free(r->topic);
    rmq_free(r);
}

void rp_own_free(struct replay *rp)
{
    for (size_t i = 0; i < rp->nall; i++) {
        struct rp_client *c = rp->all[i];
        for (size_t k = 0; k < c->nholds; k++) {
            rmq_free(c->holds[k].topic);
            rmq_free(c->holds[k].q);
        }
        rmq_free(c->holds);
        for (size_t k = 0; k < c->ntopics; k++)
            rmq_free(c->topics[k]);
        rmq_free(c->topics);
    }
    hashmap_free(&rp->gts, free_gt);
    hashmap_free(&rp->routes, free_route);
    hashmap_free(&rp->caches, free_cache);
}
