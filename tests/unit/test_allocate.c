/* test_allocate.c — the allocation engine: the named seed examples, the
 * protocol.md §5.3–5.8 worked examples, the §5.2 edge cases, the Java string
 * order, and property tests over seeded random groups (coverage, whole group
 * == per consumer, input-order independence). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "allocate.h"
#include "err.h"
#include "mem.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "broker/id" of each queue joined by spaces (or just ids when every queue
 * is on broker "b"), so expectations read like the protocol tables. */
static const char *fmt_queues(const struct allocate_queue *q, size_t n)
{
    static char buf[4096];
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const char *sep = i ? " " : "";
        if (!strcmp(q[i].broker_name, "b"))
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d", sep, (int)q[i].queue_id);
        else
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s/%d", sep, q[i].broker_name,
                                    (int)q[i].queue_id);
    }
    return buf;
}

/* allocate_one for cid, formatted; "ERR" on error. */
static const char *one(const struct allocate_options *o, const struct allocate_input *in, const char *cid)
{
    struct allocate_queue *q;
    size_t n;
    char err[200];
    if (allocate_one(o, in, cid, &q, &n, err, sizeof err))
        return "ERR";
    const char *s = fmt_queues(q, n);
    rmq_free(q);
    return s;
}

/* Whole group: consumer i's list, formatted. */
static const char *group_of(const struct allocate_result *r, size_t i)
{
    static struct allocate_queue tmp[512];
    size_t n = allocate_result_count_of(r, i);
    assert_true(n <= 512);
    for (size_t k = 0; k < n; k++)
        tmp[k] = allocate_result_queues_of(r, i)[k].queue;
    return fmt_queues(tmp, n);
}

/* n queues 0..n-1 of topic T on broker "b". */
static void single_broker(struct allocate_queue *q, size_t n)
{
    for (size_t i = 0; i < n; i++)
        q[i] = (struct allocate_queue){"T", "b", (int32_t)i};
}

static const char *const cids5[] = {"c0", "c1", "c2", "c3", "c4"};

/* ---- seed examples (§5.3, §5.4) ------------------------------------- */

static void test_avg_seed(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    single_broker(q, 8);
    struct allocate_input in = {q, 8, cids5, 3};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_AVG);
    assert_string_equal(one(&o, &in, "c0"), "0 1 2");
    assert_string_equal(one(&o, &in, "c1"), "3 4 5");
    assert_string_equal(one(&o, &in, "c2"), "6 7");
    in.n_queues = 3, in.n_consumers = 5; /* more consumers than queues */
    assert_string_equal(one(&o, &in, "c0"), "0");
    assert_string_equal(one(&o, &in, "c2"), "2");
    assert_string_equal(one(&o, &in, "c3"), "");
    assert_string_equal(one(&o, &in, "c4"), "");
    in.n_queues = 1, in.n_consumers = 3; /* a retry topic */
    assert_string_equal(one(&o, &in, "c0"), "0");
    assert_string_equal(one(&o, &in, "c1"), "");
}

static void test_avg_two_brokers(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    for (int i = 0; i < 8; i++)
        q[i] = (struct allocate_queue){"T", i < 4 ? "a" : "b2", i % 4};
    struct allocate_input in = {q, 8, cids5, 3};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_AVG);
    assert_string_equal(one(&o, &in, "c0"), "a/0 a/1 a/2");
    assert_string_equal(one(&o, &in, "c1"), "a/3 b2/0 b2/1");
    assert_string_equal(one(&o, &in, "c2"), "b2/2 b2/3");
}

static void test_circle_seed(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    single_broker(q, 8);
    struct allocate_input in = {q, 8, cids5, 3};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_AVG_BY_CIRCLE);
    assert_string_equal(one(&o, &in, "c0"), "0 3 6");
    assert_string_equal(one(&o, &in, "c1"), "1 4 7");
    assert_string_equal(one(&o, &in, "c2"), "2 5");
    in.n_queues = 3, in.n_consumers = 5;
    assert_string_equal(one(&o, &in, "c2"), "2");
    assert_string_equal(one(&o, &in, "c3"), "");
}

