/* test_lock_requests.c — LOCK_BATCH_MQ / UNLOCK_BATCH_MQ
 * (server/requests/lock_requests.c with model/queue_locks.c) on a broker
 * fixture: grant, renewal, refusal while another client holds the lease,
 * takeover after --lock-expiry-ms, unlock only by the holder, locks that
 * outlive the connection, bad bodies (docs/protocol.md §3.7, §7). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "conn.h"
#include "lock_requests.h"
#include "request_codes.h"
#include "test_support.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int setup(void **state)
{
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.lock_expiry_ms = 1000;
    *state = fx_new(&cfg);
    return 0;
}

static int32_t next_opaque = 1;

/* Sends a lock (or unlock) body of client for queue ids qids of topic T
 * on broker-a, and returns the reply (caller clears). */
static int32_t lock_req(struct fx *fx, size_t i, bool unlock, int32_t flag, const char *group,
                        const char *client, const int *qids, size_t n, struct rmq_cmd *out)
{
    char body[2048];
    int len = snprintf(body, sizeof body, "{\"clientId\":\"%s\",\"consumerGroup\":\"%s\",\"mqSet\":[", client,
                       group);
    for (size_t k = 0; k < n; k++)
        len +=
            snprintf(body + len, sizeof body - (size_t)len,
                     "%s{\"brokerName\":\"broker-a\",\"queueId\":%d,\"topic\":\"T\"}", k ? "," : "", qids[k]);
    len += snprintf(body + len, sizeof body - (size_t)len, "]}");
    assert_true(len > 0 && (size_t)len < sizeof body);
    struct rmq_cmd req;
    int32_t opaque = next_opaque++;
    fx_request(&req, unlock ? RMQ_REQ_UNLOCK_BATCH_MQ : RMQ_REQ_LOCK_BATCH_MQ, opaque, flag);
    assert_int_equal(rmq_cmd_set_body_copy(&req, body, (size_t)len), 0);
    fx_handle(fx, i, unlock ? lock_req_unlock_batch : lock_req_lock_batch, &req);
    if (flag & RMQ_FLAG_ONEWAY)
        return -1;
    return fx_reply(fx, i, opaque, out);
}

/* Locks the queues and returns how many lockOKMQSet lists, each id in
 * order into got. */
static size_t lock_ok(struct fx *fx, size_t i, const char *group, const char *client, const int *qids,
                      size_t n, int *got)
{
    struct rmq_cmd r;
    assert_int_equal(lock_req(fx, i, false, 0, group, client, qids, n, &r), RMQ_RESP_SUCCESS);
    json_error_t err;
    json_t *body = json_loadb((const char *)r.body, r.body_len, 0, &err);
    assert_non_null(body);
    json_t *set = json_object_get(body, "lockOKMQSet");
    assert_true(json_is_array(set));
    size_t k;
    json_t *mq;
    json_array_foreach(set, k, mq)
    {
        assert_string_equal(json_string_value(json_object_get(mq, "topic")), "T");
        assert_string_equal(json_string_value(json_object_get(mq, "brokerName")), "broker-a");
        got[k] = (int)json_integer_value(json_object_get(mq, "queueId"));
    }
    size_t count = json_array_size(set);
    json_decref(body);
    rmq_cmd_clear(&r);
    return count;
}

static void test_lock_relock_refused_unlock(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    int q[] = {0, 1, 2}, got[8];
    assert_int_equal(lock_ok(fx, a, "g", "cA", q, 2, got), 2);
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 1);
    /* Another client gets only the free queue, in request order. */
    assert_int_equal(lock_ok(fx, b, "g", "cB", q, 3, got), 1);
    assert_int_equal(got[0], 2);
    /* The holder renews; another group's lock of the same queue is separate. */
    assert_int_equal(lock_ok(fx, a, "g", "cA", q, 2, got), 2);
    assert_int_equal(lock_ok(fx, b, "h", "cB", q, 1, got), 1);
    /* Unlock by a non-holder changes nothing; by the holder frees it. */
    struct rmq_cmd r;
    assert_int_equal(lock_req(fx, b, true, 0, "g", "cB", q, 1, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(lock_ok(fx, b, "g", "cB", q, 1, got), 0);
    assert_int_equal(lock_req(fx, a, true, 0, "g", "cA", q, 1, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(lock_ok(fx, b, "g", "cB", q, 1, got), 1);
    assert_int_equal(got[0], 0);
}

/* --lock-expiry-ms: a lease not renewed for more than the expiry may be
 * taken by another client; a renewed one may not. */
static void test_lease_expiry(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    int q[] = {0, 1}, got[4];
    assert_int_equal(lock_ok(fx, a, "g", "cA", q, 2, got), 2);
    fx_advance(fx, 600);
    assert_int_equal(lock_ok(fx, a, "g", "cA", q + 1, 1, got), 1); /* renews queue 1 only */
    fx_advance(fx, 400);
    assert_int_equal(lock_ok(fx, b, "g", "cB", q, 2, got), 0); /* queue 0 at exactly 1000 ms */
    fx_advance(fx, 1);
    assert_int_equal(lock_ok(fx, b, "g", "cB", q, 2, got), 1);
    assert_int_equal(got[0], 0);
    /* The old holder lost it. */
    assert_int_equal(lock_ok(fx, a, "g", "cA", q, 1, got), 0);
    char topic[] = "T", broker[] = "broker-a";
    struct rmq_mq mq = {.topic = topic, .broker_name = broker, .queue_id = 0};
    assert_string_equal(queue_locks_holder(&fx->b.locks, "g", &mq), "cB");
}

/* A closed connection does not release its locks: the same client id on
 * a new connection still holds them, another client waits for the lease. */
static void test_locks_outlive_connection(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    int q[] = {5}, got[2];
    assert_int_equal(lock_ok(fx, a, "g", "cA", q, 1, got), 1);
    conn_close_async(fx_conn(fx, a), "test");
    fx_iterate(fx);
    assert_int_equal(lock_ok(fx, b, "g", "cB", q, 1, got), 0);
    size_t a2 = fx_connect(fx);
    assert_int_equal(lock_ok(fx, a2, "g", "cA", q, 1, got), 1);
}

/* A oneway UNLOCK is applied but not answered; a bad body is SYSTEM_ERROR
 * naming the request. */
static void test_oneway_unlock_and_bad_body(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    int q[] = {3}, got[2];
    assert_int_equal(lock_ok(fx, a, "g", "cA", q, 1, got), 1);
    assert_int_equal(lock_req(fx, a, true, RMQ_FLAG_ONEWAY, "g", "cA", q, 1, NULL), -1);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(lock_ok(fx, b, "g", "cB", q, 1, got), 1);

    /* clientId is required */
    fx_handle_body(fx, a, lock_req_lock_batch, RMQ_REQ_LOCK_BATCH_MQ, 99,
                   "{\"consumerGroup\":\"g\",\"mqSet\":[]}");
    fx_expect_reply_prefix(fx, a, 99, RMQ_RESP_SYSTEM_ERROR, "bad LOCK_BATCH_MQ body: ");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, fx_teardown)

TEST_MAIN(T(test_lock_relock_refused_unlock), T(test_lease_expiry), T(test_locks_outlive_connection),
          T(test_oneway_unlock_and_bad_body))
