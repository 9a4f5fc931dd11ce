/* test_pull_requests.c — PULL_MESSAGE (server/requests/pull_requests.c with
 * model/held_pulls.c) on a broker fixture: the PULL_NOT_FOUND fields, holds
 * released at their deadline (capped by --pull-hold-max-ms), on a group
 * change or when the group empties, dropped on close, never for oneway,
 * and offsets committed by pulls (docs/protocol.md §5.2, §6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "conn.h"
#include "consumer_requests.h"
#include "pull_requests.h"
#include "request_codes.h"
#include "test_support.h"

#include <string.h>

static int setup(void **state)
{
    struct config cfg;
    fx_config_defaults(&cfg);
    strcpy(cfg.topics[0].name, "T");
    cfg.topics[0].queues = 4;
    cfg.ntopics = 1;
    *state = fx_new(&cfg);
    return 0;
}

/* A pull of group/T queue 1 at offset with sysFlag and suspend (ms; < 0 =
 * field absent). */
static void pull(struct fx *fx, size_t i, int32_t opaque, int32_t flag, const char *group, const char *topic,
                 int64_t offset, int sys_flag, int64_t suspend, int64_t commit)
{
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_PULL_MESSAGE, opaque, flag);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", group), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", topic), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "queueId", "1"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueOffset", offset), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "sysFlag", sys_flag), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "maxMsgNums", "32"), 0);
    if (suspend >= 0)
        assert_int_equal(rmq_cmd_ext_set_i64(&req, "suspendTimeoutMillis", suspend), 0);
    if (commit >= -1)
        assert_int_equal(rmq_cmd_ext_set_i64(&req, "commitOffset", commit), 0);
    pull_req_message(&fx->b, fx_conn(fx, i), &req);
    rmq_cmd_clear(&req);
}

/* Moves the clock by ms, runs the pull timer and an iteration. */
static void tick(struct fx *fx, int64_t ms)
{
    fx_advance(fx, ms);
    pull_on_timer(&fx->b);
    fx_iterate(fx);
}