/* The whole group gives the same lists from unsorted input. */
static void test_group_seed_unsorted(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    single_broker(q, 8);
    struct allocate_queue tmp = q[0];
    q[0] = q[7], q[7] = tmp;
    tmp = q[2], q[2] = q[5], q[5] = tmp;
    const char *cids[] = {"c2", "c0", "c1"};
    struct allocate_input in = {q, 8, cids, 3};
    struct allocate_options o;
    struct allocate_result *r;
    allocate_options_init(&o, ALLOCATE_AVG);
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    assert_string_equal(r->consumers[0], "c0");
    assert_string_equal(group_of(r, 0), "0 1 2");
    assert_string_equal(group_of(r, 1), "3 4 5");
    assert_string_equal(group_of(r, 2), "6 7");
    assert_int_equal(r->n_unassigned, 0);
    assert_int_equal(r->n_overlapping, 0);
    size_t idx;
    assert_int_equal(allocate_result_find(r, "c1", &idx), 0);
    assert_int_equal(idx, 1);
    assert_int_equal(allocate_result_find(r, "zz", &idx), RMQ_ENOTFOUND);
    allocate_result_free(r);
    allocate_options_init(&o, ALLOCATE_AVG_BY_CIRCLE);
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    assert_string_equal(group_of(r, 0), "0 3 6");
    assert_string_equal(group_of(r, 1), "1 4 7");
    assert_string_equal(group_of(r, 2), "2 5");
    allocate_result_free(r);
}

/* ---- CONFIG (§5.5) ---------------------------------------------------- */

static void test_config(void **state)
{
    (void)state;
    struct allocate_queue q[4], cfg[2] = {{"T", "b", 3}, {"X", "b", 9}};
    single_broker(q, 4);
    struct allocate_input in = {q, 4, cids5, 2};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_CONFIG);
    o.config = cfg, o.n_config = 2;
    assert_string_equal(one(&o, &in, "c0"), "3 9");
    assert_string_equal(one(&o, &in, "nobody"), "3 9"); /* no check at all */
    struct allocate_input empty = {NULL, 0, NULL, 0};
    assert_string_equal(one(&o, &empty, NULL), "3 9");
    struct allocate_result *r;
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    assert_string_equal(group_of(r, 1), "3 9");
    assert_int_equal(r->n_foreign, 2); /* X/9 is not in the list, twice */
    assert_int_equal(allocate_result_owner_count(r, 3), 2);
    assert_int_equal(r->n_overlapping, 1);
    assert_int_equal(r->n_unassigned, 3);
    allocate_result_free(r);
    assert_int_equal(allocate_group(&o, &empty, &r, NULL, 0), 0);
    assert_int_equal(r->n_assigned, 0);
    allocate_result_free(r);
}

/* ---- MACHINE_ROOM (§5.6) ---------------------------------------------- */

static void test_machine_room_example(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    for (int i = 0; i < 8; i++)
        q[i] = (struct allocate_queue){"T", i < 4 ? "hz@broker-a" : "sh@broker-b", i % 4};
    const char *idcs[] = {"hz"};
    struct allocate_input in = {q, 8, cids5, 3};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_MACHINE_ROOM);
    o.idcs = idcs, o.n_idcs = 1;
    assert_string_equal(one(&o, &in, "c0"), "hz@broker-a/0 hz@broker-a/3");
    assert_string_equal(one(&o, &in, "c1"), "hz@broker-a/1");
    assert_string_equal(one(&o, &in, "c2"), "hz@broker-a/2");
    struct allocate_result *r;
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    assert_int_equal(r->n_unassigned, 4); /* the sh queues */
    assert_int_equal(r->unassigned[0], 4);
    allocate_result_free(r);
}

