/* test_sim_rebalance.c — the pure rebalance steps of a simulated client:
 * the subscribe set from a route (read permission only), the client's own
 * allocation from unsorted inputs (the protocol.md worked examples, CONFIG
 * per topic, and agreement with allocate_group for every strategy), and the
 * holdings diff (kept / added / removed / duplicates, failed allocations). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "sim_rebalance.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

static void test_mq_all_read_permission(void **state)
{
    (void)state;
    struct rmq_route_info_queue qd[] = {
        {(char *)"broker-a", 2, 6}, {(char *)"broker-w", 5, 2}, {(char *)"broker-b", 1, 4}};
    struct rmq_route_info r = {.queues = qd, .nqueues = 3};
    struct allocate_queue *q;
    size_t n;
    assert_int_equal(sim_rebalance_mq_all(&r, "T", &q, &n), RMQ_OK);
    assert_int_equal(
        n, 3); /* PROTOCOL: docs/protocol.md §8.2 perm & 4 only; write-only broker-w contributes nothing */
    assert_string_equal(q[0].broker_name, "broker-a"); /* sorted: broker, then queue id */
    assert_int_equal(q[1].queue_id, 1);
    assert_string_equal(q[2].broker_name, "broker-b");
    assert_string_equal(q[2].topic, "T");
    rmq_free(q);
    qd[0].read_queue_nums = SIM_REBALANCE_MAX_QUEUES;
    assert_int_equal(sim_rebalance_mq_all(&r, "T", &q, &n), RMQ_E2BIG);
}

/* "a0,a1" style rendering of an allocation. */
static void render(const struct allocate_queue *q, size_t n, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%c%d", i ? "," : "", q[i].broker_name[strlen(q[i].broker_name) - 1],
                 q[i].queue_id);
    }
}

static void alloc_for(enum allocate_strategy s, const char *self, const char *const *cids, size_t ncids,
                      char *out, size_t cap)
{
    /* broker-b before broker-a and queue ids reversed, sorted as a route's set is. */
    struct allocate_queue mq[8];
    for (int i = 0; i < 8; i++)
        mq[i] = (struct allocate_queue){"T", i < 4 ? "broker-b" : "broker-a", 3 - i % 4};
    allocate_sort_queues(mq, 8);
    struct allocate_options o;
    allocate_options_init(&o, s);
    struct allocate_queue *res;
    size_t n;
    char err[160];
    assert_int_equal(sim_rebalance_allocate(&o, "T", mq, 8, cids, ncids, self, &res, &n, err, sizeof err), 0);
    render(res, n, out, cap);
    rmq_free(res);
}

static void test_allocate_worked_examples(void **state)
{
    (void)state;
    const char *cids[] = {"c2", "c0", "c1"};
    char got[128];
    /* PROTOCOL: docs/protocol.md §11.3 and java.md: 2 brokers x 4 queues, 3 consumers. */
    alloc_for(ALLOCATE_AVG, "c0", cids, 3, got, sizeof got);
    assert_string_equal(got, "a0,a1,a2");
    alloc_for(ALLOCATE_AVG, "c1", cids, 3, got, sizeof got);
    assert_string_equal(got, "a3,b0,b1");
    alloc_for(ALLOCATE_AVG, "c2", cids, 3, got, sizeof got);
    assert_string_equal(got, "b2,b3");
    alloc_for(ALLOCATE_AVG_BY_CIRCLE, "c0", cids, 2, got, sizeof got); /* cids {c2, c0} */
    assert_string_equal(got, "a0,a2,b0,b2");
    alloc_for(ALLOCATE_AVG, "zz", cids, 3, got,
              sizeof got); /* PROTOCOL: docs/protocol.md §11.2 not in cidAll: nothing */
    assert_string_equal(got, "");
    assert_string_equal(cids[0], "c2"); /* the caller's id list is not reordered */
}

static void test_allocate_errors_and_config(void **state)
{
    (void)state;
    struct allocate_queue mq[] = {{"T", "broker-a", 0}};
    struct allocate_options o;
    allocate_options_init(&o, ALLOCATE_AVG);
    struct allocate_queue *res = NULL;
    size_t n;
    char err[160] = "";
    assert_int_equal(sim_rebalance_allocate(&o, "T", mq, 1, NULL, 0, "c0", &res, &n, err, sizeof err),
                     RMQ_EINVAL);
    assert_true(err[0] != '\0'); /* Java throws: the caller keeps its queues */

    struct allocate_queue conf[] = {{"T", "broker-a", 3}, {"U", "broker-a", 1}, {"T", "broker-b", 0}};
    allocate_options_init(&o, ALLOCATE_CONFIG);
    o.config = conf;
    o.n_config = 3;
    const char *cids[] = {"c0"};
    assert_int_equal(sim_rebalance_allocate(&o, "T", mq, 1, cids, 1, "c0", &res, &n, err, sizeof err), 0);
    assert_int_equal(n, 2); /* only this topic's configured queues */
    assert_int_equal(res[0].queue_id, 3);
    assert_string_equal(res[1].broker_name, "broker-b");
    rmq_free(res);
}