/* Reads a PULL_NOT_FOUND for opaque and checks its four offsets. */
static void expect_not_found(struct fx *fx, size_t i, int32_t opaque, int64_t next, int64_t max)
{
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, i, opaque, &r), RMQ_RESP_PULL_NOT_FOUND);
    assert_string_equal(r.remark, "no new message");
    int64_t v;
    assert_int_equal(rmq_cmd_ext_get_i64(&r, "nextBeginOffset", &v), 0);
    assert_int_equal(v, next);
    assert_int_equal(rmq_cmd_ext_get_i64(&r, "minOffset", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(rmq_cmd_ext_get_i64(&r, "maxOffset", &v), 0);
    assert_int_equal(v, max);
    assert_string_equal(rmq_cmd_ext_get(&r, "suggestWhichBrokerId"), "0");
    rmq_cmd_clear(&r);
}

/* Without SUSPEND (or with a zero timeout) the answer is immediate. */
static void test_unsuspended_answered_at_once(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    pull(fx, a, 1, 0, "g", "T", 25, 0, 15000, -2);
    pull(fx, a, 2, 0, "g", "T", -5, 2, 0, -2);
    fx_iterate(fx);
    expect_not_found(fx, a, 1, 25, 25);
    expect_not_found(fx, a, 2, 0, 0);
    assert_int_equal(fx->b.pulls.n, 0);
    /* Unknown topic: 17. */
    pull(fx, a, 3, 0, "g", "Nope", 0, 2, 15000, -2);
    fx_iterate(fx);
    fx_expect_reply(fx, a, 3, RMQ_RESP_TOPIC_NOT_EXIST, NULL);
    assert_int_equal(fx->b.pulls.n, 0);
}

/* A suspended pull is held until its suspend timeout, capped by
 * --pull-hold-max-ms (15 s by default). */
static void test_held_until_deadline(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    pull(fx, a, 1, 0, "g", "T", 7, 2, 1000, -2);  /* held 1 s */
    pull(fx, a, 2, 0, "g", "T", 8, 2, 60000, -2); /* held 15 s (the cap) */
    fx_iterate(fx);
    assert_int_equal(fx->b.pulls.n, 2);
    assert_int_equal(fx_drain(fx, a), 0);
    tick(fx, 999);
    assert_int_equal(fx_drain(fx, a), 0);
    tick(fx, 1);
    expect_not_found(fx, a, 1, 7, 7);
    assert_int_equal(fx_drain(fx, a), 0);
    tick(fx, 15000 - 1000 - 1);
    assert_int_equal(fx_drain(fx, a), 0);
    tick(fx, 1);
    expect_not_found(fx, a, 2, 8, 8);
    assert_int_equal(fx->b.pulls.n, 0);
}

/* A group change answers the group's held pulls at once (before the
 * NOTIFY); pulls of other groups stay held. */
static void test_released_on_group_change(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    fx_join(fx, a, "cA", "g");
    pull(fx, a, 11, 0, "g", "T", 3, 2, 15000, -2);
    pull(fx, a, 12, 0, "other", "T", 4, 2, 15000, -2);
    fx_iterate(fx);
    assert_int_equal(fx_drain(fx, a), 0);
    fx_heartbeat(fx, b, "cB", "g", "T");
    fx_iterate(fx);
    expect_not_found(fx, a, 11, 3, 3);
    assert_int_equal(fx_notifies(fx, a, "g"), 1);
    assert_int_equal(fx->b.pulls.n, 1);
    assert_string_equal(fx->b.pulls.items[0].group, "other");
}

/* A group left empty answers its held pulls (there is nobody to notify). */
static void test_released_when_group_empties(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    fx_join(fx, a, "cA", "g");
    pull(fx, b, 21, 0, "g", "T", 0, 2, 15000, -2);
    fx_iterate(fx);
    assert_int_equal(fx->b.pulls.n, 1);
    conn_close_async(fx_conn(fx, a), "test");
    fx_iterate(fx);
    assert_null(registry_group(&fx->b.reg, "g"));
    expect_not_found(fx, b, 21, 0, 0);
    assert_int_equal(fx->b.pulls.n, 0);
}

/* A connection that closes drops its holds without an answer; another
 * connection's hold of the same group stays. */
static void test_dropped_on_close(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    pull(fx, a, 31, 0, "g", "T", 0, 2, 15000, -2);
    pull(fx, a, 32, 0, "g", "T", 0, 2, 15000, -2);
    pull(fx, b, 33, 0, "g", "T", 0, 2, 15000, -2);
    fx_iterate(fx);
    assert_int_equal(fx->b.pulls.n, 3);
    conn_close_async(fx_conn(fx, a), "test");
    fx_iterate(fx);
    assert_int_equal(fx->b.pulls.n, 1);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_true(fx->peers[a].eof);
    tick(fx, 15000);
    expect_not_found(fx, b, 33, 0, 0);
}

/* A oneway pull is neither held nor answered. */
static void test_oneway_not_held(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    pull(fx, a, 41, RMQ_FLAG_ONEWAY, "g", "T", 0, 2, 15000, -2);
    fx_iterate(fx);
    assert_int_equal(fx->b.pulls.n, 0);
    assert_int_equal(fx_drain(fx, a), 0);
}

/* COMMIT_OFFSET (0x1) with commitOffset >= 0 commits it, held or not; the
 * queue's max then shows in maxOffset. -1 commits nothing. */
static void test_pull_commits_offset(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    pull(fx, a, 51, 0, "g", "T", 40, 1, 0, 33);
    fx_iterate(fx);
    expect_not_found(fx, a, 51, 40, 40);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets WHERE group_name='g' AND queue_id=1"),
                     33);
    pull(fx, a, 52, 0, "g", "T", 10, 3, 15000, 60);
    fx_iterate(fx);
    assert_int_equal(fx->b.pulls.n, 1);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets WHERE group_name='g' AND queue_id=1"),
                     60);
    pull(fx, a, 53, 0, "h", "T", 10, 1, 0, -1);
    fx_iterate(fx);
    expect_not_found(fx, a, 53, 10, 60); /* maxOffset: the queue's highest commit */
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets WHERE group_name='h'"), 0);
}

/* Missing required fields: SYSTEM_ERROR naming the field, nothing held. */
static void test_missing_fields(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_PULL_MESSAGE, 61, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", "g"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "queueId", "1"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "sysFlag", "2"), 0);
    fx_handle(fx, a, pull_req_message, &req);
    fx_expect_reply(fx, a, 61, RMQ_RESP_SYSTEM_ERROR, "missing field queueOffset in PULL_MESSAGE request");
    assert_int_equal(fx->b.pulls.n, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, fx_teardown)

TEST_MAIN(T(test_unsuspended_answered_at_once), T(test_held_until_deadline), T(test_released_on_group_change),
          T(test_released_when_group_empties), T(test_dropped_on_close), T(test_oneway_not_held),
          T(test_pull_commits_offset), T(test_missing_fields))