/* Java split("@") drops trailing empty parts; exactly two parts qualify. */
static void test_machine_room_split(void **state)
{
    (void)state;
    struct allocate_queue q[] = {
        {"T", "hz@b@", 0}, {"T", "hz@@b", 1},  {"T", "@x", 2}, {"T", "hz", 3},
        {"T", "hz@", 4},   {"T", "hz@b@@", 5}, {"T", "@", 6},  {"T", "hzz@b", 7},
    };
    const char *idcs[] = {"", "hz"};
    const char *c1[] = {"c"};
    struct allocate_input in = {q, 8, c1, 1};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_MACHINE_ROOM);
    o.idcs = idcs, o.n_idcs = 2;
    assert_string_equal(one(&o, &in, "c"), "hz@b@/0 @x/2 hz@b@@/5");
    o.n_idcs = 0; /* empty set: nothing */
    assert_string_equal(one(&o, &in, "c"), "");
}

/* ---- MACHINE_ROOM_NEARBY (§5.7) --------------------------------------- */

static void nearby_queues(struct allocate_queue *q, const char *ba, const char *bb)
{
    for (int i = 0; i < 8; i++)
        q[i] = (struct allocate_queue){"T", i < 4 ? ba : bb, i % 4};
}

static void test_nearby_example_maps(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    nearby_queues(q, "ba", "bb");
    const char *cids[] = {"A-c1", "A-c2", "C-c3"};
    struct allocate_room br[] = {{"ba", "A"}, {"bb", "B"}};
    struct allocate_room cr[] = {{"A-c1", "A"}, {"A-c2", "A"}, {"C-c3", "C"}};
    struct allocate_input in = {q, 8, cids, 3};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_MACHINE_ROOM_NEARBY);
    o.broker_rooms = br, o.n_broker_rooms = 2, o.consumer_rooms = cr, o.n_consumer_rooms = 3;
    assert_string_equal(one(&o, &in, "A-c1"), "ba/0 ba/1 bb/0 bb/1");
    assert_string_equal(one(&o, &in, "A-c2"), "ba/2 ba/3 bb/2");
    assert_string_equal(one(&o, &in, "C-c3"), "bb/3");
    o.inner = ALLOCATE_AVG_BY_CIRCLE;
    assert_string_equal(one(&o, &in, "A-c1"), "ba/0 ba/2 bb/0 bb/3");
    assert_string_equal(one(&o, &in, "C-c3"), "bb/2");
    /* A repeated map entry: the last one wins. */
    struct allocate_room cr2[] = {{"A-c1", "A"}, {"A-c2", "B"}, {"C-c3", "C"}, {"A-c2", "A"}};
    o.inner = ALLOCATE_AVG, o.consumer_rooms = cr2, o.n_consumer_rooms = 4;
    assert_string_equal(one(&o, &in, "A-c2"), "ba/2 ba/3 bb/2");
}

static void test_nearby_example_rule(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    nearby_queues(q, "broker-a-A", "broker-b-B");
    const char *cids[] = {"c3-C", "c1-A", "c2-A"};
    struct allocate_input in = {q, 8, cids, 3};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_MACHINE_ROOM_NEARBY);
    o.rooms_by_rule = 1;
    struct allocate_result *r;
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    assert_string_equal(group_of(r, 0), "broker-a-A/0 broker-a-A/1 broker-b-B/0 broker-b-B/1");
    assert_string_equal(group_of(r, 1), "broker-a-A/2 broker-a-A/3 broker-b-B/2");
    assert_string_equal(group_of(r, 2), "broker-b-B/3");
    assert_int_equal(r->n_unassigned + r->n_overlapping, 0);
    allocate_result_free(r);
    assert_string_equal(allocate_room_by_rule("10.0.0.1@123-hz"), "hz");
    assert_null(allocate_room_by_rule("broker"));
    assert_null(allocate_room_by_rule("broker-"));
    assert_null(allocate_room_by_rule(NULL));
}

