/* test_allocate_big.c — the whole-group path on big random groups, against
 * independent references: the sorted lists against qsort with the exact
 * Java comparators (allocate_queue_compare, allocate_string_compare), the
 * consumers' slices against allocate_one on the sorted lists (all of them in
 * small groups, an evenly spread sample in big ones), and the
 * CONSISTENT_HASH owners against a ring built through the hash_ring API
 * with each queue's toString() hashed in one piece. The groups are shaped to
 * reach every branch of the fast sorts: ASCII and non-ASCII ids (string
 * radix sort or comparator), ids that are prefixes of one another,
 * duplicated ids and queues, equal names behind distinct pointers, and a
 * queue key too wide to pack (comparison-sort fallback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "allocate.h"
#include "err.h"
#include "hash_ring.h"
#include "mem.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A big group. Strings live in one pool owned by the group. */
struct big {
    char *pool;
    size_t pool_len, pool_cap;
    struct allocate_queue *q;
    size_t nq;
    const char **c;
    size_t nc;
};

/* Shapes of the generated names. */
enum id_kind {
    IDS_ASCII,   /* "10.a.b.c@pid" style, some prefixes of others */
    IDS_UNICODE, /* pieces whose UTF-16 order differs from byte order */
};

static const char *pool_add(struct big *g, const char *s)
{
    size_t n = strlen(s) + 1;
    assert_true(g->pool_len + n <= g->pool_cap);
    char *p = g->pool + g->pool_len;
    memcpy(p, s, n);
    g->pool_len += n;
    return p;
}

