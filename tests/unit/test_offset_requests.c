/* test_offset_requests.c — QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
 * SEARCH_OFFSET_BY_TIMESTAMP and GET_EARLIEST_MSG_STORETIME
 * (server/requests/offset_requests.c) on a broker fixture, with the commits
 * read back from the store (docs/protocol.md §5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "offset_requests.h"
#include "request_codes.h"

#include <string.h>

static int setup(void **state)
{
    *state = fx_new(NULL);
    return 0;
}

static int teardown(void **state)
{
    fx_free(*state);
    return 0;
}

static int32_t next_opaque = 100;

/* Sends code with (group, topic, qid) plus one optional extra field on peer
 * i through handler, runs an iteration, and returns the reply's code (the
 * reply in *out). */
static int32_t ask(struct fx *fx, size_t i, void (*handler)(struct broker *, struct conn *, struct rmq_cmd *),
                   int32_t code, const char *group, const char *topic, int qid, const char *key,
                   const char *val, struct rmq_cmd *out)
{
    struct rmq_cmd req;
    int32_t opaque = next_opaque++;
    fx_request(&req, code, opaque, 0);
    if (group)
        assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", group), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", topic), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueId", qid), 0);
    if (key)
        assert_int_equal(rmq_cmd_ext_set(&req, key, val), 0);
    handler(&fx->b, fx_conn(fx, i), &req);
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    return fx_reply(fx, i, opaque, out);
}

static int64_t reply_i64(const struct rmq_cmd *r, const char *key)
{
    int64_t v = 0;
    assert_int_equal(rmq_cmd_ext_get_i64(r, key, &v), 0);
    return v;
}

/* A commit is stored and then answered by QUERY; another group or queue
 * is unaffected; a later commit replaces it (also a lower one: ali-ons may
 * move an offset back). */
static void test_commit_then_query(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd r;
    assert_int_equal(ask(fx, a, handle_update_offset, RMQ_REQ_UPDATE_CONSUMER_OFFSET, "g", "T", 1,
                         "commitOffset", "17", &r),
                     RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets WHERE group_name='g' AND topic='T' AND "
                                    "queue_id=1"),
                     17);
    assert_int_equal(
        ask(fx, a, handle_query_offset, RMQ_REQ_QUERY_CONSUMER_OFFSET, "g", "T", 1, NULL, NULL, &r), 0);
    assert_int_equal(reply_i64(&r, "offset"), 17);
    rmq_cmd_clear(&r);
    assert_int_equal(ask(fx, a, handle_update_offset, RMQ_REQ_UPDATE_CONSUMER_OFFSET, "g", "T", 1,
                         "commitOffset", "-1", &r),
                     RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(
        ask(fx, a, handle_query_offset, RMQ_REQ_QUERY_CONSUMER_OFFSET, "g", "T", 1, NULL, NULL, &r), 0);
    assert_int_equal(reply_i64(&r, "offset"), -1);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets WHERE queue_id=1"), -1);
    /* Another group's view of the same queue: nothing committed. */
    assert_int_equal(ask(fx, a, handle_query_offset, RMQ_REQ_QUERY_CONSUMER_OFFSET, "h", "T", 1,
                         "setZeroIfNotFound", "false", &r),
                     RMQ_RESP_QUERY_NOT_FOUND);
    rmq_cmd_clear(&r);
}

/* Never committed: offset 0, or QUERY_NOT_FOUND (22) when the client says
 * setZeroIfNotFound=false; "true" or a malformed value means 0. */
static void test_query_never_committed(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd r;
    assert_int_equal(
        ask(fx, a, handle_query_offset, RMQ_REQ_QUERY_CONSUMER_OFFSET, "g", "T", 0, NULL, NULL, &r), 0);
    assert_int_equal(reply_i64(&r, "offset"), 0);
    rmq_cmd_clear(&r);
    assert_int_equal(ask(fx, a, handle_query_offset, RMQ_REQ_QUERY_CONSUMER_OFFSET, "g", "T", 0,
                         "setZeroIfNotFound", "true", &r),
                     0);
    assert_int_equal(reply_i64(&r, "offset"), 0);
    rmq_cmd_clear(&r);
    assert_int_equal(ask(fx, a, handle_query_offset, RMQ_REQ_QUERY_CONSUMER_OFFSET, "g", "T", 0,
                         "setZeroIfNotFound", "FALSE", &r),
                     RMQ_RESP_QUERY_NOT_FOUND);
    assert_null(rmq_cmd_ext_get(&r, "offset"));
    assert_non_null(r.remark);
    rmq_cmd_clear(&r);
    assert_int_equal(ask(fx, a, handle_query_offset, RMQ_REQ_QUERY_CONSUMER_OFFSET, "g", "T", 0,
                         "setZeroIfNotFound", "maybe", &r),
                     0);
    assert_int_equal(reply_i64(&r, "offset"), 0);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets"), 0);
}