static void test_nearby_errors(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    nearby_queues(q, "ba", "bb");
    const char *cids[] = {"c1", "c2"};
    struct allocate_room br[] = {{"ba", "A"}, {"bb", ""}};
    struct allocate_room cr[] = {{"c1", "A"}, {"c2", "A"}};
    struct allocate_input in = {q, 8, cids, 2};
    struct allocate_options o;
    struct allocate_queue *res;
    size_t n;
    char err[200];
    allocate_options_init(&o, ALLOCATE_MACHINE_ROOM_NEARBY);
    o.broker_rooms = br, o.n_broker_rooms = 2, o.consumer_rooms = cr, o.n_consumer_rooms = 2;
    assert_int_equal(allocate_one(&o, &in, "c1", &res, &n, err, sizeof err), RMQ_EINVAL);
    assert_non_null(strstr(err, "brokerName=bb, queueId=0"));
    br[1].room = "B", o.n_consumer_rooms = 1; /* c2 has no room */
    assert_int_equal(allocate_one(&o, &in, "c1", &res, &n, err, sizeof err), RMQ_EINVAL);
    assert_non_null(strstr(err, "consumer id c2"));
    /* A consumer not in the list returns empty before any room lookup. */
    assert_int_equal(allocate_one(&o, &in, "zz", &res, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    rmq_free(res);
    struct allocate_result *r;
    assert_int_equal(allocate_group(&o, &in, &r, err, sizeof err), RMQ_EINVAL);
    assert_null(r);
    o.rooms_by_rule = 1; /* "ba" has no '-' */
    assert_int_equal(allocate_group(&o, &in, &r, err, sizeof err), RMQ_EINVAL);
    o.inner = ALLOCATE_CONSISTENT_HASH;
    assert_int_equal(allocate_one(&o, &in, "c1", &res, &n, err, sizeof err), RMQ_EINVAL);
    assert_non_null(strstr(err, "inner"));
}

/* ---- CONSISTENT_HASH (§5.8) ------------------------------------------- */

static void test_consistent_hash_table(void **state)
{
    (void)state;
    struct allocate_queue q[8];
    for (int i = 0; i < 8; i++)
        q[i] = (struct allocate_queue){"TopicTest", "broker-a", i};
    const char *cids[] = {"192.168.0.1@1001", "192.168.0.2@1002", "192.168.0.3@1003"};
    struct allocate_input in = {q, 8, cids, 3};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_CONSISTENT_HASH);
    assert_int_equal(o.virtual_nodes, 10);
    assert_string_equal(one(&o, &in, cids[0]), "broker-a/2 broker-a/5");
    assert_string_equal(one(&o, &in, cids[1]), "");
    assert_string_equal(one(&o, &in, cids[2]),
                        "broker-a/0 broker-a/1 broker-a/3 broker-a/4 broker-a/6 broker-a/7");
    struct allocate_result *r;
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    static const size_t owner[8] = {2, 2, 0, 2, 2, 0, 2, 2};
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(allocate_result_owner_count(r, i), 1);
        assert_int_equal(r->owners[r->owner_start[i]], owner[i]);
    }
    allocate_result_free(r);
    o.virtual_nodes = 0; /* an empty ring: nobody */
    assert_string_equal(one(&o, &in, cids[2]), "");
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    assert_int_equal(r->n_unassigned, 8);
    allocate_result_free(r);
    o.virtual_nodes = -1;
    assert_string_equal(one(&o, &in, cids[2]), "ERR");
    o.virtual_nodes = 1L << 30;
    struct allocate_queue *res;
    size_t n;
    assert_int_equal(allocate_one(&o, &in, cids[0], &res, &n, NULL, 0), RMQ_E2BIG);
}

/* ---- §5.2 edge cases -------------------------------------------------- */

