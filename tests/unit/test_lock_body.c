/* test_lock_body.c — the queue-lock bodies: LockBatchRequestBody parsed
 * (5.x shape, malformed table, failed allocations) and encoded,
 * LockBatchResponseBody encoded (exact bytes) and parsed, round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "lock_body.h"
#include "mem.h"
#include "test_support.h"

#include <string.h>

static void test_lock_ok_encode(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    char t1[] = "T1", ba[] = "broker-a", bb[] = "broker-b";
    struct rmq_mq mqs[] = {{t1, ba, 0}, {t1, bb, 3}};
    assert_int_equal(rmq_lock_ok_encode(mqs, 2, &b), RMQ_OK);
    assert_buf_str(&b, "{\"lockOKMQSet\":[{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"T1\"},"
                       "{\"brokerName\":\"broker-b\",\"queueId\":3,\"topic\":\"T1\"}]}");
    buf_reset(&b);
    assert_int_equal(rmq_lock_ok_encode(NULL, 0, &b), RMQ_OK);
    assert_buf_str(&b, "{\"lockOKMQSet\":[]}");
    buf_free(&b);
}

/* 5.x LockBatchRequestBody (with onlyThisBroker), one queueId as a string. */
static const char lock_body[] =
    "{\"clientId\":\"127.0.0.1@c1\",\"consumerGroup\":\"G1\",\"mqSet\":[{\"brokerName\":\"broker-a\","
    "\"queueId\":0,\"topic\":\"T1\"},{\"brokerName\":\"broker-b\",\"queueId\":\"7\",\"topic\":\"T1\"}],"
    "\"onlyThisBroker\":false}\n";

static void test_lock_body(void **state)
{
    (void)state;
    const char *body = lock_body;
    struct rmq_lock_body lb;
    memset(&lb, 0, sizeof lb);
    char err[160] = "";
    assert_int_equal(rmq_lock_body_parse((const uint8_t *)body, strlen(body), &lb, err, sizeof err), RMQ_OK);
    assert_string_equal(lb.client_id, "127.0.0.1@c1");
    assert_string_equal(lb.consumer_group, "G1");
    assert_int_equal(lb.nmqs, 2);
    assert_string_equal(lb.mqs[1].broker_name, "broker-b");
    assert_int_equal(lb.mqs[1].queue_id, 7);
    /* The parsed set round-trips through the lock reply encoder. */
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_lock_ok_encode(lb.mqs, lb.nmqs, &b), RMQ_OK);
    assert_buf_str(&b, "{\"lockOKMQSet\":[{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"T1\"},"
                       "{\"brokerName\":\"broker-b\",\"queueId\":7,\"topic\":\"T1\"}]}");
    buf_free(&b);
    rmq_lock_body_clear(&lb);
    rmq_lock_body_clear(NULL);
}