/* GET_MAX_OFFSET is the highest offset any group committed for the queue
 * (0 when none), GET_MIN_OFFSET always 0, SEARCH the queue's max,
 * EARLIEST_MSG_STORETIME -1; none fails for an unknown queue. */
static void test_max_min_search_earliest(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd r;
    assert_int_equal(ask(fx, a, handle_get_max_offset, RMQ_REQ_GET_MAX_OFFSET, NULL, "T", 2, NULL, NULL, &r),
                     0);
    assert_int_equal(reply_i64(&r, "offset"), 0);
    rmq_cmd_clear(&r);
    const char *commits[][2] = {{"g", "30"}, {"h", "50"}, {"g", "40"}};
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(ask(fx, a, handle_update_offset, RMQ_REQ_UPDATE_CONSUMER_OFFSET, commits[k][0], "T",
                             2, "commitOffset", commits[k][1], &r),
                         0);
        rmq_cmd_clear(&r);
    }
    assert_int_equal(ask(fx, a, handle_get_max_offset, RMQ_REQ_GET_MAX_OFFSET, NULL, "T", 2, NULL, NULL, &r),
                     0);
    assert_int_equal(reply_i64(&r, "offset"), 50);
    rmq_cmd_clear(&r);
    /* Another queue of the topic has its own max. */
    assert_int_equal(ask(fx, a, handle_get_max_offset, RMQ_REQ_GET_MAX_OFFSET, NULL, "T", 3, NULL, NULL, &r),
                     0);
    assert_int_equal(reply_i64(&r, "offset"), 0);
    rmq_cmd_clear(&r);
    assert_int_equal(ask(fx, a, handle_get_min_offset, RMQ_REQ_GET_MIN_OFFSET, NULL, "T", 2, NULL, NULL, &r),
                     0);
    assert_int_equal(reply_i64(&r, "offset"), 0);
    rmq_cmd_clear(&r);
    assert_int_equal(ask(fx, a, handle_search_offset, RMQ_REQ_SEARCH_OFFSET_BY_TIMESTAMP, NULL, "T", 2,
                         "timestamp", "1700000000000", &r),
                     0);
    assert_int_equal(reply_i64(&r, "offset"), 50);
    rmq_cmd_clear(&r);
    assert_int_equal(
        ask(fx, a, handle_search_offset, RMQ_REQ_SEARCH_OFFSET_BY_TIMESTAMP, NULL, "T", 2, NULL, NULL, &r),
        RMQ_RESP_SYSTEM_ERROR);
    assert_string_equal(r.remark, "missing field timestamp in SEARCH_OFFSET_BY_TIMESTAMP request");
    rmq_cmd_clear(&r);
    assert_int_equal(ask(fx, a, handle_earliest_msg_storetime, RMQ_REQ_GET_EARLIEST_MSG_STORETIME, NULL,
                         "Unknown", 0, NULL, NULL, &r),
                     0);
    assert_int_equal(reply_i64(&r, "timestamp"), -1);
    rmq_cmd_clear(&r);
}

/* UPDATE without a commitOffset changes nothing and says which field. */
static void test_update_missing_offset(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd r;
    assert_int_equal(
        ask(fx, a, handle_update_offset, RMQ_REQ_UPDATE_CONSUMER_OFFSET, "g", "T", 0, NULL, NULL, &r),
        RMQ_RESP_SYSTEM_ERROR);
    assert_string_equal(r.remark, "missing field commitOffset in UPDATE_CONSUMER_OFFSET request");
    rmq_cmd_clear(&r);
    assert_int_equal(fx->b.nacks, 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets"), 0);
    int64_t off;
    assert_int_not_equal(offsets_get(&fx->b.offsets, "g", "T", 0, &off), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_then_query, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_never_committed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_min_search_earliest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_missing_offset, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
