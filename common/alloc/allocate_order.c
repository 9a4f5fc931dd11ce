/* allocate_order.c — the orders the Java client sorts by: String.compareTo
 * (UTF-16 code units) for consumer ids and names, MessageQueue.compareTo for
 * queues, plus the fast paths allocate_group() sorts its inputs with (a
 * multikey quicksort for ASCII ids, a packed radix sort for queues) that
 * must give exactly the comparison sort's order. Pure; any thread.
 */
#include "allocate_order.h"

#include "err.h"
#include "mem.h"

#include <stdlib.h>
#include <string.h>

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
int allocate_sort_queues_packed(const struct allocate_queue *q, size_t n, struct allocate_queue *out,
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
