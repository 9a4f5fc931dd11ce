/* allocate.c — public entry points of the allocation engine (see allocate.h):
 * the Java orderings, option and input checks, allocate_one() and
 * allocate_group() with its owners view. The strategy math itself lives in
 * allocate_plan.c so that both entry points share one implementation and can
 * only differ in what they are given. Pure; any thread.
 */
#include "allocate.h"

#include "allocate_internal.h"
#include "err.h"
#include "mem.h"

#include <stdlib.h>
#include <string.h>

static const char *const strategy_names[ALLOCATE_STRATEGY_COUNT] = {
    "AVG", "AVG_BY_CIRCLE", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH",
};

const char *allocate_strategy_name(enum allocate_strategy s)
{
    return (unsigned)s < ALLOCATE_STRATEGY_COUNT ? strategy_names[s] : "?";
}

int allocate_strategy_parse(const char *name, enum allocate_strategy *out)
{
    for (unsigned i = 0; name && i < ALLOCATE_STRATEGY_COUNT; i++) {
        if (!strcmp(name, strategy_names[i])) {
            *out = (enum allocate_strategy)i;
            return 0;
        }
    }
    return RMQ_EINVAL;
}

void allocate_options_init(struct allocate_options *opt, enum allocate_strategy strategy)
{
    memset(opt, 0, sizeof *opt);
    opt->strategy = strategy;
    opt->virtual_nodes = ALLOCATE_DEFAULT_VIRTUAL_NODES;
    opt->inner = ALLOCATE_AVG;
}

/* ---- Java String order ------------------------------------------------ */

static int is_cont(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

/* Decodes one code point of the NUL-terminated s (*s != 0) into *cp and
 * returns the bytes used. An ill-formed sequence yields U+FFFD for its
 * maximal subpart (the Unicode-recommended replacement, also what Java's
 * UTF-8 decoder does), so a byte outside 0x80..0xBF always starts a new
 * sequence — allocate_string_compare relies on that to resynchronise. */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
    unsigned char b = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    uint32_t v;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1, v = b & 0x1Fu;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2, v = b & 0x0Fu;
        lo = b == 0xE0 ? 0xA0 : 0x80; /* no overlongs */
        hi = b == 0xED ? 0x9F : 0xBF; /* no encoded surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3, v = b & 0x07u;
        lo = b == 0xF0 ? 0x90 : 0x80;
        hi = b == 0xF4 ? 0x8F : 0xBF; /* <= U+10FFFF */
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t i = 1; i <= need; i++) {
        if (s[i] < lo || s[i] > hi) {
            *cp = 0xFFFD;
            return i;
        }
        v = v << 6 | (s[i] & 0x3Fu);
        lo = 0x80, hi = 0xBF;
    }
    *cp = v;
    return need + 1;
}

/* Walks a UTF-8 string as UTF-16 code units. */
struct u16_iter {
    const unsigned char *s;
    uint32_t low; /* pending low surrogate, 0 if none */
};

/* Next code unit, or -1 at the end. */
static long u16_next(struct u16_iter *it)
{
    uint32_t cp;
    if (it->low) {
        cp = it->low;
        it->low = 0;
        return (long)cp;
    }
    if (!*it->s)
        return -1;
    it->s += utf8_decode(it->s, &cp);
    if (cp < 0x10000)
        return (long)cp;
    cp -= 0x10000;
    it->low = 0xDC00 | (cp & 0x3FF);
    return (long)(0xD800 | cp >> 10);
}

int allocate_string_compare(const char *a, const char *b)
{
    if (a == b)
        return 0; /* common: the queues of a topic share its string */
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t k = 0;
    while (x[k] && x[k] == y[k])
        k++;
    if (x[k] == y[k])
        return 0;
    /* Equal bytes give equal code units, so only the code point around the
     * first difference matters. Resume at a shared sequence start: k itself,
     * or the last non-continuation byte before it. */
    size_t j = k;
    if (is_cont(x[k]) || is_cont(y[k])) {
        while (j > 0 && is_cont(x[--j]))
            ;
    }
    struct u16_iter ia = {x + j, 0}, ib = {y + j, 0};
    for (;;) {
        long u = u16_next(&ia), v = u16_next(&ib);
        if (u != v)
            return u < v ? -1 : 1;
        if (u < 0)
            break;
    }
    /* Distinct ill-formed strings can decode alike; bytes keep it total. */
    return x[k] < y[k] ? -1 : 1;
}

