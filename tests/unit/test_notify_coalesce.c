/* test_notify_coalesce.c — when a marked group's NOTIFY goes out
 * (notify_policy_due_ms through registry_take_due): at once on an idle
 * loop, later while the loop is backlogged or inside a --notify-coalesce-ms
 * window, and never lost: every change is followed by a NOTIFY sent at or
 * after it, to the members the group has then. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "notify_policy.h"
#include "registry.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct world {
    struct registry r;
};

static int world_setup(void **state)
{
    struct world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    struct registry_hooks h = {0};
    registry_init(&w->r, &h);
    *state = w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;
    registry_free(&w->r);
    free(w);
    return 0;
}

/* Channel ch (opened if new) joins group as client c<ch> at now. */
static struct reg_group *join(struct registry *r, uint64_t ch, const char *group, int64_t now)
{
    if (!registry_channel(r, ch)) {
        char peer[32];
        snprintf(peer, sizeof peer, "p%llu", (unsigned long long)ch);
        assert_int_equal(registry_channel_open(r, ch, NULL, peer, now), 0);
    }
    char cid[32];
    snprintf(cid, sizeof cid, "c%llu", (unsigned long long)ch);
    struct rmq_subscription sub = {
        .topic = (char *)"T", .sub_string = (char *)"*", .expression_type = (char *)"TAG"};
    struct rmq_consumer_data cd = {
        .group = (char *)group, .message_model = RMQ_MODEL_CLUSTERING, .subs = &sub, .nsubs = 1};
    struct rmq_heartbeat hb = {.client_id = cid, .consumers = &cd, .nconsumers = 1};
    struct registry_hb_result res;
    assert_int_equal(registry_heartbeat(r, ch, 0, 409, &hb, NULL, 0, now, &res), 0);
    return registry_group(r, group);
}

/* The groups registry_take_due hands out at now, counted; *next gets the next due time. */
static int take(struct registry *r, int64_t now, int64_t coalesce, bool backlogged, int64_t *next)
{
    int n = 0;
    for (struct reg_group *g = registry_take_due(r, now, coalesce, backlogged, next); g; g = g->next_pending)
        n++;
    return n;
}

static void test_idle_loop_sends_at_once(void **state)
{
    struct world *w = *state;
    struct reg_group *g = join(&w->r, 1, "G", 1000);
    registry_mark_notify_at(&w->r, g, 1000);
    int64_t next;
    /* With and without a window: a group never notified before goes at once. */
    assert_int_equal(take(&w->r, 1000, 0, false, &next), 1);
    assert_int_equal(next, INT64_MAX);
    assert_int_equal(g->notify_sent_ms, 1000);
    registry_mark_notify_at(&w->r, g, 5000);
    assert_int_equal(take(&w->r, 5000, 2000, false, &next), 1); /* quiet for longer than the window */
    assert_null(w->r.pending);
}

static void test_backlog_postpones_until_it_drains_or_the_bound(void **state)
{
    struct world *w = *state;
    struct reg_group *g = join(&w->r, 1, "G", 1000);
    registry_mark_notify_at(&w->r, g, 1000);
    int64_t next;
    assert_int_equal(take(&w->r, 1000, 0, true, &next), 0);
    assert_int_equal(next, 1000 + NOTIFY_BACKLOG_MIN_MS);
    /* Marks while pending keep the first time: the bound runs from the first change. */
    registry_mark_notify_at(&w->r, g, 1050);
    assert_int_equal(take(&w->r, 1099, 0, true, &next), 0);
    assert_int_equal(take(&w->r, 1000 + NOTIFY_BACKLOG_MIN_MS, 0, true, &next), 1);
    /* Backlog over: the next change goes at once. */
    registry_mark_notify_at(&w->r, g, 1200);
    assert_int_equal(take(&w->r, 1200, 0, true, &next), 0);
    assert_int_equal(take(&w->r, 1201, 0, false, &next), 1);
}

static void test_backlog_gap_grows_with_the_group(void **state)
{
    struct world *w = *state;
    struct reg_group *g = NULL;
    for (uint64_t ch = 1; ch <= 10000; ch++)
        g = join(&w->r, ch, "G", 1000);
    assert_int_equal(g->g.nmembers, 10000);
    int64_t gap = 10000 * NOTIFY_BACKLOG_US_PER_MEMBER / 1000;
    assert_true(gap > NOTIFY_BACKLOG_MIN_MS);
    registry_mark_notify_at(&w->r, g, 2000);
    int64_t next;
    assert_int_equal(take(&w->r, 2000, 0, true, &next), 0);
    assert_int_equal(next, 2000 + gap);
    assert_int_equal(take(&w->r, 2000 + gap, 0, true, &next), 1);
}