static void test_check_errors(void **state)
{
    (void)state;
    struct allocate_queue q[2];
    single_broker(q, 2);
    struct allocate_options o;
    struct allocate_queue *res;
    size_t n;
    char err[200];
    for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
        if (s == ALLOCATE_CONFIG)
            continue;
        allocate_options_init(&o, (enum allocate_strategy)s);
        o.rooms_by_rule = 1;
        struct allocate_input in = {q, 2, cids5, 2}, noq = {q, 0, cids5, 2}, noc = {q, 2, cids5, 0};
        assert_int_equal(allocate_one(&o, &in, "", &res, &n, err, sizeof err), RMQ_EINVAL);
        assert_int_equal(allocate_one(&o, &in, NULL, &res, &n, err, sizeof err), RMQ_EINVAL);
        assert_int_equal(allocate_one(&o, &noq, "c0", &res, &n, err, sizeof err), RMQ_EINVAL);
        assert_non_null(strstr(err, "mqAll"));
        assert_int_equal(allocate_one(&o, &noc, "c0", &res, &n, err, sizeof err), RMQ_EINVAL);
        assert_non_null(strstr(err, "cidAll"));
        struct allocate_result *r;
        assert_int_equal(allocate_group(&o, &noq, &r, err, sizeof err), RMQ_EINVAL);
        assert_int_equal(allocate_group(&o, &noc, &r, err, sizeof err), RMQ_EINVAL);
        const char *blank[] = {"c0", ""};
        struct allocate_input bl = {q, 2, blank, 2};
        assert_int_equal(allocate_group(&o, &bl, &r, err, sizeof err), RMQ_EINVAL);
        /* Not in cidAll: empty, not an error. */
        assert_int_equal(allocate_one(&o, &in, "zz", &res, &n, err, sizeof err), 0);
        assert_int_equal(n, 0);
        assert_non_null(res);
        rmq_free(res);
        /* NULL strings are refused, never dereferenced. */
        struct allocate_queue nq[1] = {{NULL, "b", 0}};
        struct allocate_input bad = {nq, 1, cids5, 2};
        assert_int_equal(allocate_one(&o, &bad, "c0", &res, &n, err, sizeof err), RMQ_EINVAL);
        const char *nc[] = {"c0", NULL};
        struct allocate_input bad2 = {q, 2, nc, 2};
        assert_int_equal(allocate_group(&o, &bad2, &r, err, sizeof err), RMQ_EINVAL);
    }
    allocate_options_init(&o, ALLOCATE_AVG);
    o.strategy = (enum allocate_strategy)42;
    struct allocate_input in = {q, 2, cids5, 2};
    assert_int_equal(allocate_one(&o, &in, "c0", &res, &n, err, sizeof err), RMQ_EINVAL);
}

/* Duplicated ids: every copy takes the first occurrence's index, so the
 * second copy's share goes unconsumed and the first's is consumed twice. */
static void test_duplicate_consumers(void **state)
{
    (void)state;
    struct allocate_queue q[6];
    single_broker(q, 6);
    const char *cids[] = {"b", "a", "a"};
    struct allocate_input in = {q, 6, cids, 3};
    struct allocate_options o;
    struct allocate_result *r;
    allocate_options_init(&o, ALLOCATE_AVG);
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    assert_int_equal(r->consumer_first[1], 0);
    assert_string_equal(group_of(r, 0), "0 1");
    assert_string_equal(group_of(r, 1), "0 1");
    assert_string_equal(group_of(r, 2), "4 5");
    assert_int_equal(r->n_unassigned, 2);
    assert_int_equal(r->n_overlapping, 2);
    assert_int_equal(allocate_result_owner_count(r, 0), 2);
    size_t idx;
    assert_int_equal(allocate_result_find(r, "a", &idx), 0);
    assert_int_equal(idx, 0);
    allocate_result_free(r);
    const char *sorted[] = {"a", "a", "b"};
    in.consumers = sorted;
    assert_string_equal(one(&o, &in, "a"), "0 1");
    allocate_options_init(&o, ALLOCATE_CONSISTENT_HASH); /* replicas 10..19 the second time */
    assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
    char first[256];
    snprintf(first, sizeof first, "%s", group_of(r, 0));
    assert_string_equal(first, one(&o, &in, "a"));
    assert_string_equal(group_of(r, 1), first);
    assert_int_equal(r->n_unassigned, 0);
    allocate_result_free(r);
}

/* ---- Java string order ------------------------------------------------ */