int allocate_queue_compare(const struct allocate_queue *a, const struct allocate_queue *b)
{
    /* PROTOCOL: §5.1 topic, then brokerName, then queueId. */
    int c = allocate_string_compare(a->topic, b->topic);
    if (!c)
        c = allocate_string_compare(a->broker_name, b->broker_name);
    if (!c)
        c = (a->queue_id > b->queue_id) - (a->queue_id < b->queue_id);
    return c;
}

static int queue_qsort_cmp(const void *a, const void *b)
{
    return allocate_queue_compare(a, b);
}

static int cid_qsort_cmp(const void *a, const void *b)
{
    return allocate_string_compare(*(const char *const *)a, *(const char *const *)b);
}

void allocate_sort_queues(struct allocate_queue *queues, size_t n)
{
    if (n > 1)
        qsort(queues, n, sizeof *queues, queue_qsort_cmp);
}

void allocate_sort_consumers(const char **consumers, size_t n)
{
    if (n > 1)
        qsort((void *)consumers, n, sizeof *consumers, cid_qsort_cmp);
}

const char *allocate_room_by_rule(const char *name)
{
    const char *dash = name ? strrchr(name, '-') : NULL;
    return dash && dash[1] ? dash + 1 : NULL;
}

/* ---- checks ---------------------------------------------------------- */

static int queues_check(const struct allocate_queue *q, size_t n, const char *what, char *err, size_t err_len)
{
    if (n && !q)
        return allocate_fail(err, err_len, RMQ_EINVAL, "%s: NULL array", what);
    for (size_t i = 0; i < n; i++)
        if (!q[i].topic || !q[i].broker_name)
            return allocate_fail(err, err_len, RMQ_EINVAL, "%s[%zu]: NULL topic or broker name", what, i);
    return 0;
}

static int strings_check(const char *const *v, size_t n, const char *what, char *err, size_t err_len)
{
    if (n && !v)
        return allocate_fail(err, err_len, RMQ_EINVAL, "%s: NULL array", what);
    for (size_t i = 0; i < n; i++)
        if (!v[i])
            return allocate_fail(err, err_len, RMQ_EINVAL, "%s[%zu] is NULL", what, i);
    return 0;
}

static int rooms_check(const struct allocate_room *m, size_t n, const char *what, char *err, size_t err_len)
{
    if (n && !m)
        return allocate_fail(err, err_len, RMQ_EINVAL, "%s: NULL array", what);
    for (size_t i = 0; i < n; i++)
        if (!m[i].name)
            return allocate_fail(err, err_len, RMQ_EINVAL, "%s[%zu]: NULL name", what, i);
    return 0;
}

/* The options on their own: what Java constructors and setters reject
 * before any allocate() call. */
static int options_check(const struct allocate_options *opt, char *err, size_t err_len)
{
    switch (opt->strategy) {
    case ALLOCATE_AVG:
    case ALLOCATE_AVG_BY_CIRCLE: return 0;
    case ALLOCATE_CONFIG: return queues_check(opt->config, opt->n_config, "config", err, err_len);
    case ALLOCATE_MACHINE_ROOM: return strings_check(opt->idcs, opt->n_idcs, "consumerIdcs", err, err_len);
    case ALLOCATE_MACHINE_ROOM_NEARBY:
        if (opt->inner != ALLOCATE_AVG && opt->inner != ALLOCATE_AVG_BY_CIRCLE)
            return allocate_fail(err, err_len, RMQ_EINVAL,
                                 "inner strategy must be AVG or AVG_BY_CIRCLE, not %s",
                                 allocate_strategy_name(opt->inner));
        if (opt->rooms_by_rule)
            return 0;
        if (rooms_check(opt->broker_rooms, opt->n_broker_rooms, "brokerRooms", err, err_len))
            return RMQ_EINVAL;
        return rooms_check(opt->consumer_rooms, opt->n_consumer_rooms, "consumerRooms", err, err_len);
    case ALLOCATE_CONSISTENT_HASH:
        /* PROTOCOL: §5.8 a negative virtual node count throws. */
        if (opt->virtual_nodes < 0)
            return allocate_fail(err, err_len, RMQ_EINVAL, "virtualNodes must not be negative (got %ld)",
                                 opt->virtual_nodes);
        return 0;
    default: return allocate_fail(err, err_len, RMQ_EINVAL, "unknown strategy %d", (int)opt->strategy);
    }
}

