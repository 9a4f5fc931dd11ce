/* test_running_info_body.c — ConsumerRunningInfo: parsing the queues out of
 * fastjson bodies (inline and string keys, malformed bodies, truncation,
 * failed allocations), and the encoder (exact bytes, read back by the
 * parser). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "running_info_body.h"
#include "test_support.h"

#include <string.h>
#include <time.h>

/* The shape a Java 4.9.8 consumer writes (fastjson, object keys inline). */
static const char java_body[] =
    "{\"jstack\":\"\",\"mqTable\":{{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"T\"}:{"
    "\"cachedMsgCount\":0,"
    "\"commitOffset\":5,\"droped\":false,\"locked\":false},{\"brokerName\":\"broker-a\",\"queueId\":3,"
    "\"topic\":\"T\"}"
    ":{\"cachedMsgCount\":1,\"droped\":false},{\"brokerName\":\"broker-b\",\"queueId\":1,\"topic\":\"%RETRY%"
    "G\"}:"
    "{\"droped\":true}},\"properties\":{\"PROP_CLIENT_VERSION\":\"V4_9_8\",\"allocateMessageQueueStrategy\":"
    "\"org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@1b2c3d\","
    "\"consumerGroup\":\"G\"},"
    "\"statusTable\":{\"T\":{\"consumeOKTPS\":0.0}},\"subscriptionSet\":[{\"topic\":\"T\",\"subString\":\"*"
    "\"}]}";

static void test_java_fastjson_body(void **state)
{
    (void)state;
    struct rmq_running_info ri;
    memset(&ri, 0, sizeof ri);
    char err[128];
    assert_int_equal(
        rmq_running_info_parse((const uint8_t *)java_body, strlen(java_body), &ri, err, sizeof err), 0);
    assert_int_equal(ri.nmqs, 2); /* the dropped retry queue is not held */
    assert_string_equal(ri.mqs[0].topic, "T");
    assert_string_equal(ri.mqs[0].broker_name, "broker-a");
    assert_int_equal(ri.mqs[0].queue_id, 0);
    assert_int_equal(ri.mqs[1].queue_id, 3);
    assert_non_null(strstr(ri.strategy, "AllocateMessageQueueAveragely"));
    assert_string_equal(ri.client_version, "V4_9_8");
    rmq_running_info_clear(&ri);
}

static void test_string_keys_and_empty_table(void **state)
{
    (void)state;
    const char *body =
        "{\"mqTable\":{\"{\\\"brokerName\\\":\\\"b\\\",\\\"queueId\\\":7,\\\"topic\\\":\\\"X\\\"}\":"
        "{\"droped\":false}}}";
    struct rmq_running_info ri;
    memset(&ri, 0, sizeof ri);
    assert_int_equal(rmq_running_info_parse((const uint8_t *)body, strlen(body), &ri, NULL, 0), 0);
    assert_int_equal(ri.nmqs, 1);
    assert_int_equal(ri.mqs[0].queue_id, 7);
    assert_null(ri.strategy);
    rmq_running_info_clear(&ri);
    const char *empty = "{\"mqTable\":{},\"properties\":{}}";
    assert_int_equal(rmq_running_info_parse((const uint8_t *)empty, strlen(empty), &ri, NULL, 0), 0);
    assert_int_equal(ri.nmqs, 0);
    rmq_running_info_clear(&ri);
}

static void test_malformed_bodies(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "[]",
        "{",
        "{\"mqTable\":[]}",
        "{\"mqTable\":{1:{}}}",
        "{\"mqTable\":{{\"topic\":\"T\"}:{}}}",
        "{\"mqTable\":{{\"brokerName\":\"b\",\"queueId\":-1,\"topic\":\"T\"}:{}}}",
        "{\"mqTable\":{{}:{}",
        "{\"a\" 1}",
        "{\"mqTable\":{{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}{}}}",
        "{\"a\\", /* ends on an escape's backslash: the scanner must stop at the end */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rmq_running_info ri;
        memset(&ri, 0, sizeof ri);
        char err[128] = "";
        int rc = rmq_running_info_parse((const uint8_t *)bad[i], strlen(bad[i]), &ri, err, sizeof err);
        if (rc != RMQ_EPROTO)
            fail_msg("case %zu (%s) gave %d", i, bad[i], rc);
        assert_true(err[0] != 0);
        assert_int_equal(ri.nmqs, 0);
    }
}

