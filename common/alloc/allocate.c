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
    /* Two ASCII bytes (or the end) are whole code units on their own, the
     * common case for client ids and broker names: skip the decoder. */
    if (x[k] < 0x80 && y[k] < 0x80)
        return x[k] < y[k] ? -1 : 1;
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
    /* PROTOCOL: docs/protocol.md §11.1 topic, then brokerName, then queueId. */
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

/* ---- fast sorting ----------------------------------------------------- */

/* For ASCII strings UTF-16 order is byte order, so the consumer ids can go
 * through a string radix sort instead of a comparison sort; anything else
 * takes the exact comparator. */
static int all_ascii(const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (const unsigned char *p = (const unsigned char *)v[i]; *p; p++)
            if (*p >= 0x80)
                return 0;
    return 1;
}

static void str_swap(const char **v, size_t i, size_t j)
{
    const char *t = v[i];
    v[i] = v[j], v[j] = t;
}

static int bytes_qsort_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Bits needed to write v (0 for 0). */
static unsigned bit_width(uint64_t v)
{
    unsigned b = 0;
    for (; v; v >>= 1)
        b++;
    return b;
}

/* Multikey quicksort (Bentley & Sedgewick) of strings that share their first
 * d bytes, by bytes: each character is looked at about once instead of once
 * per comparison, which matters for ids with long common prefixes
 * ("10.0.3.x@..."). The largest part is iterated and the two others, each
 * at most half, recursed into, so the stack stays O(log n) whatever the
 * string lengths. Client ids come from clients, so bad pivots are bounded
 * as in introsort: after `budget` partitions at one depth the range goes to
 * qsort (the shared prefix does not change the byte order). */
static void mkqs(const char **v, size_t n, size_t d, unsigned budget)
{
    while (n > 1) {
        if (n < 12) {
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && strcmp(v[j - 1] + d, v[j] + d) > 0; j--)
                    str_swap(v, j, j - 1);
            return;
        }
        if (!budget--) {
            qsort((void *)v, n, sizeof *v, bytes_qsort_cmp);
            return;
        }
        unsigned char a = (unsigned char)v[0][d], b = (unsigned char)v[n / 2][d],
                      c = (unsigned char)v[n - 1][d];
        unsigned char p = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        size_t lt = 0, i = 0, gt = n;
        while (i < gt) {
            unsigned char ch = (unsigned char)v[i][d];
            if (ch < p)
                str_swap(v, lt++, i++);
            else if (ch > p)
                str_swap(v, i, --gt);
            else
                i++;
        }
        /* [0, lt) below p, [lt, gt) equal (done if p ends them), [gt, n) above.
         * The equal part moves on a byte, so it starts a fresh budget. */
        size_t n_lo = lt, n_eq = p ? gt - lt : 0, n_hi = n - gt;
        unsigned eq_budget = 2 * bit_width(n_eq);
        if (n_lo >= n_eq && n_lo >= n_hi) {
            mkqs(v + lt, n_eq, d + 1, eq_budget);
            mkqs(v + gt, n_hi, d, budget);
            n = n_lo;
        } else if (n_eq >= n_hi) {
            mkqs(v, n_lo, d, budget);
            mkqs(v + gt, n_hi, d, budget);
            v += lt, n = n_eq, d++, budget = eq_budget;
        } else {
            mkqs(v, n_lo, d, budget);
            mkqs(v + lt, n_eq, d + 1, eq_budget);
            v += gt, n = n_hi;
        }
    }
}

void allocate_sort_consumers(const char **consumers, size_t n)
{
    if (n < 2)
        return;
    if (all_ascii(consumers, n))
        mkqs(consumers, n, 0, 2 * bit_width(n));
    else
        qsort((void *)consumers, n, sizeof *consumers, cid_qsort_cmp);
}

/* Stable LSD radix sort of a by bits [lo, hi) (the bits below lo are
 * payload, those from hi up are zero); tmp has room for n. Digits where
 * every key agrees are skipped, so a key costs only the passes its spread
 * needs. */
