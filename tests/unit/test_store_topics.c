/* test_store_topics.c — the writer's topic and offset rows
 * (server/store/store_topics.c): what survives a reopen, upserts, and a
 * load callback that stops the scan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "store.h"
#include "store_fixture.h"
#include "test_support.h"

#include <stdint.h>

static void test_topics_survive_reopen(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_three_topics(s);
    store_close(s);
    s = open_ok(fx->path);
    struct seen_topics t = {0};
    assert_int_equal(store_load_topics(s, topic_cb, &t), 0);
    assert_int_equal(t.n, 3);
    assert_string_equal(t.name[0], "TopicA");
    assert_int_equal(t.nb[0], 2);
    assert_string_equal(t.broker[0][0], "broker-a"); /* ordered by broker name */
    assert_int_equal(t.rq[0][0], 4);
    assert_int_equal(t.wq[0][0], 2);
    assert_int_equal(t.perm[0][0], 4);
    assert_string_equal(t.broker[0][1], "broker-b");
    assert_string_equal(t.name[1], "TopicB");
    assert_int_equal(t.nb[1], 1);
    assert_int_equal(t.rq[1][0], 16);
    assert_string_equal(t.name[2], "TopicC");
    assert_int_equal(t.nb[2], 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM topic_brokers WHERE topic = 'TopicD'"), 0);
    store_close(s);
}

static void test_load_topics_callback_stops(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_three_topics(s);
    struct seen_topics t = {.stop_at = 1};
    assert_int_equal(store_load_topics(s, topic_cb, &t), 7);
    assert_int_equal(t.n, 1);
    t = (struct seen_topics){.stop_at = 3}; /* stop on the last topic, delivered after the scan */
    assert_int_equal(store_load_topics(s, topic_cb, &t), 7);
    assert_int_equal(t.n, 3);
    assert_int_equal(store_load_topics(s, NULL, NULL), RMQ_EINVAL);
    store_close(s);
}

static void test_offsets_survive_reopen(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_int_equal(store_put_offset(s, "g1", "T", 1, 100, 1), 0);
    assert_int_equal(store_put_offset(s, "g1", "T", 0, 5, 1), 0);
    assert_int_equal(store_put_offset(s, "g1", "T", 1, 150, 2), 0); /* upsert: last value wins */
    assert_int_equal(store_put_offset(s, "g0", "T", 3, INT64_C(1) << 40, 2), 0);
    assert_int_equal(store_put_offset(s, "g0", "T", -1, 1, 2), RMQ_EINVAL); /* CHECK queue_id >= 0 */
    assert_int_equal(store_commit(s), 0);
    store_close(s);
    s = open_ok(fx->path);
    struct seen_offsets o = {0};
    assert_int_equal(store_load_offsets(s, offset_cb, &o), 0);
    assert_int_equal(o.n, 3);
    assert_string_equal(o.key[0], "g0/T/3");
    assert_true(o.off[0] == INT64_C(1) << 40);
    assert_string_equal(o.key[1], "g1/T/0");
    assert_int_equal(o.off[1], 5);
    assert_string_equal(o.key[2], "g1/T/1");
    assert_int_equal(o.off[2], 150);
    assert_int_equal(store_load_offsets(s, NULL, NULL), RMQ_EINVAL);
    store_close(s);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

TEST_MAIN(T(test_topics_survive_reopen), T(test_load_topics_callback_stops), T(test_offsets_survive_reopen))