static void rnd_id(char *buf, size_t len, enum id_kind kind, size_t j)
{
    static const char *pieces[] = {"a", "b", "\xc3\xa9", "\xef\xbd\xa6", "\xf0\x9f\x98\x80", "@", "0"};
    if (kind == IDS_UNICODE && test_rnd(2)) {
        size_t n = 0, k = 1 + test_rnd(6);
        buf[0] = 0;
        for (size_t i = 0; i < k; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s", pieces[test_rnd(7)]);
        snprintf(buf + n, len - n, "%zu", j % 50);
        return;
    }
    switch (test_rnd(4)) {
    case 0: /* short ids, many of them prefixes of longer ones */
        snprintf(buf, len, "10.0.%u", test_rnd(40));
        break;
    case 1: snprintf(buf, len, "10.0.%u.%u@%u", test_rnd(40), test_rnd(256), test_rnd(100000)); break;
    case 2:
        snprintf(buf, len, "10.0.%u.%u@%u#%u-hz", test_rnd(40), test_rnd(256), test_rnd(100000),
                 test_rnd(1000000));
        break;
    default: snprintf(buf, len, "%u", test_rnd(1000)); break;
    }
}

/* nc ids (about 1 in 20 a second copy of an earlier one) and nq queues over
 * n_brokers brokers of two topics. With spread_ids the queue ids cover the
 * whole int32 range; broker names are copied per queue when fresh_strings
 * is set (equal text, distinct pointers). */
static void big_make(struct big *g, size_t nc, size_t nq, enum id_kind kind, size_t n_brokers, int spread_ids,
                     int fresh_strings)
{
    memset(g, 0, sizeof *g);
    g->pool_cap = (nc + n_brokers + (fresh_strings ? nq : 0) + 8) * 64;
    g->pool = rmq_malloc(g->pool_cap);
    g->q = rmq_malloc(nq * sizeof *g->q);
    g->c = rmq_malloc(nc * sizeof *g->c);
    assert_non_null(g->pool);
    assert_non_null(g->q);
    assert_non_null(g->c);
    g->nq = nq, g->nc = nc;
    const char **brokers = rmq_malloc(n_brokers * sizeof *brokers);
    assert_non_null(brokers);
    for (size_t b = 0; b < n_brokers; b++) {
        char name[64];
        static const char *rooms[] = {"hz", "sh", "bj"};
        if (kind == IDS_UNICODE && b % 3 == 1)
            snprintf(name, sizeof name, "%s@b\xef\xbd\xa6%zu-%s", rooms[b % 3], b, rooms[b % 3]);
        else if (kind == IDS_UNICODE && b % 3 == 2)
            snprintf(name, sizeof name, "%s@b\xf0\x9f\x98\x80%zu-%s", rooms[b % 3], b, rooms[b % 3]);
        else
            snprintf(name, sizeof name, "%s@broker-%zu-%s", rooms[b % 3], b, rooms[b % 3]);
        brokers[b] = pool_add(g, name);
    }
    const char *topics[2] = {pool_add(g, "TopicBig"), pool_add(g, "TopicBig\xef\xbd\xa6")};
    for (size_t i = 0; i < nq; i++) {
        const char *br = brokers[test_rnd((uint32_t)n_brokers)];
        if (fresh_strings)
            br = pool_add(g, br);
        int32_t id =
            spread_ids ? (int32_t)((int64_t)test_rnd(UINT32_MAX) - INT32_MAX) : (int32_t)test_rnd(4096);
        if (spread_ids && i < 2)
            id = i ? INT32_MAX : INT32_MIN;
        g->q[i] = (struct allocate_queue){topics[test_rnd(8) == 0], br, id};
    }
    for (size_t j = 0; j < nc; j++) {
        char id[64], full[96];
        rnd_id(id, sizeof id, kind, j);
        snprintf(full, sizeof full, "%s-%s", id, j % 3 == 0 ? "hz" : j % 3 == 1 ? "sh" : "bj");
        g->c[j] = j && !test_rnd(20) ? g->c[test_rnd((uint32_t)j)] : pool_add(g, full);
    }
    rmq_free(brokers);
}

static void big_free(struct big *g)
{
    rmq_free(g->pool);
    rmq_free(g->q);
    rmq_free((void *)g->c);
}

static int ref_queue_cmp(const void *a, const void *b)
{
    return allocate_queue_compare(a, b);
}

static int ref_cid_cmp(const void *a, const void *b)
{
    return allocate_string_compare(*(const char *const *)a, *(const char *const *)b);
}

/* The result's sorted lists are what qsort with the exact comparators
 * gives. */
static void check_sorted(const struct big *g, const struct allocate_result *r)
{
    struct allocate_queue *q = rmq_malloc(g->nq * sizeof *q);
    const char **c = rmq_malloc(g->nc * sizeof *c);
    assert_non_null(q);
    assert_non_null(c);
    memcpy(q, g->q, g->nq * sizeof *q);
    memcpy((void *)c, g->c, g->nc * sizeof *c);
    qsort(q, g->nq, sizeof *q, ref_queue_cmp);
    qsort((void *)c, g->nc, sizeof *c, ref_cid_cmp);
    assert_int_equal(r->n_queues, g->nq);
    assert_int_equal(r->n_consumers, g->nc);
    for (size_t i = 0; i < g->nq; i++)
        if (allocate_queue_compare(&q[i], &r->queues[i]))
            fail_msg("queue %zu: %s/%s/%d, expected %s/%s/%d", i, r->queues[i].topic,
                     r->queues[i].broker_name, (int)r->queues[i].queue_id, q[i].topic, q[i].broker_name,
                     (int)q[i].queue_id);
    for (size_t j = 0; j < g->nc; j++)
        if (strcmp(c[j], r->consumers[j]))
            fail_msg("consumer %zu: %s, expected %s", j, r->consumers[j], c[j]);
    /* The public in-place sort agrees too. */
    memcpy((void *)c, g->c, g->nc * sizeof *c);
    allocate_sort_consumers(c, g->nc);
    for (size_t j = 0; j < g->nc; j++)
        assert_string_equal(c[j], r->consumers[j]);
    rmq_free(q);
    rmq_free((void *)c);
}

/* Consumer i's group slice equals allocate_one on the sorted lists, for
 * every consumer or every step-th one. */
static void check_slices(const struct allocate_options *o, const struct allocate_result *r, size_t step)
{
    struct allocate_input sorted = {r->queues, r->n_queues, r->consumers, r->n_consumers};
    for (size_t i = 0; i < r->n_consumers; i += step) {
        struct allocate_queue *res;
        size_t n;
        char err[200];
        if (allocate_one(o, &sorted, r->consumers[i], &res, &n, err, sizeof err))
            fail_msg("%s allocate_one(%s): %s", allocate_strategy_name(o->strategy), r->consumers[i], err);
        if (n != allocate_result_count_of(r, i))
            fail_msg("%s consumer %zu: %zu vs %zu queues", allocate_strategy_name(o->strategy), i, n,
                     allocate_result_count_of(r, i));
        const struct allocate_assignment *a = allocate_result_queues_of(r, i);
        for (size_t k = 0; k < n; k++) {
            if (allocate_queue_compare(&res[k], &a[k].queue))
                fail_msg("%s consumer %zu queue %zu differs", allocate_strategy_name(o->strategy), i, k);
            if (a[k].queue_index != ALLOCATE_NO_INDEX)
                assert_int_equal(allocate_queue_compare(&r->queues[a[k].queue_index], &a[k].queue), 0);
        }
        rmq_free(res);
    }
}

/* CONSISTENT_HASH owners against a ring built through the public API, the
 * queue keys hashed from the whole toString() text. */
static void check_ring_owners(const struct allocate_result *r, long vnodes)
{
    struct hash_ring *ring;
    assert_int_equal(hash_ring_new(&ring, r->n_consumers, r->n_consumers * (size_t)vnodes), 0);
    for (size_t j = 0; j < r->n_consumers; j++)
        assert_int_equal(hash_ring_add(ring, r->consumers[j], r->consumer_first[j], vnodes), 0);
    assert_int_equal(hash_ring_seal(ring), 0);
    for (size_t q = 0; q < r->n_queues; q++) {
        char text[512];
        int len = snprintf(text, sizeof text, "MessageQueue [topic=%s, brokerName=%s, queueId=%d]",
                           r->queues[q].topic, r->queues[q].broker_name, (int)r->queues[q].queue_id);
        assert_true(len > 0 && (size_t)len < sizeof text);
        size_t owner;
        assert_int_equal(hash_ring_lookup(ring, hash_ring_hash(text, (size_t)len), &owner), 0);
        /* Every copy of the owner's id holds the queue. */
        size_t found = 0;
        for (size_t k = r->owner_start[q]; k < r->owner_start[q + 1]; k++)
            found += r->consumer_first[r->owners[k]] == owner;
        if (!found || found != allocate_result_owner_count(r, q))
            fail_msg("queue %zu: ring owner %zu (%s) not its holder", q, owner, r->consumers[owner]);
    }
    hash_ring_free(ring);
}

static void run_group(const struct big *g, size_t slice_step_cheap, size_t slice_step_costly)
{
    for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
        struct allocate_options o;
        allocate_options_init(&o, (enum allocate_strategy)s);
        o.rooms_by_rule = 1;
        o.inner = s % 2 ? ALLOCATE_AVG_BY_CIRCLE : ALLOCATE_AVG;
        static const char *idcs[] = {"hz", "bj"};
        o.idcs = idcs, o.n_idcs = 2;
        o.config = g->q, o.n_config = g->nq < 5 ? g->nq : 5;
        o.virtual_nodes = 7;
        struct allocate_input in = {g->q, g->nq, g->c, g->nc};
        struct allocate_result *r;
        char err[200];
        if (allocate_group(&o, &in, &r, err, sizeof err))
            fail_msg("%s: %s", allocate_strategy_name(o.strategy), err);
        if (s == 0)
            check_sorted(g, r);
        /* allocate_one rebuilds the ring or the room index per call. */
        int costly = o.strategy == ALLOCATE_CONSISTENT_HASH || o.strategy == ALLOCATE_MACHINE_ROOM_NEARBY ||
                     o.strategy == ALLOCATE_MACHINE_ROOM;
        check_slices(&o, r, costly ? slice_step_costly : slice_step_cheap);
        if (o.strategy == ALLOCATE_CONSISTENT_HASH)
            check_ring_owners(r, o.virtual_nodes);
        size_t owned = 0;
        for (size_t q = 0; q < r->n_queues; q++)
            owned += allocate_result_owner_count(r, q);
        assert_int_equal(owned + r->n_foreign, r->n_assigned);
        allocate_result_free(r);
    }
}