/* PROTOCOL: §5.2 check(): both lists non-empty (current_cid is checked by
 * the caller, before these, as Java does). */
static int input_check(const struct allocate_input *in, char *err, size_t err_len)
{
    int rc = queues_check(in->queues, in->n_queues, "queues", err, err_len);
    if (!rc)
        rc = strings_check(in->consumers, in->n_consumers, "consumers", err, err_len);
    if (rc)
        return rc;
    if (!in->n_queues)
        return allocate_fail(err, err_len, RMQ_EINVAL, "queue list (mqAll) is empty");
    if (!in->n_consumers)
        return allocate_fail(err, err_len, RMQ_EINVAL, "consumer list (cidAll) is empty");
    return 0;
}

/* ---- per consumer ---------------------------------------------------- */

/* New copy of the queue array (at least one slot, so never NULL on success). */
static struct allocate_queue *queues_dup(const struct allocate_queue *q, size_t n)
{
    struct allocate_queue *d = rmq_malloc((n ? n : 1) * sizeof *d);
    if (d && n)
        memcpy(d, q, n * sizeof *d);
    return d;
}

int allocate_one(const struct allocate_options *opt, const struct allocate_input *in, const char *current_cid,
                 struct allocate_queue **out, size_t *n_out, char *err, size_t err_len)
{
    *out = NULL;
    *n_out = 0;
    if (err && err_len)
        err[0] = 0;
    int rc = options_check(opt, err, err_len);
    if (rc)
        return rc;
    if (opt->strategy == ALLOCATE_CONFIG) {
        /* PROTOCOL: §5.5 ByConfig returns its list as-is, with no check. */
        *out = queues_dup(opt->config, opt->n_config);
        if (!*out)
            return allocate_fail(err, err_len, RMQ_ENOMEM, "out of memory");
        *n_out = opt->n_config;
        return 0;
    }
    if (!current_cid || !*current_cid)
        return allocate_fail(err, err_len, RMQ_EINVAL, "current consumer id is empty");
    rc = input_check(in, err, err_len);
    if (rc)
        return rc;
    struct allocate_queue *res = rmq_malloc(in->n_queues * sizeof *res);
    size_t *pos = rmq_malloc(in->n_queues * sizeof *pos);
    struct allocate_plan plan;
    if (!res || !pos) {
        rc = allocate_fail(err, err_len, RMQ_ENOMEM, "out of memory");
        goto fail;
    }
    size_t idx = 0;
    while (idx < in->n_consumers && strcmp(in->consumers[idx], current_cid))
        idx++;
    if (idx == in->n_consumers) {
        /* PROTOCOL: §5.2 not in cidAll: an empty result, not an error. */
        rmq_free(pos);
        *out = res;
        return 0;
    }
    rc = allocate_plan_init(&plan, opt, in, err, err_len);
    if (rc)
        goto fail;
    size_t n = allocate_plan_emit(&plan, idx, pos);
    for (size_t k = 0; k < n; k++)
        res[k] = in->queues[pos[k]];
    allocate_plan_free(&plan);
    rmq_free(pos);
    *out = res;
    *n_out = n;
    return 0;
fail:
    rmq_free(pos);
    rmq_free(res);
    return rc;
}

/* ---- whole group ----------------------------------------------------- */