/* Each client's own view (sorted inputs, allocate_one) equals what
 * allocate_group computes for it, for every strategy. */
static void test_allocate_matches_group(void **state)
{
    (void)state;
    struct allocate_queue mq[24];
    const char *brokers[] = {"hz@broker-a-A", "sh@broker-b-B", "hz@broker-c-A"};
    for (int i = 0; i < 24; i++)
        mq[i] = (struct allocate_queue){"T", brokers[i % 3], (i * 7) % 8};
    const char *cids[] = {"10.0.0.5@7-B", "10.0.0.1@3-A", "10.0.0.9@1-A", "10.0.0.2@9-B", "10.0.0.3@4-C"};
    const char *idcs[] = {"hz"};
    for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
        struct allocate_options o;
        allocate_options_init(&o, (enum allocate_strategy)s);
        o.idcs = idcs;
        o.n_idcs = 1;
        o.rooms_by_rule = 1;
        o.config = mq + 3;
        o.n_config = 4;
        struct allocate_input in = {mq, 24, cids, 5};
        struct allocate_result *r;
        char err[160];
        assert_int_equal(allocate_group(&o, &in, &r, err, sizeof err), 0);
        for (size_t c = 0; c < 5; c++) {
            struct allocate_queue copy[24], *mine;
            size_t n, idx;
            memcpy(copy, mq, sizeof copy);
            allocate_sort_queues(copy, 24);
            assert_int_equal(
                sim_rebalance_allocate(&o, "T", copy, 24, cids, 5, cids[c], &mine, &n, err, sizeof err), 0);
            assert_int_equal(allocate_result_find(r, cids[c], &idx), 0);
            assert_int_equal(n, allocate_result_count_of(r, idx));
            for (size_t k = 0; k < n; k++)
                assert_int_equal(
                    allocate_queue_compare(&mine[k], &allocate_result_queues_of(r, idx)[k].queue), 0);
            rmq_free(mine);
        }
        allocate_result_free(r);
    }
}

struct diff_oom {
    const struct allocate_queue *old, *nw;
    struct sim_diff d;
};

static int diff_oom_run(void *ctx)
{
    struct diff_oom *x = ctx;
    return sim_diff_compute(x->old, 3, x->nw, 4, &x->d);
}

static void diff_oom_check(void *ctx, int rc)
{
    struct diff_oom *x = ctx;
    if (rc == RMQ_OK)
        sim_diff_clear(&x->d);
    else
        assert_null(x->d.added);
}

static void test_diff(void **state)
{
    (void)state;
    struct allocate_queue old[] = {{"T", "a", 0}, {"T", "a", 1}, {"T", "a", 2}};
    struct allocate_queue nw[] = {{"T", "a", 3}, {"T", "a", 1}, {"T", "a", 0}, {"T", "a", 3}};
    struct sim_diff d;
    assert_int_equal(sim_diff_compute(old, 3, nw, 4, &d), RMQ_OK);
    assert_true(sim_diff_changed(&d));
    assert_int_equal(d.nremoved, 1);
    assert_int_equal(d.removed[0], 2);
    assert_int_equal(d.nadded, 1);
    assert_int_equal(d.added[0], 0);
    assert_true(d.old_of_new[0] == SIM_DIFF_ADDED);
    assert_int_equal(d.old_of_new[1], 1);
    assert_int_equal(d.old_of_new[2], 0);
    assert_true(d.old_of_new[3] == SIM_DIFF_DUP);
    sim_diff_clear(&d);

    /* Same set in another order: no change (Java compares sets). */
    struct allocate_queue perm[] = {{"T", "a", 2}, {"T", "a", 0}, {"T", "a", 1}};
    assert_int_equal(sim_diff_compute(old, 3, perm, 3, &d), RMQ_OK);
    assert_false(sim_diff_changed(&d));
    assert_int_equal(d.old_of_new[0], 2);
    sim_diff_clear(&d);

    assert_int_equal(sim_diff_compute(NULL, 0, NULL, 0, &d), RMQ_OK);
    assert_false(sim_diff_changed(&d));
    sim_diff_clear(&d);
    assert_int_equal(sim_diff_compute(old, 3, NULL, 0, &d), RMQ_OK);
    assert_int_equal(d.nremoved, 3);
    sim_diff_clear(&d);
    sim_diff_clear(NULL);

    struct diff_oom x = {.old = old, .nw = nw};
    test_oom_loop(&(struct test_oom){.run = diff_oom_run, .check = diff_oom_check, .max = 100}, &x);
}

TEST_MAIN(cmocka_unit_test(test_mq_all_read_permission), cmocka_unit_test(test_allocate_worked_examples),
          cmocka_unit_test(test_allocate_errors_and_config), cmocka_unit_test(test_allocate_matches_group),
          cmocka_unit_test(test_diff))
