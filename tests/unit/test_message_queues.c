/* test_message_queues.c — server/model/message_queues.c: offsets and
 * physical ids reserved per queue, made visible by a good commit and given
 * back by a failed one, loaded ranges, unreserve. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "message_queues.h"
#include "test_support.h"

#include <string.h>

static int committed_calls;

static void count(void *ctx, const struct mq_range *r)
{
    (void)ctx;
    assert_int_equal(r->end_offset, r->next_offset);
    committed_calls++;
}

static void test_reserve_commit_and_fail(void **state)
{
    (void)state;
    struct message_queues q;
    message_queues_init(&q);
    assert_null(message_queues_get(&q, "T", 0));
    int64_t off, id;
    assert_int_equal(message_queues_reserve(&q, "T", 0, 2, &off, &id), 0);
    assert_int_equal(off, 0);
    assert_int_equal(id, 1);
    assert_int_equal(message_queues_reserve(&q, "T", 1, 1, &off, &id), 0);
    assert_int_equal(off, 0);
    assert_int_equal(id, 3);
    const struct mq_range *r = message_queues_get(&q, "T", 0);
    assert_int_equal(r->end_offset, 0); /* not visible before the commit */
    assert_int_equal(r->next_offset, 2);
    committed_calls = 0;
    message_queues_commit(&q, true, count, NULL);
    assert_int_equal(committed_calls, 2);
    assert_int_equal(r->end_offset, 2);
    assert_int_equal(q.ndirty, 0);
    /* A failed batch gives its offsets and ids back. */
    assert_int_equal(message_queues_reserve(&q, "T", 0, 3, &off, &id), 0);
    assert_int_equal(off, 2);
    assert_int_equal(id, 4);
    message_queues_commit(&q, false, count, NULL);
    assert_int_equal(committed_calls, 2);
    assert_int_equal(r->next_offset, 2);
    assert_int_equal(message_queues_reserve(&q, "T", 0, 1, &off, &id), 0);
    assert_int_equal(off, 2);
    assert_int_equal(id, 4);
    message_queues_unreserve(&q, "T", 0, 1);
    assert_int_equal(r->next_offset, 2);
    assert_int_equal(q.next_physical_id, 4);
    message_queues_commit(&q, true, NULL, NULL);
    message_queues_free(&q);
}

static void test_load(void **state)
{
    (void)state;
    struct message_queues q;
    message_queues_init(&q);
    assert_int_equal(message_queues_load(&q, "T", 3, 5, 9), 0);
    const struct mq_range *r = message_queues_get(&q, "T", 3);
    assert_int_equal(r->min_offset, 5);
    assert_int_equal(r->end_offset, 10);
    assert_int_equal(r->next_offset, 10);
    assert_string_equal(r->topic, "T");
    assert_int_equal(r->queue_id, 3);
    assert_null(message_queues_get(&q, "T", 2));
    assert_null(message_queues_get(&q, "U", 3));
    message_queues_free(&q);
}

TEST_MAIN(cmocka_unit_test(test_reserve_commit_and_fail), cmocka_unit_test(test_load))