static void test_big_ascii(void **state)
{
    (void)state;
    test_rng_state = 0x853c49e6748fea9bull;
    struct big g;
    big_make(&g, 3000, 40000, IDS_ASCII, 24, 0, 0);
    run_group(&g, 7, 97);
    big_free(&g);
}

static void test_big_unicode_fresh_strings(void **state)
{
    (void)state;
    test_rng_state = 0xda3e39cb94b95bdbull;
    struct big g;
    big_make(&g, 2000, 20000, IDS_UNICODE, 40, 0, 1);
    run_group(&g, 5, 61);
    big_free(&g);
}

/* 70,000 queues (17 index bits), full-range ids (32 bits) and 300 brokers
 * (2 x 9 rank bits): 67 bits, so the packed sort steps aside. */
static void test_big_wide_key(void **state)
{
    (void)state;
    test_rng_state = 0x9e3779b97f4a7c15ull;
    struct big g;
    big_make(&g, 500, 70000, IDS_ASCII, 300, 1, 0);
    run_group(&g, 7, 101);
    big_free(&g);
}

/* Many small groups: sizes around the string sort's small-range cutoff. */
static void test_many_small(void **state)
{
    (void)state;
    test_rng_state = 0x1234567887654321ull;
    for (int iter = 0; iter < 200; iter++) {
        struct big g;
        big_make(&g, 1 + test_rnd(40), 1 + test_rnd(200), iter % 2 ? IDS_UNICODE : IDS_ASCII, 1 + test_rnd(6),
                 iter % 3 == 0, iter % 5 == 0);
        run_group(&g, 1, 1);
        big_free(&g);
    }
}

TEST_MAIN(cmocka_unit_test(test_big_ascii), cmocka_unit_test(test_big_unicode_fresh_strings),
          cmocka_unit_test(test_big_wide_key), cmocka_unit_test(test_many_small))
