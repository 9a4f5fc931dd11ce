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
#include "test_support.h"

#include <string.h>

static int32_t next_opaque = 100;

/* One request: code with (group, topic, qid) plus one optional extra field
 * through handler; its reply must be want and, unless field is NULL, carry
 * field == value; remark, unless NULL, is the reply's exact remark. */
struct step {
    fx_handler handler;
    int32_t code;
    const char *group, *topic;
    int qid;
    const char *key, *val;
    int32_t want;
    const char *field;
    int64_t value;
    const char *remark;
};

/* Sends the step on peer i, runs an iteration and checks the reply. */
static void run_step(struct fx *fx, size_t i, const struct step *st)
{
    struct rmq_cmd req, r;
    int32_t opaque = next_opaque++;
    fx_request(&req, st->code, opaque, 0);
    if (st->group)
        assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", st->group), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", st->topic), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueId", st->qid), 0);
    if (st->key)
        assert_int_equal(rmq_cmd_ext_set(&req, st->key, st->val), 0);
    fx_handle(fx, i, st->handler, &req);
    int32_t code = fx_reply(fx, i, opaque, &r);
    if (code != st->want)
        fail_msg("request %d (queue %d, %s=%s): code %d, want %d", st->code, st->qid, st->key ? st->key : "-",
                 st->val ? st->val : "-", code, st->want);
    if (st->field) {
        int64_t v = 0;
        assert_int_equal(rmq_cmd_ext_get_i64(&r, st->field, &v), 0);
        if (v != st->value)
            fail_msg("request %d (group %s, queue %d): %s %lld, want %lld", st->code,
                     st->group ? st->group : "-", st->qid, st->field, (long long)v, (long long)st->value);
    }
    if (st->remark)
        assert_string_equal(r.remark, st->remark);
    rmq_cmd_clear(&r);
}

static void run_steps(struct fx *fx, size_t i, const struct step *steps, size_t n)
{
    for (size_t k = 0; k < n; k++)
        run_step(fx, i, &steps[k]);
}

#define UPDATE offset_req_update, RMQ_REQ_UPDATE_CONSUMER_OFFSET
#define QUERY offset_req_query, RMQ_REQ_QUERY_CONSUMER_OFFSET
#define MAX offset_req_get_max, RMQ_REQ_GET_MAX_OFFSET
#define MIN offset_req_get_min, RMQ_REQ_GET_MIN_OFFSET
#define SEARCH offset_req_search, RMQ_REQ_SEARCH_OFFSET_BY_TIMESTAMP
#define EARLIEST offset_req_earliest_msg_storetime, RMQ_REQ_GET_EARLIEST_MSG_STORETIME
#define NSTEPS(a) (sizeof(a) / sizeof(a)[0])

/* A commit is stored and then answered by QUERY; another group or queue
 * is unaffected; a later commit replaces it (also a lower one: ali-ons may
 * move an offset back). */
static void test_commit_then_query(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    static const struct step commit17[] = {
        {UPDATE, "g", "T", 1, "commitOffset", "17", RMQ_RESP_SUCCESS, NULL, 0, NULL},
    };
    run_steps(fx, a, commit17, NSTEPS(commit17));
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets WHERE group_name='g' AND topic='T' AND "
                                    "queue_id=1"),
                     17);
    static const struct step steps[] = {
        {QUERY, "g", "T", 1, NULL, NULL, 0, "offset", 17, NULL},
        {UPDATE, "g", "T", 1, "commitOffset", "-1", RMQ_RESP_SUCCESS, NULL, 0, NULL},
        /* a stored -1 (ali-ons) is "nothing committed", as the broker reads it: offset 0 */
        {QUERY, "g", "T", 1, NULL, NULL, 0, "offset", 0, NULL},
    };
    run_steps(fx, a, steps, NSTEPS(steps));
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets WHERE queue_id=1"), -1);
    /* Another group's view of the same queue: nothing committed. */
    static const struct step other[] = {
        {QUERY, "h", "T", 1, "setZeroIfNotFound", "false", RMQ_RESP_QUERY_NOT_FOUND, NULL, 0, NULL},
    };
    run_steps(fx, a, other, NSTEPS(other));
}