static void radix_sort_u64(uint64_t *a, uint64_t *tmp, size_t n, unsigned lo, unsigned hi)
{
    uint64_t *src = a, *dst = tmp;
    for (unsigned shift = lo; shift < hi; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((src[i] >> shift) & 0xFF) + 1]++;
        if (count[((src[0] >> shift) & 0xFF) + 1] == n)
            continue;
        for (size_t k = 0; k < 256; k++)
            count[k + 1] += count[k];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xFF]++] = src[i];
        uint64_t *t = src;
        src = dst, dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* The distinct topic and broker-name strings of a queue list, each given
 * its rank in Java order, so that queues compare as small integers. Found
 * by pointer first (a route shares one string among its queues), then
 * strings with equal text share a rank. */
struct str_ranks {
    const char **ptr; /* open addressing by pointer value; NULL = empty */
    uint32_t *id;     /* slot -> distinct pointer number */
    size_t cap, n;
    const char **by_id; /* distinct pointers, in order of discovery */
    uint32_t *rank;     /* distinct pointer number -> rank */
    uint32_t n_ranks;
};

static size_t ptr_slot(const char *p, size_t cap)
{
    return (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int str_ranks_grow(struct str_ranks *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    const char **ptr = rmq_calloc(cap, sizeof *ptr);
    uint32_t *id = rmq_malloc(cap * sizeof *id);
    const char **by_id = rmq_realloc((void *)t->by_id, cap / 2 * sizeof *by_id);
    if (by_id)
        t->by_id = by_id;
    if (!ptr || !id || !by_id) {
        rmq_free((void *)ptr);
        rmq_free(id);
        return RMQ_ENOMEM;
    }
    for (size_t k = 0; k < t->n; k++) {
        size_t j = ptr_slot(t->by_id[k], cap);
        while (ptr[j])
            j = (j + 1) & (cap - 1);
        ptr[j] = t->by_id[k];
        id[j] = (uint32_t)k;
    }
    rmq_free((void *)t->ptr);
    rmq_free(t->id);
    t->ptr = ptr, t->id = id, t->cap = cap;
    return 0;
}

/* Distinct pointer number of s, adding it if new. Returns 0 or RMQ_ENOMEM. */
static int str_ranks_put(struct str_ranks *t, const char *s, uint32_t *out)
{
    if (2 * (t->n + 1) > t->cap && str_ranks_grow(t))
        return RMQ_ENOMEM;
    size_t j = ptr_slot(s, t->cap);
    while (t->ptr[j] && t->ptr[j] != s)
        j = (j + 1) & (t->cap - 1);
    if (!t->ptr[j]) {
        t->ptr[j] = s;
        t->id[j] = (uint32_t)t->n;
        t->by_id[t->n++] = s;
    }
    *out = t->id[j];
    return 0;
}

struct str_id {
    const char *s;
    uint32_t id;
};

static int str_id_cmp(const void *a, const void *b)
{
    return allocate_string_compare(((const struct str_id *)a)->s, ((const struct str_id *)b)->s);
}

/* Sorting the distinct pointers by their text gives each its rank. */
static int str_ranks_finish(struct str_ranks *t)
{
    struct str_id *v = rmq_malloc((t->n ? t->n : 1) * sizeof *v);
    t->rank = rmq_malloc((t->n ? t->n : 1) * sizeof *t->rank);
    if (!v || !t->rank) {
        rmq_free(v);
        return RMQ_ENOMEM;
    }
    for (size_t k = 0; k < t->n; k++)
        v[k] = (struct str_id){t->by_id[k], (uint32_t)k};
    qsort(v, t->n, sizeof *v, str_id_cmp);
    t->n_ranks = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (k && allocate_string_compare(v[k - 1].s, v[k].s))
            t->n_ranks++;
        t->rank[v[k].id] = t->n_ranks;
    }
    t->n_ranks++;
    rmq_free(v);
    return 0;
}

static void str_ranks_free(struct str_ranks *t)
{
    rmq_free((void *)t->ptr);
    rmq_free(t->id);
    rmq_free((void *)t->by_id);
    rmq_free(t->rank);
}

/* Writes q[0..n) into out in the client's order by packing each queue into
 * one integer (topic rank, broker rank, queue id offset, then its index) and
 * radix-sorting those. scratch has room for 2n keys. Returns 0, RMQ_ENOMEM,
 * or RMQ_E2BIG when the key does not fit 64 bits (say hundreds of distinct
 * names, ids spread over the whole int32 range and 100,000 queues): the
 * caller then takes the comparison sort. */
static int sort_queues_packed(const struct allocate_queue *q, size_t n, struct allocate_queue *out,
                              uint64_t *scratch)
{
    if (n > UINT32_MAX / 2)
        return RMQ_E2BIG; /* distinct pointer numbers are 32-bit */
    struct str_ranks t = {0};
    uint64_t *key = scratch, *tmp = scratch + n;
    int rc = RMQ_ENOMEM;
    int32_t qmin = INT32_MAX, qmax = INT32_MIN;
    /* The queues of one route share their topic string: remember the last
     * pointer of each field before asking the table. */
    const char *last_t = NULL, *last_b = NULL;
    uint32_t id_t = 0, id_b = 0;
    for (size_t i = 0; i < n; i++) {
        if (q[i].topic != last_t && str_ranks_put(&t, last_t = q[i].topic, &id_t))
            goto out;
        if (q[i].broker_name != last_b && str_ranks_put(&t, last_b = q[i].broker_name, &id_b))
            goto out;
        key[i] = (uint64_t)id_t << 32 | id_b; /* ranks are known only once all are seen */
        qmin = q[i].queue_id < qmin ? q[i].queue_id : qmin;
        qmax = q[i].queue_id > qmax ? q[i].queue_id : qmax;
    }
    if (str_ranks_finish(&t))
        goto out;
    unsigned rb = bit_width(t.n_ranks - 1), qb = bit_width((uint64_t)((int64_t)qmax - qmin)),
             ib = bit_width(n - 1);
    rc = RMQ_E2BIG;
    if (2 * rb + qb + ib > 64)
        goto out;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = t.rank[key[i] >> 32];
        k = k << rb | t.rank[key[i] & UINT32_MAX];
        k = k << qb | (uint64_t)((int64_t)q[i].queue_id - qmin);
        key[i] = k << ib | i;
    }
    radix_sort_u64(key, tmp, n, ib, 2 * rb + qb + ib);
    uint64_t mask = ib ? ((uint64_t)1 << ib) - 1 : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = q[key[i] & mask];
    rc = 0;
out:
    str_ranks_free(&t);
    return rc;
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
        /* PROTOCOL: docs/protocol.md §11.8 a negative virtual node count throws. */
        if (opt->virtual_nodes < 0)
            return allocate_fail(err, err_len, RMQ_EINVAL, "virtualNodes must not be negative (got %ld)",
                                 opt->virtual_nodes);
        return 0;
    default: return allocate_fail(err, err_len, RMQ_EINVAL, "unknown strategy %d", (int)opt->strategy);
    }
}

/* PROTOCOL: docs/protocol.md §11.2 check(): both lists non-empty (current_cid is checked by
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
        /* PROTOCOL: docs/protocol.md §11.5 ByConfig returns its list as-is, with no check. */
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
        /* PROTOCOL: docs/protocol.md §11.2 not in cidAll: an empty result, not an error. */
        rmq_free(pos);
        *out = res;
        return 0;
    }
    rc = allocate_plan_init(&plan, opt, in, NULL, err, err_len);
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
        sort_queues_packed(in->queues, r->n_queues, r->queues, (uint64_t *)(void *)r->assigned)) {
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
        if (!rc && in->n_consumers && opt->n_config > ALLOCATE_MAX_ASSIGNED / in->n_consumers)
            rc = allocate_fail(err, err_len, RMQ_E2BIG, "result too large: %zu consumers x %zu config queues",
                               in->n_consumers, opt->n_config);
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
    *out = r;
    return 0;
}