static void test_window_leading_then_trailing(void **state)
{
    struct world *w = *state;
    struct reg_group *g = join(&w->r, 1, "G", 1000);
    struct reg_group *h = join(&w->r, 2, "H", 1000);
    int64_t next;
    registry_mark_notify_at(&w->r, g, 1000);
    assert_int_equal(take(&w->r, 1000, 500, false, &next), 1); /* leading edge */
    /* A burst inside the window: one more NOTIFY at its end, none before. */
    for (int64_t t = 1010; t < 1400; t += 30) {
        join(&w->r, (uint64_t)(10 + t), "G", t);
        registry_mark_notify_at(&w->r, g, t);
        assert_int_equal(take(&w->r, t, 500, false, &next), 0);
        assert_int_equal(next, 1500);
    }
    /* Another group is not held back by G's window. */
    registry_mark_notify_at(&w->r, h, 1450);
    assert_int_equal(take(&w->r, 1450, 500, false, &next), 1);
    assert_int_equal(next, 1500);
    struct reg_group *due = registry_take_due(&w->r, 1500, 500, false, &next);
    assert_ptr_equal(due, g);
    assert_null(due->next_pending);
    assert_int_equal(g->notify_sent_ms, 1500);
    assert_null(w->r.pending);
}

/* Property: whatever the sequence of changes, backlog and window, each
 * change at time t is followed by a NOTIFY of its group sent at or after t
 * once the loop keeps turning (the daemon wakes at next). */
static void test_no_change_is_left_without_a_notify(void **state)
{
    struct world *w = *state;
    test_rng_state = 0x5EED5EEDull;
    const char *names[3] = {"A", "B", "C"};
    struct reg_group *gs[3];
    for (int i = 0; i < 3; i++)
        gs[i] = join(&w->r, (uint64_t)i + 1, names[i], 0);
    for (int round = 0; round < 200; round++) {
        int64_t coalesce = (int64_t)test_rnd(3) * 100; /* 0, 100, 200 */
        int64_t now = 1000 + round * 1000, last_change[3] = {-1, -1, -1};
        for (int step = 0; step < 40; step++, now += (int64_t)test_rnd(40)) {
            int i = (int)test_rnd(3);
            if (test_rnd(2)) {
                registry_mark_notify_at(&w->r, gs[i], now);
                last_change[i] = now;
            }
            int64_t next;
            (void)registry_take_due(&w->r, now, coalesce, test_rnd(3) == 0, &next);
            assert_true(next == INT64_MAX || next > now);
        }
        /* The storm is over: keep turning at the due times, idle. */
        for (int guard = 0; guard < 10 && w->r.pending; guard++) {
            int64_t at = registry_next_due(&w->r, coalesce, false);
            assert_true(at != INT64_MAX);
            int64_t next;
            now = at > now ? at : now;
            (void)registry_take_due(&w->r, now, coalesce, false, &next);
        }
        assert_null(w->r.pending);
        for (int i = 0; i < 3; i++)
            if (last_change[i] >= 0)
                assert_true(gs[i]->notify_sent_ms >= last_change[i]);
    }
}

static void test_policy_edges(void **state)
{
    (void)state;
    /* Never sent: no window to wait for, whatever the window. */
    assert_int_equal(notify_policy_due_ms(7, INT64_MIN, 5, 3600000, false), 7);
    /* Sent long before the change: the window has passed. */
    assert_int_equal(notify_policy_due_ms(5000, 1000, 5, 1000, false), 5000);
    /* Sent inside the window: its end. */
    assert_int_equal(notify_policy_due_ms(1500, 1000, 5, 1000, false), 2000);
    /* Backlogged and inside the window: the later of the two. */
    assert_int_equal(notify_policy_due_ms(1500, 1000, 5, 100, true), 1600);
    assert_int_equal(notify_policy_due_ms(1500, 1000, 5, 1000, true), 2000);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, world_setup, world_teardown)

TEST_MAIN(T(test_idle_loop_sends_at_once), T(test_backlog_postpones_until_it_drains_or_the_bound),
          T(test_backlog_gap_grows_with_the_group), T(test_window_leading_then_trailing),
          T(test_no_change_is_left_without_a_notify), cmocka_unit_test(test_policy_edges))