static void test_string_order(void **state)
{
    (void)state;
    assert_true(allocate_string_compare("a", "b") < 0);
    assert_true(allocate_string_compare("ab", "a") > 0);
    assert_int_equal(allocate_string_compare("", ""), 0);
    assert_int_equal(allocate_string_compare("x\xc3\xa9", "x\xc3\xa9"), 0);
    /* U+FF66 (one unit 0xFF66) sorts after U+1F600 (units D83D DE00), the
     * reverse of UTF-8 byte order. */
    const char *half = "k\xef\xbd\xa6", *emoji = "k\xf0\x9f\x98\x80";
    assert_true(strcmp(half, emoji) < 0);
    assert_true(allocate_string_compare(half, emoji) > 0);
    assert_true(allocate_string_compare(emoji, half) < 0);
    assert_true(allocate_string_compare("k\xf0\x9f\x98\x80", "k\xf0\x9f\x98\x81") < 0); /* low surrogate */
    assert_true(allocate_string_compare("\xed\x9f\xbf", emoji) > 0);                    /* U+D7FF vs D83D */
    const char *ids[] = {half, "k", emoji, "kz"};
    allocate_sort_consumers(ids, 4);
    assert_string_equal(ids[0], "k");
    assert_string_equal(ids[1], "kz");
    assert_ptr_equal(ids[2], emoji);
    assert_ptr_equal(ids[3], half);
    /* Ill-formed bytes still give a total, antisymmetric order. */
    const char *bad[] = {"\xff",     "\xfe",         "\xc3",      "\x80",
                         "\xef\xbd", "\xf0\x9f\x98", "a\x80\x80", "\xef\xbd\xa6"};
    for (size_t i = 0; i < 8; i++)
        for (size_t j = 0; j < 8; j++) {
            int c = allocate_string_compare(bad[i], bad[j]), d = allocate_string_compare(bad[j], bad[i]);
            assert_true((c > 0) - (c < 0) == -((d > 0) - (d < 0)));
            assert_true((c == 0) == (i == j));
        }
}

static void test_queue_order_and_names(void **state)
{
    (void)state;
    struct allocate_queue q[] = {{"T2", "a", 0}, {"T1", "b", 1}, {"T1", "b", -3}, {"T1", "a", 9}};
    allocate_sort_queues(q, 4);
    assert_string_equal(fmt_queues(q, 4), "a/9 -3 1 a/0");
    for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
        enum allocate_strategy back;
        assert_int_equal(allocate_strategy_parse(allocate_strategy_name((enum allocate_strategy)s), &back),
                         0);
        assert_int_equal(back, s);
    }
    enum allocate_strategy back;
    assert_int_equal(allocate_strategy_parse("avg", &back), RMQ_EINVAL);
    assert_int_equal(allocate_strategy_parse(NULL, &back), RMQ_EINVAL);
    assert_string_equal(allocate_strategy_name((enum allocate_strategy)99), "?");
}

/* ---- properties over seeded random groups ------------------------------ */

/* Random names from pieces that include non-BMP and high-BMP characters,
 * so the UTF-16 order differs from byte order. */
