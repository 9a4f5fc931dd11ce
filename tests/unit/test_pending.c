/* test_pending.c — server/core/pending.c: exactly-once callbacks, matching,
 * deadlines, dropping a connection, the per-connection bound, callbacks that
 * add requests, a random sequence against a plain model, and failed
 * allocations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "pending.h"
#include "test_support.h"

#include <string.h>

#define NCTX 512

struct rec {
    int calls[NCTX];    /* per ctx index: how many times its callback ran */
    int answered[NCTX]; /* ...with a response */
    int order[NCTX * 2];
    int norder;
    struct pending_table *t; /* for callbacks that add requests */
    int readd;               /* how many times on_add_more may add */
};

static int conn_a, conn_b; /* their addresses are the connection keys */

static void on_done(void *owner, void *ctx, const struct rmq_cmd *resp)
{
    struct rec *r = owner;
    int i = (int)(intptr_t)ctx;
    r->calls[i]++;
    if (resp)
        r->answered[i]++;
    if (r->norder < (int)(sizeof r->order / sizeof r->order[0]))
        r->order[r->norder++] = i;
}

static void test_complete_and_exactly_once(void **state)
{
    (void)state;
    struct rec r = {0};
    struct pending_table t;
    assert_int_equal(pending_init(&t, &r, 16), 0);
    assert_int_equal(pending_add(&t, &conn_a, 7, 100, on_done, (void *)1), 0);
    assert_int_equal(pending_add(&t, &conn_b, 7, 100, on_done, (void *)2), 0);
    /* The same opaque on another connection is another request; on the same one it is refused. */
    assert_int_equal(pending_add(&t, &conn_a, 7, 100, on_done, (void *)3), RMQ_EEXIST);
    assert_int_equal(pending_count(&t), 2);
    struct rmq_cmd resp;
    rmq_cmd_init(&resp);
    assert_true(pending_complete(&t, &conn_b, 7, &resp));
    assert_false(pending_complete(&t, &conn_b, 7, &resp)); /* already answered */
    assert_false(pending_complete(&t, &conn_a, 8, &resp));
    assert_int_equal(r.calls[2], 1);
    assert_int_equal(r.answered[2], 1);
    assert_int_equal(r.calls[1], 0);
    assert_int_equal(r.calls[3], 0);
    pending_free(&t);
    assert_int_equal(r.calls[1], 1); /* freed: called once, with NULL */
    assert_int_equal(r.answered[1], 0);
}

