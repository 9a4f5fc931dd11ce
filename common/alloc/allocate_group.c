/* allocate_group.c — allocate_group(): every consumer of a group from
 * unsorted lists in one pass (one plan, one slice per consumer), the owners
 * view built from the assignments, and the result's lookups. Checks and the
 * strategy math are shared with allocate_one() (allocate_check.c,
 * allocate_plan.c). Pure; any thread.
 */
#include "allocate_group.h"

#include "allocate_check.h"
#include "allocate_order.h"
#include "allocate_plan.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

/* ---- whole group ----------------------------------------------------- */

/* The result's arrays share one block (group_alloc): one allocation
 * instead of nine, and, because the allocator sizes its reuse
 * thresholds by the largest block it sees freed, a process that allocates
 * the same group again gets the same pages back instead of faulting in
 * fresh ones (on a VM that costs ~10 us a page, more than the allocation
 * itself for 100,000 queues). assigned and owners outgrow the block only
 * with duplicated consumer ids; they then get their own allocations. */
static int in_block(const struct allocate_result *r, const void *p)
{
    uintptr_t x = (uintptr_t)p, lo = (uintptr_t)r->mem_, hi = lo + r->mem_len_;
    return x >= lo && x < hi;
}

void allocate_result_free(struct allocate_result *r)
{
    if (!r)
        return;
    if (!in_block(r, r->assigned))
        rmq_free(r->assigned);
    if (!in_block(r, r->owners))
        rmq_free(r->owners);
    rmq_free(r->mem_);
    rmq_free(r);
}