static void rnd_name(char *buf, size_t len, const char *suffix)
{
    static const char *pieces[] = {
        "a", "b", "z", "0", "9", ".", "@", "\xc3\xa9", "\xef\xbd\xa6", "\xf0\x9f\x98\x80"};
    size_t n = 0, k = 1 + test_rnd(4);
    buf[0] = 0;
    for (size_t i = 0; i < k; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s", pieces[test_rnd(10)]);
    snprintf(buf + n, len - n, "%s", suffix);
}

struct rgroup {
    char qnames[64][48], cnames[40][48];
    struct allocate_queue q[64], cfg[4];
    const char *c[40];
    size_t nq, nc;
    const char *idcs[3];
};

/* A random group; rooms (for NEARBY by rule) end every name; MACHINE_ROOM
 * style names for half of the brokers. */
static void rgroup_make(struct rgroup *g, int allow_dups)
{
    static const char *rooms[] = {"-R1", "-R2", "-R3", "-R4"};
    size_t nb = 1 + test_rnd(5);
    g->nq = 1 + test_rnd(64);
    g->nc = 1 + test_rnd(40);
    for (size_t b = 0; b < nb; b++) {
        if (test_rnd(2))
            snprintf(g->qnames[b], sizeof g->qnames[b], "%s@x%zu%s", rooms[test_rnd(4)] + 1, b,
                     rooms[test_rnd(4)]);
        else
            rnd_name(g->qnames[b], sizeof g->qnames[b], rooms[test_rnd(4)]);
    }
    for (size_t i = 0; i < g->nq; i++)
        g->q[i] = (struct allocate_queue){test_rnd(4) ? "T" : "\xf0\x9f\x98\x80T",
                                          g->qnames[test_rnd((uint32_t)nb)], (int32_t)test_rnd(16)};
    for (size_t j = 0; j < g->nc; j++) {
        char sfx[32];
        snprintf(sfx, sizeof sfx, "@%zu%s", j, rooms[test_rnd(4)]);
        rnd_name(g->cnames[j], sizeof g->cnames[j], sfx);
        g->c[j] = allow_dups && j && !test_rnd(5) ? g->c[test_rnd((uint32_t)j)] : g->cnames[j];
    }
    g->idcs[0] = "R1", g->idcs[1] = "R3", g->idcs[2] = "";
    for (size_t k = 0; k < 4; k++) /* CONFIG's own list, partly foreign */
        g->cfg[k] = k < 2 ? g->q[test_rnd((uint32_t)g->nq)] : (struct allocate_queue){"X", "y", (int32_t)k};
}

static void rgroup_options(struct allocate_options *o, enum allocate_strategy s, const struct rgroup *g)
{
    allocate_options_init(o, s);
    o->virtual_nodes = 1 + test_rnd(20);
    o->inner = test_rnd(2) ? ALLOCATE_AVG : ALLOCATE_AVG_BY_CIRCLE;
    o->rooms_by_rule = 1;
    o->idcs = g->idcs, o->n_idcs = test_rnd(4);
    o->config = g->cfg, o->n_config = test_rnd(5);
}

/* Random queue duplicates would break "exactly once" trivially; drop them. */
static void rgroup_dedupe_queues(struct rgroup *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->nq; i++) {
        size_t k = 0;
        while (k < n && allocate_queue_compare(&g->q[k], &g->q[i]))
            k++;
        if (k == n)
            g->q[n++] = g->q[i];
    }
    g->nq = n;
}

static void test_property_coverage(void **state)
{
    (void)state;
    static const enum allocate_strategy covering[] = {ALLOCATE_AVG, ALLOCATE_AVG_BY_CIRCLE,
                                                      ALLOCATE_MACHINE_ROOM_NEARBY, ALLOCATE_CONSISTENT_HASH};
    test_rng_state = 0x9e3779b97f4a7c15ull;
    for (int iter = 0; iter < 400; iter++) {
        struct rgroup g;
        rgroup_make(&g, 0);
        rgroup_dedupe_queues(&g);
        for (size_t s = 0; s < 4; s++) {
            struct allocate_options o;
            struct allocate_result *r;
            rgroup_options(&o, covering[s], &g);
            struct allocate_input in = {g.q, g.nq, g.c, g.nc};
            assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
            if (r->n_unassigned || r->n_overlapping)
                fail_msg("iteration %d strategy %s: %zu unassigned, %zu overlapping", iter,
                         allocate_strategy_name(covering[s]), r->n_unassigned, r->n_overlapping);
            for (size_t q = 0; q < r->n_queues; q++)
                assert_int_equal(allocate_result_owner_count(r, q), 1);
            assert_int_equal(r->n_assigned, g.nq);
            allocate_result_free(r);
        }
    }
}

/* Shuffles the input lists in place. */
static void rgroup_shuffle(struct rgroup *g)
{
    for (size_t i = g->nq; i > 1; i--) {
        size_t j = test_rnd((uint32_t)i);
        struct allocate_queue t = g->q[i - 1];
        g->q[i - 1] = g->q[j], g->q[j] = t;
    }
    for (size_t i = g->nc; i > 1; i--) {
        size_t j = test_rnd((uint32_t)i);
        const char *t = g->c[i - 1];
        g->c[i - 1] = g->c[j], g->c[j] = t;
    }
}

static void assert_same_result(const struct allocate_result *a, const struct allocate_result *b)
{
    assert_int_equal(a->n_assigned, b->n_assigned);
    assert_int_equal(a->n_consumers, b->n_consumers);
    for (size_t i = 0; i < a->n_consumers; i++) {
        assert_string_equal(a->consumers[i], b->consumers[i]);
        assert_int_equal(allocate_result_count_of(a, i), allocate_result_count_of(b, i));
        for (size_t k = 0; k < allocate_result_count_of(a, i); k++)
            assert_int_equal(allocate_queue_compare(&allocate_result_queues_of(a, i)[k].queue,
                                                    &allocate_result_queues_of(b, i)[k].queue),
                             0);
    }
}

