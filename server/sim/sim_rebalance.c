/* sim_rebalance.c — see sim_rebalance.h. Pure; any thread. */
#include "sim_rebalance.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int sim_rebalance_mq_all(const struct rmq_route_info *r, const char *topic, struct allocate_queue **out,
                         size_t *n)
{
    size_t total = 0;
    for (size_t i = 0; i < r->nqueues; i++) {
        if (r->queues[i].perm & 4) /* PROTOCOL: docs/protocol.md §8.2 PERM_READ */
            total += (size_t)r->queues[i].read_queue_nums;
        if (total > SIM_REBALANCE_MAX_QUEUES)
            return RMQ_E2BIG;
    }
    struct allocate_queue *q = rmq_calloc(total ? total : 1, sizeof *q);
    if (!q)
        return RMQ_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < r->nqueues; i++) {
        if (!(r->queues[i].perm & 4))
            continue;
        for (int id = 0; id < r->queues[i].read_queue_nums; id++)
            q[k++] = (struct allocate_queue){topic, r->queues[i].broker_name, id};
    }
    assert(k == total); /* counted and filled by the same rule */
    allocate_sort_queues(q, k);
    *out = q;
    *n = k;
    return RMQ_OK;
}

/* CONFIG returns the configured list for every topic; keep this topic's. */
static void keep_topic(const char *topic, struct allocate_queue *q, size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(q[i].topic, topic))
            q[k++] = q[i];
    *n = k;
}

int sim_rebalance_allocate(const struct allocate_options *opt, const char *topic,
                           const struct allocate_queue *mq, size_t nmq, const char *const *cids, size_t ncids,
                           const char *self, struct allocate_queue **out, size_t *nout, char *err,
                           size_t errlen)
{
    const char **sorted = rmq_calloc(ncids ? ncids : 1, sizeof *sorted);
    if (!sorted)
        return RMQ_ENOMEM;
    if (ncids)
        memcpy(sorted, cids, ncids * sizeof *sorted);
    allocate_sort_consumers(sorted, ncids);
    struct allocate_input in = {.queues = mq, .n_queues = nmq, .consumers = sorted, .n_consumers = ncids};
    int rc = allocate_one(opt, &in, self, out, nout, err, errlen);
    rmq_free(sorted);
    if (rc == 0 && opt->strategy == ALLOCATE_CONFIG)
        keep_topic(topic, *out, nout);
    return rc;
}

/* A queue tagged with its side (0 old, 1 new) and index, for the merge. */
struct tagged {
    struct allocate_queue q;
    size_t index;
    int side;
};

static int tagged_cmp(const void *a, const void *b)
{
    const struct tagged *x = a, *y = b;
    int c = allocate_queue_compare(&x->q, &y->q);
    if (c)
        return c;
    if (x->side != y->side)
        return x->side - y->side;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sorts both sides together; a run of equal queues is "kept" when it has
 * both sides, else removed (old only) or added (new only, first index). */
static void classify(const struct tagged *t, size_t n, struct sim_diff *d)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        bool has_old = false, has_new = false;
        while (j < n && allocate_queue_compare(&t[i].q, &t[j].q) == 0) {
            has_old |= t[j].side == 0;
            has_new |= t[j].side == 1;
            j++;
        }
        assert(j > i);
        if (has_old && !has_new)
            d->removed[d->nremoved++] = t[i].index;
        else if (has_new && !has_old)
            d->added[d->nadded++] = t[i].index;
        /* Sorted old-first, then by index: t[i] is old when has_old, and the
         * first new entry is the one that keeps its place in the new order. */
        bool first = true;
        for (size_t k = i; k < j; k++) {
            if (t[k].side != 1)
                continue;
            assert(!has_old || t[i].side == 0); /* sorted old-first */
            d->old_of_new[t[k].index] = !first ? SIM_DIFF_DUP : has_old ? t[i].index : SIM_DIFF_ADDED;
            first = false;
        }
        i = j;
    }
}

static int idx_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int sim_diff_compute(const struct allocate_queue *old, size_t nold, const struct allocate_queue *nw,
                     size_t nnew, struct sim_diff *d)
{
    memset(d, 0, sizeof *d);
    size_t n = nold + nnew;
    struct tagged *t = rmq_calloc(n ? n : 1, sizeof *t);
    /* One block for the three lists (removed first: sim_diff_clear frees it). */
    size_t cells = nold + 2 * nnew;
    d->removed = rmq_calloc(cells ? cells : 1, sizeof *d->removed);
    if (!t || !d->removed) {
        rmq_free(t);
        sim_diff_clear(d);
        return RMQ_ENOMEM;
    }
    d->added = d->removed + nold;
    d->old_of_new = d->added + nnew;
    for (size_t i = 0; i < nold; i++)
        t[i] = (struct tagged){old[i], i, 0};
    for (size_t i = 0; i < nnew; i++)
        t[nold + i] = (struct tagged){nw[i], i, 1};
    qsort(t, n, sizeof *t, tagged_cmp);
    classify(t, n, d);
    assert(d->nremoved <= nold && d->nadded <= nnew);
    rmq_free(t);
    qsort(d->removed, d->nremoved, sizeof *d->removed, idx_cmp);
    qsort(d->added, d->nadded, sizeof *d->added, idx_cmp);
    return RMQ_OK;
}

void sim_diff_clear(struct sim_diff *d)
{
    if (!d)
        return;
    rmq_free(d->removed);
    memset(d, 0, sizeof *d);
}