static void test_deadlines_in_order(void **state)
{
    (void)state;
    struct rec r = {0};
    struct pending_table t;
    assert_int_equal(pending_init(&t, &r, 64), 0);
    int64_t deadlines[] = {50, 10, 30, 10, 70, 20};
    for (int i = 0; i < 6; i++)
        assert_int_equal(pending_add(&t, &conn_a, i, deadlines[i], on_done, (void *)(intptr_t)i), 0);
    assert_int_equal(pending_next_deadline(&t), 10);
    assert_int_equal(pending_expire(&t, 9), 0);
    assert_int_equal(pending_expire(&t, 30), 4);
    /* Deadline order, send order among equal deadlines. */
    int want[] = {1, 3, 5, 2};
    assert_int_equal(r.norder, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(r.order[i], want[i]);
    assert_int_equal(pending_next_deadline(&t), 50);
    assert_int_equal(pending_count(&t), 2);
    pending_free(&t);
    assert_int_equal(pending_next_deadline(&t), INT64_MAX);
    for (int i = 0; i < 6; i++)
        assert_int_equal(r.calls[i], 1);
}

static void test_drop_conn_send_order_and_bound(void **state)
{
    (void)state;
    struct rec r = {0};
    struct pending_table t;
    assert_int_equal(pending_init(&t, &r, 3), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pending_add(&t, &conn_a, 100 + i, 1000 - i, on_done, (void *)(intptr_t)i), 0);
    /* The bound is per connection: a fourth on a is refused, b is not affected. */
    assert_int_equal(pending_add(&t, &conn_a, 200, 5, on_done, (void *)9), RMQ_E2BIG);
    assert_int_equal(pending_add(&t, &conn_b, 100, 5, on_done, (void *)4), 0);
    assert_int_equal(pending_count_conn(&t, &conn_a), 3);
    assert_int_equal(pending_drop_conn(&t, &conn_a), 3);
    assert_int_equal(pending_count_conn(&t, &conn_a), 0);
    assert_int_equal(r.norder, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r.order[i], i);
    assert_int_equal(r.calls[9], 0);
    assert_int_equal(pending_count(&t), 1);
    /* Room again after the drop. */
    assert_int_equal(pending_add(&t, &conn_a, 200, 5, on_done, (void *)5), 0);
    pending_free(&t);
    assert_int_equal(r.calls[4], 1);
    assert_int_equal(r.calls[5], 1);
}

/* A callback that sends again (as a holdings round retrying would): it adds
 * an already-due request on the same connection each time, a few times. */
static void on_add_more(void *owner, void *ctx, const struct rmq_cmd *resp)
{
    struct rec *r = owner;
    on_done(owner, ctx, resp);
    if (r->readd-- > 0) {
        int i = 10 + r->readd;
        assert_int_equal(pending_add(r->t, &conn_a, 500 + i, 0, on_add_more, (void *)(intptr_t)i), 0);
    }
}

static void test_callbacks_that_add(void **state)
{
    (void)state;
    struct rec r = {0};
    struct pending_table t;
    assert_int_equal(pending_init(&t, &r, 8), 0);
    r.t = &t;
    r.readd = 3;
    assert_int_equal(pending_add(&t, &conn_a, 1, 0, on_add_more, (void *)1), 0);
    /* Each expiry runs only what was due when it began: it always ends. */
    assert_int_equal(pending_expire(&t, 100), 1);
    assert_int_equal(pending_count(&t), 1);
    assert_int_equal(pending_drop_conn(&t, &conn_a), 1);
    assert_int_equal(pending_count(&t), 1); /* added by the dropped one's callback */
    pending_free(&t);                       /* runs the rest, with what they add */
    assert_int_equal(pending_count(&t), 0);
    assert_int_equal(r.calls[1], 1);
    for (int i = 10; i < 13; i++)
        assert_int_equal(r.calls[i], 1);
}

/* Random adds, answers, expiries and drops against a plain array model:
 * the same callbacks, each exactly once. */
static void test_random_against_model(void **state)
{
    (void)state;
    static struct rec r;
    memset(&r, 0, sizeof r);
    struct pending_table t;
    assert_int_equal(pending_init(&t, &r, NCTX), 0);
    struct {
        bool live;
        int conn;
        int32_t opaque;
        int64_t deadline;
    } model[NCTX] = {{0}};
    int conns[4];
    test_rng_state = 0x9e3779b97f4a7c15ULL;
    int64_t now = 0;
    int next = 0;
    struct rmq_cmd resp;
    rmq_cmd_init(&resp);
    for (int step = 0; step < 4000; step++) {
        uint32_t op = test_rnd(10);
        if (op < 5 && next < NCTX) {
            int c = (int)test_rnd(4);
            int64_t d = now + test_rnd(200);
            assert_int_equal(pending_add(&t, &conns[c], next, d, on_done, (void *)(intptr_t)next), 0);
            model[next].live = true;
            model[next].conn = c;
            model[next].opaque = next;
            model[next].deadline = d;
            next++;
        } else if (op < 7 && next > 0) {
            int i = (int)test_rnd((uint32_t)next);
            bool found = pending_complete(&t, &conns[model[i].conn], model[i].opaque, &resp);
            assert_int_equal(found, model[i].live);
            if (found)
                assert_int_equal(r.answered[i], 1);
            model[i].live = false;
        } else if (op < 9) {
            now += test_rnd(60);
            size_t due = 0;
            for (int i = 0; i < next; i++)
                if (model[i].live && model[i].deadline <= now) {
                    model[i].live = false;
                    due++;
                }
            assert_int_equal(pending_expire(&t, now), due);
        } else {
            int c = (int)test_rnd(4);
            size_t n = 0;
            for (int i = 0; i < next; i++)
                if (model[i].live && model[i].conn == c) {
                    model[i].live = false;
                    n++;
                }
            assert_int_equal(pending_drop_conn(&t, &conns[c]), n);
        }
        size_t live = 0;
        for (int i = 0; i < next; i++)
            live += model[i].live;
        assert_int_equal(pending_count(&t), live);
        pending_sanity(&t);
    }
    pending_free(&t);
    for (int i = 0; i < next; i++)
        assert_int_equal(r.calls[i], 1);
}

static void test_failed_allocations(void **state)
{
    (void)state;
    /* Fail the Nth allocation of a sequence of adds: an add either works or
     * fails with ENOMEM leaving the table as it was (its callback never runs). */
    for (long n = 0; n < 40; n++) {
        struct rec r = {0};
        struct pending_table t;
        assert_int_equal(pending_init(&t, &r, 64), 0);
        rmq_mem_fail_after(n);
        int added = 0, refused = 0;
        for (int i = 0; i < 8; i++) {
            int rc = pending_add(&t, i % 2 ? &conn_a : &conn_b, i, i, on_done, (void *)(intptr_t)i);
            assert_true(rc == 0 || rc == RMQ_ENOMEM);
            if (rc == 0)
                added++;
            else
                refused++;
        }
        rmq_mem_fail_after(-1);
        assert_int_equal(pending_count(&t), (size_t)added);
        pending_sanity(&t);
        pending_free(&t);
        int calls = 0;
        for (int i = 0; i < 8; i++)
            calls += r.calls[i];
        assert_int_equal(calls, added);
        if (n >= 30)
            assert_int_equal(refused, 0);
    }
}

TEST_MAIN(cmocka_unit_test(test_complete_and_exactly_once), cmocka_unit_test(test_deadlines_in_order),
          cmocka_unit_test(test_drop_conn_send_order_and_bound), cmocka_unit_test(test_callbacks_that_add),
          cmocka_unit_test(test_random_against_model), cmocka_unit_test(test_failed_allocations))