static void test_property_group_equals_one(void **state)
{
    (void)state;
    test_rng_state = 0x243f6a8885a308d3ull;
    for (int iter = 0; iter < 300; iter++) {
        struct rgroup g;
        rgroup_make(&g, 1);
        for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
            struct allocate_options o;
            struct allocate_result *r, *r2;
            rgroup_options(&o, (enum allocate_strategy)s, &g);
            struct allocate_input in = {g.q, g.nq, g.c, g.nc};
            assert_int_equal(allocate_group(&o, &in, &r, NULL, 0), 0);
            struct allocate_input sorted = {r->queues, r->n_queues, r->consumers, r->n_consumers};
            size_t owned = 0;
            for (size_t i = 0; i < r->n_consumers; i++) {
                struct allocate_queue *res;
                size_t n;
                assert_int_equal(allocate_one(&o, &sorted, r->consumers[i], &res, &n, NULL, 0), 0);
                if (n != allocate_result_count_of(r, i))
                    fail_msg("iteration %d %s consumer %zu: %zu vs %zu queues", iter,
                             allocate_strategy_name(o.strategy), i, n, allocate_result_count_of(r, i));
                for (size_t k = 0; k < n; k++)
                    assert_int_equal(
                        allocate_queue_compare(&res[k], &allocate_result_queues_of(r, i)[k].queue), 0);
                rmq_free(res);
            }
            for (size_t q = 0; q < r->n_queues; q++)
                owned += allocate_result_owner_count(r, q);
            assert_int_equal(owned + r->n_foreign, r->n_assigned);
            rgroup_shuffle(&g); /* input order must not matter */
            struct allocate_input in2 = {g.q, g.nq, g.c, g.nc};
            assert_int_equal(allocate_group(&o, &in2, &r2, NULL, 0), 0);
            assert_same_result(r, r2);
            allocate_result_free(r2);
            allocate_result_free(r);
        }
    }
}

struct one_oom {
    const struct allocate_options *o;
    const struct allocate_input *in;
    const char *cid;
    struct allocate_queue *res;
};

static int one_oom_run(void *ctx)
{
    struct one_oom *x = ctx;
    size_t cnt;
    x->res = NULL;
    return allocate_one(x->o, x->in, x->cid, &x->res, &cnt, NULL, 0);
}

static void one_oom_check(void *ctx, int rc)
{
    (void)rc;
    rmq_free(((struct one_oom *)ctx)->res);
}

/* Fail each allocation of allocate_one in turn for every strategy. */
static void test_one_oom(void **state)
{
    (void)state;
    test_rng_state = 7;
    struct rgroup g;
    rgroup_make(&g, 1);
    for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
        struct allocate_options o;
        rgroup_options(&o, (enum allocate_strategy)s, &g);
        struct allocate_input in = {g.q, g.nq, g.c, g.nc};
        struct one_oom x = {&o, &in, g.c[0], NULL};
        test_oom_loop(&(struct test_oom){.run = one_oom_run, .check = one_oom_check, .max = 1000}, &x);
    }
}

TEST_MAIN(cmocka_unit_test(test_avg_seed), cmocka_unit_test(test_avg_two_brokers),
          cmocka_unit_test(test_circle_seed), cmocka_unit_test(test_group_seed_unsorted),
          cmocka_unit_test(test_config), cmocka_unit_test(test_machine_room_example),
          cmocka_unit_test(test_machine_room_split), cmocka_unit_test(test_nearby_example_maps),
          cmocka_unit_test(test_nearby_example_rule), cmocka_unit_test(test_nearby_errors),
          cmocka_unit_test(test_consistent_hash_table), cmocka_unit_test(test_check_errors),
          cmocka_unit_test(test_duplicate_consumers), cmocka_unit_test(test_string_order),
          cmocka_unit_test(test_queue_order_and_names), cmocka_unit_test(test_property_coverage),
          cmocka_unit_test(test_property_group_equals_one), cmocka_unit_test(test_one_oom))
