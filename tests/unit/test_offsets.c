/* test_offsets.c — the committed-offset table (server/model/offsets.c):
 * per (group, topic, queue) values, each queue's highest committed offset,
 * and allocation failures (docs/protocol.md §5). Pure; no store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "offsets.h"
#include "test_support.h"

#include <string.h>

static void test_put_get_and_never_committed(void **state)
{
    (void)state;
    struct offsets o;
    offsets_init(&o);
    int64_t v = 123;
    assert_int_equal(offsets_get(&o, "g", "T", 0, &v), RMQ_ENOTFOUND);
    assert_int_equal(v, 123); /* untouched */
    assert_int_equal(offsets_put(&o, "g", "T", 0, 10), 0);
    assert_int_equal(offsets_get(&o, "g", "T", 0, &v), 0);
    assert_int_equal(v, 10);
    /* Keys do not bleed into each other: other group, topic, queue. */
    assert_int_equal(offsets_get(&o, "h", "T", 0, &v), RMQ_ENOTFOUND);
    assert_int_equal(offsets_get(&o, "g", "U", 0, &v), RMQ_ENOTFOUND);
    assert_int_equal(offsets_get(&o, "g", "T", 1, &v), RMQ_ENOTFOUND);
    /* "g"+"T1" vs "gT"+"1": the separators keep them apart. */
    assert_int_equal(offsets_put(&o, "gT", "1", 0, 99), 0);
    assert_int_equal(offsets_get(&o, "g", "T1", 0, &v), RMQ_ENOTFOUND);
    /* A commit replaces the value, lower ones included. */
    assert_int_equal(offsets_put(&o, "g", "T", 0, 3), 0);
    assert_int_equal(offsets_get(&o, "g", "T", 0, &v), 0);
    assert_int_equal(v, 3);
    offsets_free(&o);
}

/* The queue's max is the highest offset any group committed; it never
 * moves back, and a negative commit never makes it negative. */
static void test_queue_max(void **state)
{
    (void)state;
    struct offsets o;
    offsets_init(&o);
    assert_int_equal(offsets_queue_max(&o, "T", 0), 0);
    assert_int_equal(offsets_put(&o, "g", "T", 0, -1), 0);
    assert_int_equal(offsets_queue_max(&o, "T", 0), 0);
    assert_int_equal(offsets_put(&o, "g", "T", 0, 30), 0);
    assert_int_equal(offsets_put(&o, "h", "T", 0, 50), 0);
    assert_int_equal(offsets_put(&o, "h", "T", 0, 5), 0);
    assert_int_equal(offsets_queue_max(&o, "T", 0), 50);
    assert_int_equal(offsets_queue_max(&o, "T", 1), 0);
    assert_int_equal(offsets_queue_max(&o, "U", 0), 0);
    offsets_free(&o);
    /* Reusable after free + init. */
    offsets_init(&o);
    assert_int_equal(offsets_queue_max(&o, "T", 0), 0);
    offsets_free(&o);
}

/* Names as long as the daemon accepts (255 bytes each) stay distinct. */
static void test_long_names_distinct(void **state)
{
    (void)state;
    char g1[256], g2[256], t[256];
    memset(g1, 'a', 255);
    g1[255] = 0;
    memcpy(g2, g1, sizeof g2);
    g2[254] = 'b';
    memset(t, 't', 255);
    t[255] = 0;
    struct offsets o;
    offsets_init(&o);
    assert_int_equal(offsets_put(&o, g1, t, 2147483647, 1), 0);
    assert_int_equal(offsets_put(&o, g2, t, 2147483647, 2), 0);
    int64_t v;
    assert_int_equal(offsets_get(&o, g1, t, 2147483647, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(offsets_get(&o, g2, t, 2147483647, &v), 0);
    assert_int_equal(v, 2);
    offsets_free(&o);
}

static void put_oom_setup(void *ctx)
{
    offsets_init(ctx);
    assert_int_equal(offsets_put(ctx, "g", "T", 0, 7), 0);
}

static int put_oom_run(void *ctx)
{
    return offsets_put(ctx, "g2", "T2", 1, 8);
}

static void put_oom_check(void *ctx, int rc)
{
    struct offsets *o = ctx;
    int64_t v;
    assert_int_equal(offsets_get(o, "g", "T", 0, &v), 0);
    assert_int_equal(v, 7);
    if (rc == 0) {
        assert_int_equal(offsets_get(o, "g2", "T2", 1, &v), 0);
        assert_int_equal(v, 8);
        assert_int_equal(offsets_queue_max(o, "T2", 1), 8);
    } else {
        /* offsets.h: the key is unchanged on RMQ_ENOMEM (the queue's
         * max is raised first, the committed entry last). */
        assert_int_equal(offsets_get(o, "g2", "T2", 1, &v), RMQ_ENOTFOUND);
    }
    offsets_free(o);
}

/* Failing every allocation in turn: offsets_put either succeeds or
 * reports RMQ_ENOMEM, nothing leaks, and an existing value survives. */
static void test_out_of_memory(void **state)
{
    (void)state;
    struct offsets o;
    test_oom_loop(
        &(struct test_oom){.setup = put_oom_setup, .run = put_oom_run, .check = put_oom_check, .max = 1000},
        &o);
}

static void count_entry(void *ctx, const char *group, const char *topic, int32_t qid, struct offset_entry *e)
{
    (void)group;
    (void)topic;
    (void)qid;
    *(int64_t *)ctx += e->offset;
}

/* Commit times, the reset mark, the walk, and the deletions of a topic
 * (DELETE_TOPIC_IN_BROKER) and of a group (DELETE_SUBSCRIPTIONGROUP). */
static void test_entries_walk_and_delete(void **state)
{
    (void)state;
    struct offsets o;
    offsets_init(&o);
    assert_int_equal(offsets_put_at(&o, "g", "T", 0, 10, 1234), 0);
    assert_int_equal(offsets_put(&o, "g", "U", 1, 20), 0);
    assert_int_equal(offsets_put(&o, "h", "T", 0, 30), 0);
    struct offset_entry *e = offsets_find(&o, "g", "T", 0);
    assert_non_null(e);
    assert_int_equal(e->offset, 10);
    assert_int_equal(e->updated_ms, 1234);
    assert_false(e->reset_pending);
    e->reset_pending = true;
    assert_true(offsets_find(&o, "g", "T", 0)->reset_pending);
    assert_null(offsets_find(&o, "g", "T", 1));
    int64_t sum = 0;
    offsets_each(&o, count_entry, &sum);
    assert_int_equal(sum, 60);
    assert_int_equal(offsets_delete_topic(&o, "T"), 2);
    assert_int_equal(offsets_queue_max(&o, "T", 0), 0);
    assert_null(offsets_find(&o, "h", "T", 0));
    assert_int_equal(offsets_queue_max(&o, "U", 1), 20);
    assert_int_equal(offsets_delete_group(&o, "g"), 1);
    assert_int_equal(offsets_delete_group(&o, "g"), 0);
    sum = 0;
    offsets_each(&o, count_entry, &sum);
    assert_int_equal(sum, 0);
    offsets_free(&o);
}

TEST_MAIN(cmocka_unit_test(test_put_get_and_never_committed), cmocka_unit_test(test_queue_max),
          cmocka_unit_test(test_long_names_distinct), cmocka_unit_test(test_out_of_memory),
          cmocka_unit_test(test_entries_walk_and_delete))