void allocate_result_free(struct allocate_result *r)
{
    if (!r)
        return;
    rmq_free(r->queues);
    rmq_free(r->consumers);
    rmq_free(r->consumer_first);
    rmq_free(r->assigned_start);
    rmq_free(r->assigned);
    rmq_free(r->owner_start);
    rmq_free(r->owners);
    rmq_free(r->unassigned);
    rmq_free(r->overlapping);
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

/* Sorted copies of the lists into r. */
static int group_sort_inputs(struct allocate_result *r, const struct allocate_input *in)
{
    r->n_queues = in->n_queues;
    r->n_consumers = in->n_consumers;
    r->queues = queues_dup(in->queues, in->n_queues);
    r->consumers = rmq_malloc((in->n_consumers ? in->n_consumers : 1) * sizeof *r->consumers);
    r->consumer_first = rmq_malloc((in->n_consumers ? in->n_consumers : 1) * sizeof *r->consumer_first);
    r->assigned_start = rmq_calloc(in->n_consumers + 1, sizeof *r->assigned_start);
    if (!r->queues || !r->consumers || !r->consumer_first || !r->assigned_start)
        return RMQ_ENOMEM;
    if (in->n_consumers)
        memcpy((void *)r->consumers, in->consumers, in->n_consumers * sizeof *r->consumers);
    allocate_sort_queues(r->queues, r->n_queues);
    allocate_sort_consumers(r->consumers, r->n_consumers);
    for (size_t i = 0; i < r->n_consumers; i++) /* sorted: equal ids are adjacent */
        r->consumer_first[i] =
            i && !strcmp(r->consumers[i], r->consumers[i - 1]) ? r->consumer_first[i - 1] : i;
    return 0;
}

/* CONFIG: every consumer returns the configured list. */
static int group_config(struct allocate_result *r, const struct allocate_options *opt, char *err,
                        size_t err_len)
{
    if (r->n_consumers && opt->n_config > ALLOCATE_MAX_ASSIGNED / r->n_consumers)
        return allocate_fail(err, err_len, RMQ_E2BIG, "result too large: %zu consumers x %zu config queues",
                             r->n_consumers, opt->n_config);
    size_t total = r->n_consumers * opt->n_config;
    r->assigned = rmq_malloc((total ? total : 1) * sizeof *r->assigned);
    if (!r->assigned)
        return RMQ_ENOMEM;
    if (!total)
        return 0;
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
    return 0;
}

/* Every other strategy: one plan over the sorted lists, one slice per
 * consumer. Duplicated ids take their first occurrence's slice. */
static int group_plan(struct allocate_result *r, const struct allocate_options *opt, char *err,
                      size_t err_len)
{
    struct allocate_input sorted = {r->queues, r->n_queues, r->consumers, r->n_consumers};
    struct allocate_plan plan;
    int rc = allocate_plan_init(&plan, opt, &sorted, err, err_len);
    if (rc)
        return rc;
    size_t *pos = rmq_malloc(r->n_queues * sizeof *pos);
    size_t cap = r->n_queues;
    r->assigned = rmq_malloc(cap * sizeof *r->assigned);
    rc = RMQ_ENOMEM;
    if (!pos || !r->assigned)
        goto out;
    for (size_t i = 0; i < r->n_consumers; i++) {
        size_t n = allocate_plan_emit(&plan, r->consumer_first[i], pos);
        if (n > cap - r->n_assigned) { /* only duplicated ids get past n_queues */
            if (r->n_assigned + n > ALLOCATE_MAX_ASSIGNED) {
                rc = allocate_fail(err, err_len, RMQ_E2BIG, "result too large (duplicated consumer ids)");
                goto out;
            }
            size_t ncap = cap * 2 > r->n_assigned + n ? cap * 2 : r->n_assigned + n;
            struct allocate_assignment *g = rmq_realloc(r->assigned, ncap * sizeof *g);
            if (!g)
                goto out;
            r->assigned = g;
            cap = ncap;
        }
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
    r->owner_start = rmq_calloc(nq + 1, sizeof *r->owner_start);
    r->owners = rmq_malloc((r->n_assigned ? r->n_assigned : 1) * sizeof *r->owners);
    r->unassigned = rmq_malloc((nq ? nq : 1) * sizeof *r->unassigned);
    r->overlapping = rmq_malloc((nq ? nq : 1) * sizeof *r->overlapping);
    if (!r->owner_start || !r->owners || !r->unassigned || !r->overlapping)
        return RMQ_ENOMEM;
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

int allocate_group(const struct allocate_options *opt, const struct allocate_input *in,
                   struct allocate_result **out, char *err, size_t err_len)
{
    *out = NULL;
    if (err && err_len)
        err[0] = 0;
    int rc = options_check(opt, err, err_len);
    if (!rc && opt->strategy == ALLOCATE_CONFIG) {
        rc = queues_check(in->queues, in->n_queues, "queues", err, err_len);
        if (!rc)
            rc = strings_check(in->consumers, in->n_consumers, "consumers", err, err_len);
    } else if (!rc) {
        rc = input_check(in, err, err_len);
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
    rc = group_sort_inputs(r, in);
    if (!rc)
        rc = opt->strategy == ALLOCATE_CONFIG ? group_config(r, opt, err, err_len)
                                              : group_plan(r, opt, err, err_len);
    if (!rc)
        rc = group_owners(r);
    if (rc) {
        if (rc == RMQ_ENOMEM)
            allocate_fail(err, err_len, rc, "out of memory");
        allocate_result_free(r);
        return rc;
    }
    *out = r;
    return 0;
}