/* Never committed: offset 0, or QUERY_NOT_FOUND (22) when the client says
 * setZeroIfNotFound=false; "true" or a malformed value means 0. */
static void test_query_never_committed(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    static const struct step zero[] = {
        {QUERY, "g", "T", 0, NULL, NULL, 0, "offset", 0, NULL},
        {QUERY, "g", "T", 0, "setZeroIfNotFound", "true", 0, "offset", 0, NULL},
    };
    run_steps(fx, a, zero, NSTEPS(zero));
    struct rmq_cmd req, r;
    fx_request(&req, RMQ_REQ_QUERY_CONSUMER_OFFSET, 1, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", "g"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueId", 0), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "setZeroIfNotFound", "FALSE"), 0);
    fx_handle(fx, a, offset_req_query, &req);
    assert_int_equal(fx_reply(fx, a, 1, &r), RMQ_RESP_QUERY_NOT_FOUND);
    assert_null(rmq_cmd_ext_get(&r, "offset"));
    assert_non_null(r.remark);
    rmq_cmd_clear(&r);
    static const struct step maybe[] = {
        {QUERY, "g", "T", 0, "setZeroIfNotFound", "maybe", 0, "offset", 0, NULL},
    };
    run_steps(fx, a, maybe, NSTEPS(maybe));
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets"), 0);
}

/* GET_MAX_OFFSET is the highest offset any group committed for the queue
 * (0 when none), GET_MIN_OFFSET always 0, SEARCH the queue's max,
 * EARLIEST_MSG_STORETIME -1; none fails for an unknown queue. */
static void test_max_min_search_earliest(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    static const struct step steps[] = {
        {MAX, NULL, "T", 2, NULL, NULL, 0, "offset", 0, NULL},
        {UPDATE, "g", "T", 2, "commitOffset", "30", 0, NULL, 0, NULL},
        {UPDATE, "h", "T", 2, "commitOffset", "50", 0, NULL, 0, NULL},
        {UPDATE, "g", "T", 2, "commitOffset", "40", 0, NULL, 0, NULL},
        {MAX, NULL, "T", 2, NULL, NULL, 0, "offset", 50, NULL},
        /* Another queue of the topic has its own max. */
        {MAX, NULL, "T", 3, NULL, NULL, 0, "offset", 0, NULL},
        {MIN, NULL, "T", 2, NULL, NULL, 0, "offset", 0, NULL},
        {SEARCH, NULL, "T", 2, "timestamp", "1700000000000", 0, "offset", 50, NULL},
        {SEARCH, NULL, "T", 2, NULL, NULL, RMQ_RESP_SYSTEM_ERROR, NULL, 0,
         "missing field timestamp in SEARCH_OFFSET_BY_TIMESTAMP request"},
        {EARLIEST, NULL, "Unknown", 0, NULL, NULL, 0, "timestamp", -1, NULL},
    };
    run_steps(fx, a, steps, NSTEPS(steps));
}

/* UPDATE without a commitOffset changes nothing and says which field. */
static void test_update_missing_offset(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    static const struct step missing[] = {
        {UPDATE, "g", "T", 0, NULL, NULL, RMQ_RESP_SYSTEM_ERROR, NULL, 0,
         "missing field commitOffset in UPDATE_CONSUMER_OFFSET request"},
    };
    run_steps(fx, a, missing, NSTEPS(missing));
    assert_int_equal(fx->b.nacks, 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets"), 0);
    int64_t off;
    assert_int_not_equal(offsets_get(&fx->b.offsets, "g", "T", 0, &off), 0);
}

TEST_MAIN(FX_TEST(test_commit_then_query), FX_TEST(test_query_never_committed),
          FX_TEST(test_max_min_search_earliest), FX_TEST(test_update_missing_offset))
