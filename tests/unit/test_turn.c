/* test_turn.c — one loop turn of the broker (server/requests/turn.c), the
 * same the daemon runs: admission (rate limit, channel row at the first
 * request, the cluster hook before dispatch, output held after a store
 * write), responses to our own requests, the close path, and before-sleep
 * committing what a held reply waits on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "conn.h"
#include "err.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"
#include "test_support.h"
#include "turn.h"

/* A GET_MIN_OFFSET of T/0: answered at once, writes nothing. */
static void min_offset_req(struct rmq_cmd *req, int32_t opaque)
{
    fx_request(req, RMQ_REQ_GET_MIN_OFFSET, opaque, 0);
    assert_int_equal(rmq_cmd_ext_set(req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(req, "queueId", 0), 0);
}

/* req as a frame read from peer i's connection (then cleared). */
static void frame(struct fx *fx, size_t i, struct rmq_cmd *req)
{
    broker_on_frame(&fx->b, fx_conn(fx, i), req);
    rmq_cmd_clear(req);
}

/* --max-requests-per-sec 2: the third request within the second is
 * answered SYSTEM_BUSY, and counted. */
static void test_rate_limit_answers_busy(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.max_requests_per_sec = 2;
    struct fx *fx = fx_new(&cfg);
    size_t a = fx_connect(fx);
    struct rmq_cmd req;
    for (int32_t opaque = 1; opaque <= 3; opaque++) {
        min_offset_req(&req, opaque);
        frame(fx, a, &req);
    }
    fx_iterate(fx);
    fx_expect_reply(fx, a, 1, RMQ_RESP_SUCCESS, NULL);
    fx_expect_reply(fx, a, 2, RMQ_RESP_SUCCESS, NULL);
    fx_expect_reply(fx, a, 3, RMQ_RESP_SYSTEM_BUSY, "[OVERLOAD] more than 2 requests/s on this connection");
    assert_int_equal(fx->b.stats.requests, 3);
    assert_int_equal(fx->b.stats.requests_throttled, 1);
    fx_free(fx);
}

/* A channel row is written at the first accepted request, not at accept,
 * and closed with its connection. */
static void test_channel_row_at_first_request(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect_bare(fx);
    uint64_t id = fx_conn(fx, a)->id;
    fx_iterate(fx);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM channels"), 0);
    struct rmq_cmd req;
    min_offset_req(&req, 1);
    frame(fx, a, &req);
    fx_iterate(fx);
    fx_expect_reply(fx, a, 1, RMQ_RESP_SUCCESS, NULL);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM channels WHERE closed_ms IS NULL"), 1);
    conn_close_async(fx_conn(fx, a), "closed by the test");
    fx_iterate(fx);
    assert_null(registry_channel(&fx->b.reg, id));
    assert_int_equal(
        fx_sql_int(fx, "SELECT count(*) FROM channels WHERE close_reason = 'closed by the test'"), 1);
}

/* A request that wrote to the store holds the connection's output and its
 * reply until the commit; one that wrote nothing does not. Before-sleep as
 * the daemon runs it commits because a held reply waits. */
static void test_store_write_holds_output(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    fx_iterate(fx);
    struct rmq_cmd req;
    min_offset_req(&req, 1);
    frame(fx, a, &req);
    assert_false(fx_conn(fx, a)->hold_output);
    fx_request(&req, RMQ_REQ_UPDATE_CONSUMER_OFFSET, 2, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", "g"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueId", 0), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "commitOffset", 5), 0);
    frame(fx, a, &req);
    assert_true(fx_conn(fx, a)->hold_output);
    assert_int_equal(fx->b.nacks, 1);
    assert_true(store_in_batch(fx->b.store));
    assert_int_equal(broker_before_sleep(&fx->b, BROKER_COMMIT_WHEN_DUE), RMQ_OK);
    assert_false(store_in_batch(fx->b.store));
    assert_int_equal(fx->b.nacks, 0);
    fx_expect_reply(fx, a, 1, RMQ_RESP_SUCCESS, NULL);
    fx_expect_reply(fx, a, 2, RMQ_RESP_SUCCESS, NULL);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets"), 1);
}

static int hook_calls;

static bool answer_everything(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    hook_calls++;
    reply_code(s, c, req, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, "answered by the hook");
    return true;
}

/* The cluster hook sees a request before dispatch_request, and a request it
 * answers is not dispatched again. */
static void test_dispatch_hook_first(void **state)
{
    struct fx *fx = *state;
    fx->b.hooks.dispatch = answer_everything;
    hook_calls = 0;
    size_t a = fx_connect(fx);
    struct rmq_cmd req;
    min_offset_req(&req, 1);
    frame(fx, a, &req);
    fx_iterate(fx);
    assert_int_equal(hook_calls, 1);
    fx_expect_reply(fx, a, 1, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, "answered by the hook");
    assert_int_equal(fx_drain(fx, a), 0);
}

/* A response frame that answers nothing we sent is dropped: no reply. */
static void test_stray_response_dropped(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd resp;
    fx_request(&resp, RMQ_RESP_SUCCESS, 77, RMQ_FLAG_RESPONSE);
    frame(fx, a, &resp);
    fx_iterate(fx);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx->b.stats.requests, 1);
}

TEST_MAIN(cmocka_unit_test(test_rate_limit_answers_busy), FX_TEST(test_channel_row_at_first_request),
          FX_TEST(test_store_write_holds_output), FX_TEST(test_dispatch_hook_first),
          FX_TEST(test_stray_response_dropped))