static void test_lock_body_malformed(void **state)
{
    (void)state;
    struct rmq_lock_body lb;
    char err[160] = "";
    static const struct {
        const char *text, *reason;
    } bad[] = {
        {"{\"consumerGroup\":\"G\"}", "clientId: expected a non-empty string"},
        {"{\"clientId\":\"c\"}", "consumerGroup: expected a non-empty string"},
        {"{\"clientId\":\"c\",\"consumerGroup\":\"G\",\"mqSet\":{}}", "mqSet: expected an array"},
        {"{\"clientId\":\"c\",\"consumerGroup\":\"G\",\"mqSet\":[1]}", "mqSet[0]: expected an object"},
        {"{\"clientId\":\"c\",\"consumerGroup\":\"G\",\"mqSet\":[{\"brokerName\":\"b\",\"queueId\":0}]}",
         "mqSet[0].topic"},
        {"{\"clientId\":\"c\",\"consumerGroup\":\"G\",\"mqSet\":[{\"topic\":\"t\",\"queueId\":0}]}",
         "mqSet[0].brokerName"},
        {"{\"clientId\":\"c\",\"consumerGroup\":\"G\",\"mqSet\":[{\"topic\":\"t\",\"brokerName\":\"b\"}]}",
         "mqSet[0].queueId"},
        {"{\"clientId\":\"c\",\"consumerGroup\":\"G\",\"mqSet\":[{\"topic\":\"t\",\"brokerName\":\"b\","
         "\"queueId\":-1}]}",
         "mqSet[0].queueId"},
        {"{\"clientId\":\"c\",\"consumerGroup\":\"G\",\"mqSet\":[{\"topic\":\"t\",\"brokerName\":\"b\","
         "\"queueId\":true}]}",
         "mqSet[0].queueId"},
        {"nope", "lock body: invalid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&lb, 0, sizeof lb);
        err[0] = 0;
        int rc = rmq_lock_body_parse((const uint8_t *)bad[i].text, strlen(bad[i].text), &lb, err, sizeof err);
        if (rc != RMQ_EPROTO || !strstr(err, bad[i].reason))
            fail_msg("case %zu: rc %d err \"%s\", want \"%s\"", i, rc, err, bad[i].reason);
        assert_null(lb.client_id);
        assert_null(lb.mqs);
    }
}

static int lock_oom_run(void *ctx)
{
    struct rmq_lock_body *lb = ctx;
    memset(lb, 0, sizeof *lb);
    return rmq_lock_body_parse((const uint8_t *)lock_body, strlen(lock_body), lb, NULL, 0);
}

static void lock_oom_check(void *ctx, int rc)
{
    struct rmq_lock_body *lb = ctx;
    if (rc == RMQ_OK) {
        assert_int_equal(lb->nmqs, 2);
        rmq_lock_body_clear(lb);
        return;
    }
    assert_null(lb->mqs);
}

/* Allocation failures: RMQ_ENOMEM and nothing left, until success. */
static void test_lock_body_allocation_failures(void **state)
{
    (void)state;
    struct rmq_lock_body lb;
    test_oom_loop(&(struct test_oom){.run = lock_oom_run, .check = lock_oom_check, .max = 1000}, &lb);
}

struct ok_oom {
    const struct buf *b;
    struct rmq_mq *mqs;
    size_t n;
};

static int ok_oom_run(void *ctx)
{
    struct ok_oom *x = ctx;
    return rmq_lock_ok_parse(buf_head(x->b), buf_live(x->b), &x->mqs, &x->n, NULL, 0);
}

static void ok_oom_check(void *ctx, int rc)
{
    struct ok_oom *x = ctx;
    if (rc == RMQ_OK)
        rmq_mqs_free(x->mqs, x->n);
    else
        assert_null(x->mqs);
}

/* The request body as a Java client writes it, parsed back; the reply body
 * parsed back, and its malformed shapes. */
static void test_lock_round_trips(void **state)
{
    (void)state;
    struct rmq_lock_body lb;
    memset(&lb, 0, sizeof lb);
    assert_int_equal(rmq_lock_body_parse((const uint8_t *)lock_body, strlen(lock_body), &lb, NULL, 0),
                     RMQ_OK);
    static const char want[] =
        "{\"clientId\":\"127.0.0.1@c1\",\"consumerGroup\":\"G1\",\"mqSet\":[{\"brokerName\":\"broker-a\","
        "\"queueId\":0,\"topic\":\"T1\"},{\"brokerName\":\"broker-b\",\"queueId\":7,\"topic\":\"T1\"}]}";
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_lock_body_encode(&lb, &b), RMQ_OK);
    assert_buf_str(&b, want);
    struct rmq_lock_body again;
    memset(&again, 0, sizeof again);
    assert_int_equal(rmq_lock_body_parse(buf_head(&b), buf_live(&b), &again, NULL, 0), RMQ_OK);
    assert_int_equal(again.nmqs, 2);
    assert_int_equal(again.mqs[1].queue_id, 7);
    rmq_lock_body_clear(&again);

    buf_reset(&b);
    assert_int_equal(rmq_lock_ok_encode(lb.mqs, lb.nmqs, &b), RMQ_OK);
    struct rmq_mq *mqs;
    size_t n;
    char err[160] = "";
    assert_int_equal(rmq_lock_ok_parse(buf_head(&b), buf_live(&b), &mqs, &n, err, sizeof err), RMQ_OK);
    assert_int_equal(n, 2);
    assert_string_equal(mqs[1].broker_name, "broker-b");
    assert_string_equal(mqs[1].topic, "T1");
    assert_int_equal(mqs[1].queue_id, 7);
    rmq_mqs_free(mqs, n);
    const char *empty = "{\"lockOKMQSet\":[]}";
    assert_int_equal(rmq_lock_ok_parse((const uint8_t *)empty, strlen(empty), &mqs, &n, NULL, 0), RMQ_OK);
    assert_int_equal(n, 0);
    assert_null(mqs);
    static const struct {
        const char *text, *reason;
    } bad[] = {
        {"{\"lockOKMQSet\":{}}", "lockOKMQSet: expected an array"},
        {"{\"lockOKMQSet\":[{\"topic\":\"t\",\"brokerName\":\"b\",\"queueId\":-1}]}",
         "lockOKMQSet[0].queueId"},
        {"[]", "lock reply: expected a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc =
            rmq_lock_ok_parse((const uint8_t *)bad[i].text, strlen(bad[i].text), &mqs, &n, err, sizeof err);
        if (rc != RMQ_EPROTO || !strstr(err, bad[i].reason))
            fail_msg("case %zu: rc %d err \"%s\", want \"%s\"", i, rc, err, bad[i].reason);
        assert_null(mqs);
        assert_int_equal(n, 0);
    }
    struct ok_oom x = {.b = &b};
    test_oom_loop(&(struct test_oom){.run = ok_oom_run, .check = ok_oom_check, .max = 1000}, &x);

    /* A full buffer is restored. */
    struct buf small;
    buf_init(&small, 40);
    assert_int_equal(rmq_lock_body_encode(&lb, &small), RMQ_E2BIG);
    assert_int_equal(buf_live(&small), 0);
    buf_free(&small);
    buf_free(&b);
    rmq_lock_body_clear(&lb);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_lock_ok_encode),
                cmocka_unit_test(test_lock_body), cmocka_unit_test(test_lock_body_malformed),
                cmocka_unit_test(test_lock_body_allocation_failures), cmocka_unit_test(test_lock_round_trips))