static void test_every_truncation(void **state)
{
    (void)state;
    size_t n = strlen(java_body);
    for (size_t cut = 0; cut < n; cut++) {
        struct rmq_running_info ri;
        memset(&ri, 0, sizeof ri);
        int rc = rmq_running_info_parse((const uint8_t *)java_body, cut, &ri, NULL, 0);
        assert_int_not_equal(rc, RMQ_ENOMEM);
        rmq_running_info_clear(&ri);
    }
}

static int ri_oom_run(void *ctx)
{
    struct rmq_running_info *ri = ctx;
    memset(ri, 0, sizeof *ri);
    return rmq_running_info_parse((const uint8_t *)java_body, strlen(java_body), ri, NULL, 0);
}

static void ri_oom_check(void *ctx, int rc)
{
    (void)rc;
    rmq_running_info_clear(ctx);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    struct rmq_running_info ri;
    test_oom_loop(
        &(struct test_oom){.run = ri_oom_run, .check = ri_oom_check, .also = RMQ_EPROTO, .max = 200}, &ri);
}

/* n minimal entries "{..queueId:i..}:{}" in an mqTable. Caller frees. */
static void minimal_table(struct buf *b, size_t n)
{
    buf_init(b, 0);
    assert_int_equal(buf_append_str(b, "{\"mqTable\":{"), RMQ_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(
            buf_appendf(b, "%s{\"brokerName\":\"b\",\"queueId\":%zu,\"topic\":\"T\"}:{}", i ? "," : "", i),
            RMQ_OK);
    assert_int_equal(buf_append_str(b, "}}"), RMQ_OK);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Over RMQ_RUNNING_INFO_MAX_BYTES the body is refused unread; over
 * RMQ_RUNNING_INFO_MAX_QUEUES at the first queue too many; at the byte
 * bound a Java-shaped body parses in a few milliseconds. */
static void test_bounds(void **state)
{
    (void)state;
    struct rmq_running_info ri;
    memset(&ri, 0, sizeof ri);
    char err[128];
    size_t big = (size_t)RMQ_RUNNING_INFO_MAX_BYTES + 1;
    uint8_t *junk = rmq_malloc(big);
    assert_non_null(junk);
    memset(junk, '{', big); /* would nest past any depth if it were read */
    assert_int_equal(rmq_running_info_parse(junk, big, &ri, err, sizeof err), RMQ_E2BIG);
    assert_non_null(strstr(err, "more than"));
    rmq_free(junk);

    struct buf b;
    minimal_table(&b, RMQ_RUNNING_INFO_MAX_QUEUES);
    assert_int_equal(rmq_running_info_parse(buf_head(&b), buf_live(&b), &ri, err, sizeof err), RMQ_OK);
    assert_int_equal(ri.nmqs, RMQ_RUNNING_INFO_MAX_QUEUES);
    assert_int_equal(ri.mqs[RMQ_RUNNING_INFO_MAX_QUEUES - 1].queue_id, RMQ_RUNNING_INFO_MAX_QUEUES - 1);
    rmq_running_info_clear(&ri);
    buf_free(&b);
    minimal_table(&b, RMQ_RUNNING_INFO_MAX_QUEUES + 1);
    assert_int_equal(rmq_running_info_parse(buf_head(&b), buf_live(&b), &ri, err, sizeof err), RMQ_E2BIG);
    assert_int_equal(ri.nmqs, 0);
    buf_free(&b);

    /* As many Java-shaped queues as fit the byte bound. */
    size_t n = 0, cap = 30000;
    struct rmq_running_info_queue *q = rmq_calloc(cap, sizeof *q);
    assert_non_null(q);
    for (; n < cap; n++)
        q[n] = (struct rmq_running_info_queue){"TopicTest", "broker-a", (int32_t)n, 123456, 1700000000000};
    struct rmq_running_info_spec spec = {NULL, 0, q, n, NULL, 0};
    buf_init(&b, 0);
    for (;;) {
        assert_int_equal(rmq_running_info_encode(&spec, &b), RMQ_OK);
        if (buf_live(&b) <= RMQ_RUNNING_INFO_MAX_BYTES)
            break;
        spec.nqueues = spec.nqueues * RMQ_RUNNING_INFO_MAX_BYTES / buf_live(&b) - 1;
        buf_reset(&b);
    }
    double t0 = now_s();
    assert_int_equal(rmq_running_info_parse(buf_head(&b), buf_live(&b), &ri, err, sizeof err), RMQ_OK);
    double dt = now_s() - t0;
    assert_int_equal(ri.nmqs, spec.nqueues);
    print_message("# %zu queues in %zu bytes parsed in %.1f ms\n", spec.nqueues, buf_live(&b), dt * 1e3);
    rmq_running_info_clear(&ri);
    buf_free(&b);
    rmq_free(q);
}

static void test_encode_and_read_back(void **state)
{
    (void)state;
    const struct rmq_running_info_prop props[] = {
        {"PROP_CLIENT_VERSION", "V5_3_3"},
        {"allocateMessageQueueStrategy", "S@1"},
    };
    const struct rmq_running_info_queue queues[] = {
        {"T", "broker-a", 0, 5, 7},
        {"T", "b\"x", 3, -1, 0},
    };
    struct rmq_subscription sub = {.topic = (char *)"T", .sub_version = 9};
    const struct rmq_running_info_spec spec = {props, 2, queues, 2, &sub, 1};
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_running_info_encode(&spec, &b), RMQ_OK);
    assert_int_equal(buf_terminate(&b), RMQ_OK);
#define PQ(commit, pull)                                                                                     \
    "{\"cachedMsgCount\":0,\"cachedMsgMaxOffset\":0,\"cachedMsgMinOffset\":0,\"cachedMsgSizeInMiB\":0,"      \
    "\"commitOffset\":" commit ",\"droped\":false,\"lastConsumeTimestamp\":0,\"lastLockTimestamp\":0,"       \
    "\"lastPullTimestamp\":" pull                                                                            \
    ",\"locked\":false,\"transactionMsgCount\":0,\"transactionMsgMaxOffset\":0,"                             \
    "\"transactionMsgMinOffset\":0,\"tryUnlockTimes\":0}"
    assert_string_equal(
        (const char *)buf_head(&b),
        "{\"mqTable\":{{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":"
        "\"T\"}:" PQ("5", "7") ",{\"brokerName\":\"b\\\"x\",\"queueId\":3,\"topic\":\"T\"}"
                               ":" PQ("-1", "0") "},\"properties\":{\"PROP_CLIENT_VERSION\":"
                                                 "\"V5_3_3\",\"allocateMessageQueueStrategy\":"
                                                 "\"S@1\"},\"statusTable\":{\"T\":{"
                                                 "\"consumeFailedMsgs\":0,\"consumeFailedTPS\":"
                                                 "0.0,"
                                                 "\"consumeOKTPS\":0.0,\"consumeRT\":0.0,"
                                                 "\"pullRT\":0.0,\"pullTPS\":0.0}},"
                                                 "\"subscriptionSet\":[{\"classFilterMode\":"
                                                 "false,\"codeSet\":[],\"expressionType\":"
                                                 "\"TAG\",\"subString\":\"*\",\"subVersion\":9,"
                                                 "\"tagsSet\":[],\"topic\":\"T\"}]}");
#undef PQ
    struct rmq_running_info ri;
    memset(&ri, 0, sizeof ri);
    assert_int_equal(rmq_running_info_parse(buf_head(&b), buf_live(&b), &ri, NULL, 0), RMQ_OK);
    assert_int_equal(ri.nmqs, 2);
    assert_string_equal(ri.mqs[1].broker_name, "b\"x");
    assert_int_equal(ri.mqs[1].queue_id, 3);
    assert_string_equal(ri.strategy, "S@1");
    assert_string_equal(ri.client_version, "V5_3_3");
    rmq_running_info_clear(&ri);
    buf_free(&b);
    /* A full buffer is restored. */
    buf_init(&b, 100);
    assert_int_equal(buf_append_str(&b, "x"), RMQ_OK);
    assert_int_not_equal(rmq_running_info_encode(&spec, &b), RMQ_OK);
    assert_int_equal(buf_live(&b), 1);
    buf_free(&b);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_java_fastjson_body),
                cmocka_unit_test(test_string_keys_and_empty_table), cmocka_unit_test(test_malformed_bodies),
                cmocka_unit_test(test_every_truncation), cmocka_unit_test(test_out_of_memory),
                cmocka_unit_test(test_encode_and_read_back), cmocka_unit_test(test_bounds))