int allocate_result_find(const struct allocate_result *r, const char *cid, size_t *index)
{
    size_t lo = 0, hi = r->n_consumers;
    while (lo < hi) { /* lower bound: lands on the first occurrence */
        size_t mid = lo + (hi - lo) / 2;
        if (allocate_string_compare(r->consumers[mid], cid) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == r->n_consumers || strcmp(r->consumers[lo], cid))
        return RMQ_ENOTFOUND;
    assert(r->consumer_first[lo] == lo); /* the lower bound is the first occurrence */
    *index = lo;
    return 0;
}

/* Index of q in the sorted list (the first of equal ones), or
 * ALLOCATE_NO_INDEX. */
static size_t queue_index_of(const struct allocate_result *r, const struct allocate_queue *q)
{
    size_t lo = 0, hi = r->n_queues;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (allocate_queue_compare(&r->queues[mid], q) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n_queues && !allocate_queue_compare(&r->queues[lo], q) ? lo : ALLOCATE_NO_INDEX;
}

/* Carves the result's arrays out of one block: room for n_assign
 * assignments and owners, the rest sized by the lists. Returns 0 or
 * RMQ_ENOMEM. */
static int group_alloc(struct allocate_result *r, size_t nq, size_t nc, size_t n_assign)
{
    size_t len[9] = {
        n_assign * sizeof *r->assigned,
        nq * sizeof *r->queues,
        n_assign * sizeof *r->owners,
        (nq + 1) * sizeof *r->owner_start,
        nq * sizeof *r->unassigned,
        nq * sizeof *r->overlapping,
        nc * sizeof *r->consumers,
        nc * sizeof *r->consumer_first,
        (nc + 1) * sizeof *r->assigned_start,
    };
    size_t total = 0;
    for (size_t k = 0; k < 9; k++) {
        if (len[k] > SIZE_MAX / 4 - total) /* an input no memory could hold */
            return RMQ_ENOMEM;
        total += len[k];
    }
    /* Every size is a multiple of 8, so each array stays aligned. */
    _Static_assert(sizeof(struct allocate_assignment) % 8 == 0 && sizeof(struct allocate_queue) % 8 == 0 &&
                       sizeof(size_t) == 8 && sizeof(const char *) == 8,
                   "arrays packed back to back stay aligned");
    char *m = rmq_malloc(total ? total : 1);
    if (!m)
        return RMQ_ENOMEM;
    r->mem_ = m;
    r->mem_len_ = total;
    r->assigned = (struct allocate_assignment *)(void *)m;
    m += len[0];
    r->queues = (struct allocate_queue *)(void *)m;
    m += len[1];
    r->owners = (size_t *)(void *)m;
    m += len[2];
    r->owner_start = (size_t *)(void *)m;
    m += len[3];
    r->unassigned = (size_t *)(void *)m;
    m += len[4];
    r->overlapping = (size_t *)(void *)m;
    m += len[5];
    r->consumers = (const char **)(void *)m;
    m += len[6];
    r->consumer_first = (size_t *)(void *)m;
    m += len[7];
    r->assigned_start = (size_t *)(void *)m;
    r->assigned_cap_ = n_assign;
    memset(r->owner_start, 0, len[3]);
    memset(r->assigned_start, 0, len[8]);
    return 0;
}

/* Sorted copies of the lists into r (allocated by group_alloc). */
static void group_sort_inputs(struct allocate_result *r, const struct allocate_input *in)
{
    r->n_queues = in->n_queues;
    r->n_consumers = in->n_consumers;
    if (in->n_consumers)
        memcpy((void *)r->consumers, in->consumers, in->n_consumers * sizeof *r->consumers);
    /* The assignments are the sort's scratch before they are filled, so the
     * sort faults in no page of its own. Out of memory or a key too wide
     * for the packed sort: the in-place comparison sort gives the same
     * order. */
    _Static_assert(sizeof *r->assigned >= 2 * sizeof(uint64_t), "scratch fits the assignments");
    if (r->n_queues < 2 || r->assigned_cap_ < r->n_queues ||
        allocate_sort_queues_packed(in->queues, r->n_queues, r->queues, (uint64_t *)(void *)r->assigned)) {
        if (r->n_queues)
            memcpy(r->queues, in->queues, r->n_queues * sizeof *r->queues);
        allocate_sort_queues(r->queues, r->n_queues);
    }
    allocate_sort_consumers(r->consumers, r->n_consumers);
    for (size_t i = 0; i < r->n_consumers; i++) /* sorted: equal ids are adjacent */
        r->consumer_first[i] =
            i && !strcmp(r->consumers[i], r->consumers[i - 1]) ? r->consumer_first[i - 1] : i;
}

/* CONFIG: every consumer returns the configured list (the block has room
 * for n_consumers * n_config assignments). */
static void group_config(struct allocate_result *r, const struct allocate_options *opt)
{
    size_t total = r->n_consumers * opt->n_config;
    if (!total)
        return;
    for (size_t k = 0; k < opt->n_config; k++) {
        r->assigned[k].queue = opt->config[k];
        r->assigned[k].queue_index = queue_index_of(r, &opt->config[k]);
    }
    for (size_t i = 0; i < r->n_consumers; i++) {
        if (i)
            memcpy(r->assigned + i * opt->n_config, r->assigned, opt->n_config * sizeof *r->assigned);
        r->assigned_start[i + 1] = (i + 1) * opt->n_config;
    }
    r->n_assigned = total;
}

/* Makes room for n more assignments. Only duplicated ids get past the
 * block's n_queues, so the array then moves to an allocation of its own. */
static int group_reserve(struct allocate_result *r, size_t n, char *err, size_t err_len)
{
    if (n <= r->assigned_cap_ - r->n_assigned)
        return 0;
    if (r->n_assigned + n > ALLOCATE_MAX_ASSIGNED)
        return allocate_fail(err, err_len, RMQ_E2BIG, "result too large (duplicated consumer ids)");
    size_t cap = r->assigned_cap_ * 2 > r->n_assigned + n ? r->assigned_cap_ * 2 : r->n_assigned + n;
    struct allocate_assignment *g;
    if (in_block(r, r->assigned)) {
        g = rmq_malloc(cap * sizeof *g);
        if (g && r->n_assigned)
            memcpy(g, r->assigned, r->n_assigned * sizeof *g);
    } else {
        g = rmq_realloc(r->assigned, cap * sizeof *g);
    }
    if (!g)
        return RMQ_ENOMEM;
    r->assigned = g;
    r->assigned_cap_ = cap;
    assert(n <= r->assigned_cap_ - r->n_assigned);
    return 0;
}

/* Every other strategy: one plan over the sorted lists, one slice per
 * consumer. Duplicated ids take their first occurrence's slice. */
static int group_plan(struct allocate_result *r, const struct allocate_options *opt, char *err,
                      size_t err_len)
{
    struct allocate_input sorted = {r->queues, r->n_queues, r->consumers, r->n_consumers};
    struct allocate_plan plan;
    int rc = allocate_plan_init(&plan, opt, &sorted, r->consumer_first, err, err_len);
    if (rc)
        return rc;
    /* Only touched up to the longest slice, so it costs a page or two. */
    size_t *pos = rmq_malloc(r->n_queues * sizeof *pos);
    rc = RMQ_ENOMEM;
    if (!pos)
        goto out;
    for (size_t i = 0; i < r->n_consumers; i++) {
        size_t n = allocate_plan_emit(&plan, r->consumer_first[i], pos);
        rc = group_reserve(r, n, err, err_len);
        if (rc)
            goto out;
        for (size_t k = 0; k < n; k++)
            r->assigned[r->n_assigned++] = (struct allocate_assignment){r->queues[pos[k]], pos[k]};
        r->assigned_start[i + 1] = r->n_assigned;
    }
    rc = 0;
out:
    rmq_free(pos);
    allocate_plan_free(&plan);
    return rc;
}

/* Fills the owners view from the assignments. */
static int group_owners(struct allocate_result *r)
{
    size_t nq = r->n_queues;
    if (!in_block(r, r->assigned)) { /* grown past the block: so must the owners */
        r->owners = rmq_malloc(r->n_assigned * sizeof *r->owners);
        if (!r->owners)
            return RMQ_ENOMEM;
    }
    for (size_t a = 0; a < r->n_assigned; a++) {
        size_t q = r->assigned[a].queue_index;
        if (q == ALLOCATE_NO_INDEX)
            r->n_foreign++;
        else
            r->owner_start[q + 1]++;
    }
    for (size_t q = 0; q < nq; q++) {
        size_t n = r->owner_start[q + 1];
        if (!n)
            r->unassigned[r->n_unassigned++] = q;
        else if (n > 1)
            r->overlapping[r->n_overlapping++] = q;
        r->owner_start[q + 1] += r->owner_start[q];
    }
    /* Walking consumers in order keeps each queue's owners ascending; the
     * fill cursor is owner_start shifted by one, restored afterwards. */
    for (size_t i = 0; i < r->n_consumers; i++) {
        for (size_t a = r->assigned_start[i]; a < r->assigned_start[i + 1]; a++) {
            size_t q = r->assigned[a].queue_index;
            if (q != ALLOCATE_NO_INDEX)
                r->owners[r->owner_start[q]++] = i;
        }
    }
    if (nq)
        memmove(r->owner_start + 1, r->owner_start, nq * sizeof *r->owner_start);
    r->owner_start[0] = 0;
    return 0;
}

#ifndef NDEBUG
/* A finished result, as allocate.h promises it: the lists sorted as the
 * client sorts them, each consumer's slice delimited in order, each
 * queue's owners ascending and counted once per assignment, the
 * unassigned and overlapping lists exactly the queues with zero and with
 * two or more owners. O(queues + consumers + assignments). */
static int result_sanity(const struct allocate_result *r)
{
    for (size_t q = 1; q < r->n_queues; q++)
        assert(allocate_queue_compare(&r->queues[q - 1], &r->queues[q]) <= 0);
    for (size_t i = 0; i < r->n_consumers; i++) {
        assert(i == 0 || allocate_string_compare(r->consumers[i - 1], r->consumers[i]) <= 0);
        assert(r->consumer_first[i] <= i);
        assert(r->assigned_start[i] <= r->assigned_start[i + 1]);
    }
    assert(r->assigned_start[0] == 0 && r->assigned_start[r->n_consumers] == r->n_assigned);
    assert(r->n_assigned <= r->assigned_cap_);
    size_t foreign = 0, none = 0, many = 0;
    for (size_t a = 0; a < r->n_assigned; a++) {
        size_t q = r->assigned[a].queue_index;
        assert(q == ALLOCATE_NO_INDEX || q < r->n_queues);
        foreign += q == ALLOCATE_NO_INDEX;
    }
    assert(foreign == r->n_foreign && r->owner_start[0] == 0);
    for (size_t q = 0; q < r->n_queues; q++) {
        size_t lo = r->owner_start[q], hi = r->owner_start[q + 1];
        assert(lo <= hi);
        for (size_t k = lo; k < hi; k++)
            assert(r->owners[k] < r->n_consumers && (k == lo || r->owners[k - 1] <= r->owners[k]));
        none += hi == lo;
        many += hi - lo > 1;
    }
    assert(r->owner_start[r->n_queues] == r->n_assigned - r->n_foreign);
    assert(none == r->n_unassigned && many == r->n_overlapping);
    return 1;
}
#endif

int allocate_group(const struct allocate_options *opt, const struct allocate_input *in,
                   struct allocate_result **out, char *err, size_t err_len)
{
    *out = NULL;
    if (err && err_len)
        err[0] = 0;
    int rc = allocate_options_check(opt, err, err_len);
    if (!rc && opt->strategy == ALLOCATE_CONFIG) {
        rc = allocate_queues_check(in->queues, in->n_queues, "queues", err, err_len);
        if (!rc)
            rc = allocate_strings_check(in->consumers, in->n_consumers, "consumers", err, err_len);
        if (!rc && in->n_consumers && opt->n_config > ALLOCATE_MAX_ASSIGNED / in->n_consumers)
            rc = allocate_fail(err, err_len, RMQ_E2BIG, "result too large: %zu consumers x %zu config queues",
                               in->n_consumers, opt->n_config);
    } else if (!rc) {
        rc = allocate_input_check(in, err, err_len);
        for (size_t i = 0; !rc && i < in->n_consumers; i++)
            if (!in->consumers[i][0])
                rc = allocate_fail(err, err_len, RMQ_EINVAL, "consumer id %zu is empty", i);
    }
    if (rc)
        return rc;
    struct allocate_result *r = rmq_calloc(1, sizeof *r);
    if (!r)
        return allocate_fail(err, err_len, RMQ_ENOMEM, "out of memory");
    r->strategy = opt->strategy;
    /* Without duplicated ids a strategy hands out each queue at most once. */
    int config = opt->strategy == ALLOCATE_CONFIG;
    size_t n_assign = config ? in->n_consumers * opt->n_config : in->n_queues;
    if (n_assign < in->n_queues)
        n_assign = in->n_queues; /* the queue sort's scratch */
    rc = group_alloc(r, in->n_queues, in->n_consumers, n_assign);
    if (!rc) {
        group_sort_inputs(r, in);
        if (config)
            group_config(r, opt);
        else
            rc = group_plan(r, opt, err, err_len);
    }
    if (!rc)
        rc = group_owners(r);
    if (rc) {
        if (rc == RMQ_ENOMEM)
            allocate_fail(err, err_len, rc, "out of memory");
        allocate_result_free(r);
        return rc;
    }
    assert(result_sanity(r));
    *out = r;
    return 0;
}
