/* test_sim_body.c — what `rmqcoord sim` puts into the bodies it sends: the
 * Java HeartbeatData shape (exact bytes, and re-parsed by the daemon's
 * parser), the GET_CONSUMER_RUNNING_INFO body with its properties and
 * TreeMap order (exact bytes, failed allocations), version and strategy
 * names, and the holdings line. The parsers of what it reads are tested
 * with their bodies (test_route_body.c, test_consumer_list_body.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "sim_body.h"
#include "sim_rinfo.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

#define SUB(topic, ver)                                                                                      \
    "{\"classFilterMode\":false,\"codeSet\":[],\"expressionType\":\"TAG\",\"subString\":\"*\","              \
    "\"subVersion\":" ver ",\"tagsSet\":[],\"topic\":\"" topic "\"}"

/* java.md: the 4.9.8 heartbeat, byte for byte (with our sub order). */
static const char java_hb[] =
    "{\"clientID\":\"127.0.0.1@c1\",\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\","
    "\"consumeType\":\"CONSUME_PASSIVELY\",\"groupName\":\"G1\",\"messageModel\":\"CLUSTERING\","
    "\"subscriptionDataSet\":[" SUB("T1", "1796218186688") "," SUB(
        "%RETRY%G1", "1796218186708") "],"
                                      "\"unitMode\":false}],\"producerDataSet\":[{\"groupName\":\"CLIENT_"
                                      "INNER_PRODUCER\"}]}";

static void test_heartbeat_java_shape(void **state)
{
    (void)state;
    struct sim_sub subs[] = {{"T1", 1796218186688LL}, {"%RETRY%G1", 1796218186708LL}};
    struct sim_heartbeat_spec hb = {.client_id = "127.0.0.1@c1", .group = "G1", .subs = subs, .nsubs = 2};
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(sim_heartbeat_encode(&hb, &b), RMQ_OK);
    assert_buf_str(&b, java_hb);

    /* The daemon's own parser reads it back as one clustering push consumer. */
    struct rmq_heartbeat parsed;
    memset(&parsed, 0, sizeof parsed);
    char err[160];
    assert_int_equal(rmq_heartbeat_parse(buf_head(&b), buf_live(&b), &parsed, err, sizeof err), RMQ_OK);
    assert_string_equal(parsed.client_id, "127.0.0.1@c1");
    assert_int_equal(parsed.nconsumers, 1);
    assert_int_equal(parsed.consumers[0].message_model, RMQ_MODEL_CLUSTERING);
    assert_int_equal(parsed.consumers[0].consume_type, RMQ_CONSUME_PASSIVELY);
    assert_int_equal(parsed.consumers[0].nsubs, 2);
    assert_int_equal(parsed.consumers[0].subs[1].sub_version, 1796218186708LL);
    assert_int_equal(parsed.nproducers, 1);
    rmq_heartbeat_clear(&parsed);
    buf_free(&b);
}

static void test_heartbeat_broadcast_v5(void **state)
{
    (void)state;
    struct sim_sub subs[] = {{"T", 5}};
    struct sim_heartbeat_spec hb = {
        .client_id = "c\"1", .group = "G", .broadcast = true, .v5_fields = true, .subs = subs, .nsubs = 1};
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(sim_heartbeat_encode(&hb, &b), RMQ_OK);
    assert_buf_str(
        &b,
        "{\"clientID\":\"c\\\"1\",\"consumerDataSet\":[{\"consumeFromWhere\":"
        "\"CONSUME_FROM_LAST_OFFSET\",\"consumeType\":\"CONSUME_PASSIVELY\",\"groupName\":\"G\","
        "\"messageModel\":\"BROADCASTING\",\"subscriptionDataSet\":[" SUB(
            "T", "5") "],"
                      "\"unitMode\":false}],\"heartbeatFingerprint\":0,\"producerDataSet\":[{\"groupName\":"
                      "\"CLIENT_INNER_PRODUCER\"}],\"withoutSub\":false}");
    buf_free(&b);
}

#define PQ_INFO(commit, pull)                                                                                \
    "{\"cachedMsgCount\":0,\"cachedMsgMaxOffset\":0,\"cachedMsgMinOffset\":0,\"cachedMsgSizeInMiB\":0,"      \
    "\"commitOffset\":" commit ",\"droped\":false,\"lastConsumeTimestamp\":0,\"lastLockTimestamp\":0,"       \
    "\"lastPullTimestamp\":" pull                                                                            \
    ",\"locked\":false,\"transactionMsgCount\":0,\"transactionMsgMaxOffset\":0,"                             \
    "\"transactionMsgMinOffset\":0,\"tryUnlockTimes\":0}"

#define CONSUME_STATUS                                                                                       \
    "{\"consumeFailedMsgs\":0,\"consumeFailedTPS\":0.0,\"consumeOKTPS\":0.0,\"consumeRT\":0.0,"              \
    "\"pullRT\":0.0,\"pullTPS\":0.0}"
#define MQ(topic, qid) "{\"brokerName\":\"broker-a\",\"queueId\":" qid ",\"topic\":\"" topic "\"}"

/* One piece of the body a line (clang-format would break the pieces apart). */
// clang-format off
static const char rinfo_want[] =
    "{\"mqTable\":{" MQ("%RETRY%G", "0") ":" PQ_INFO("0", "7") ","
    MQ("T", "2") ":" PQ_INFO("5", "1700000000001") ","
    MQ("T", "10") ":" PQ_INFO("42", "1700000000002") "},"
    "\"properties\":{\"PROP_CLIENT_VERSION\":\"V4_9_8\",\"PROP_CONSUMEORDERLY\":\"false\","
    "\"PROP_CONSUMER_START_TIMESTAMP\":\"1700000000000\",\"PROP_CONSUME_TYPE\":\"CONSUME_PASSIVELY\","
    "\"PROP_NAMESERVER_ADDR\":\"127.0.0.1:9876;\",\"PROP_THREADPOOL_CORE_SIZE\":\"20\","
    "\"adjustThreadPoolNumsThreshold\":\"100000\","
    "\"allocateMessageQueueStrategy\":"
    "\"org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle@1\","
    "\"awaitTerminationMillisWhenShutdown\":\"0\",\"consumeConcurrentlyMaxSpan\":\"2000\","
    "\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\",\"consumeMessageBatchMaxSize\":\"1\","
    "\"consumeThreadMax\":\"20\",\"consumeThreadMin\":\"20\",\"consumeTimeout\":\"15\","
    "\"consumeTimestamp\":\"20231114214320\",\"consumerGroup\":\"G\",\"maxReconsumeTimes\":\"-1\","
    "\"messageModel\":\"CLUSTERING\",\"postSubscriptionWhenPull\":\"false\",\"pullBatchSize\":\"32\","
    "\"pullInterval\":\"0\",\"pullThresholdForQueue\":\"1000\",\"pullThresholdForTopic\":\"-1\","
    "\"pullThresholdSizeForQueue\":\"100\",\"pullThresholdSizeForTopic\":\"-1\","
    "\"subscription\":\"{}\",\"suspendCurrentQueueTimeMillis\":\"1000\",\"unitMode\":\"false\"},"
    "\"statusTable\":{\"%RETRY%G\":" CONSUME_STATUS ",\"T\":" CONSUME_STATUS "},"
    "\"subscriptionSet\":[" SUB("%RETRY%G", "2") "," SUB("T", "1") "]}";
// clang-format on

/* The running info of rinfo_want, with the arrays it points into. */
struct rinfo_case {
    struct sim_rinfo ri;
    struct sim_rinfo_queue qs[3];
    struct sim_sub subs[2];
};

static void fill_rinfo(struct rinfo_case *rc)
{
    struct sim_rinfo *ri = &rc->ri;
    struct sim_rinfo_queue *qs = rc->qs;
    struct sim_sub *subs = rc->subs;
    /* Unsorted on purpose: the body is in MessageQueue / SubscriptionData order. */
    qs[0] = (struct sim_rinfo_queue){{"T", "broker-a", 10}, 42, 1700000000002LL};
    qs[1] = (struct sim_rinfo_queue){{"%RETRY%G", "broker-a", 0}, 0, 7};
    qs[2] = (struct sim_rinfo_queue){{"T", "broker-a", 2}, 5, 1700000000001LL};
    subs[0] = (struct sim_sub){"T", 1};
    subs[1] = (struct sim_sub){"%RETRY%G", 2};
    *ri = (struct sim_rinfo){.group = "G",
                             .namesrv = "127.0.0.1:9876",
                             .strategy = ALLOCATE_AVG_BY_CIRCLE,
                             .version = 409,
                             .start_ms = 1700000000000LL,
                             .queues = qs,
                             .nqueues = 3,
                             .subs = subs,
                             .nsubs = 2};
}

static void test_running_info_exact(void **state)
{
    (void)state;
    struct rinfo_case c;
    fill_rinfo(&c);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(sim_running_info_encode(&c.ri, &b), RMQ_OK);
    assert_buf_str(&b, rinfo_want);
    assert_string_equal(c.qs[0].mq.topic, "T"); /* the caller's arrays are not reordered */

    /* Empty holdings: an empty map, still valid for a fastjson reader. */
    buf_reset(&b);
    c.ri.nqueues = 0;
    c.ri.nsubs = 0;
    c.ri.broadcast = true;
    assert_int_equal(sim_running_info_encode(&c.ri, &b), RMQ_OK);
    assert_int_equal(buf_terminate(&b), RMQ_OK);
    assert_non_null(strstr((const char *)buf_head(&b), "{\"mqTable\":{},\"properties\":{"));
    assert_non_null(strstr((const char *)buf_head(&b), "\"messageModel\":\"BROADCASTING\""));
    assert_non_null(strstr((const char *)buf_head(&b), "\"statusTable\":{},\"subscriptionSet\":[]}"));
    buf_free(&b);
}

struct rinfo_oom {
    struct rinfo_case c;
    struct buf b;
};

static void rinfo_oom_setup(void *ctx)
{
    buf_init(&((struct rinfo_oom *)ctx)->b, 0);
}

static int rinfo_oom_run(void *ctx)
{
    struct rinfo_oom *x = ctx;
    return sim_running_info_encode(&x->c.ri, &x->b);
}

static void rinfo_oom_check(void *ctx, int rc)
{
    struct rinfo_oom *x = ctx;
    if (rc == RMQ_OK)
        assert_buf_str(&x->b, rinfo_want);
    else
        assert_int_equal(buf_live(&x->b), 0); /* nothing half-written */
    buf_free(&x->b);
}

static void test_running_info_oom(void **state)
{
    (void)state;
    struct rinfo_oom x;
    fill_rinfo(&x.c);
    test_oom_loop(
        &(struct test_oom){
            .setup = rinfo_oom_setup, .run = rinfo_oom_run, .check = rinfo_oom_check, .max = 1000},
        &x);
    /* A capped buffer fails cleanly too. */
    struct buf small;
    buf_init(&small, 64);
    assert_int_not_equal(sim_running_info_encode(&x.c.ri, &small), RMQ_OK);
    assert_int_equal(buf_live(&small), 0);
    buf_free(&small);
}

static void test_names(void **state)
{
    (void)state;
    char v[32];
    static const struct {
        int ordinal;
        const char *name;
    } versions[] = {{409, "V4_9_8"}, {408, "V4_9_8_SNAPSHOT"}, {413, "V5_0_0"},          {479, "V5_3_3"},
                    {401, "V4_9_4"}, {213, "V4_0_0"},          {212, "V4_0_0_SNAPSHOT"}, {121, "V121"}};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        sim_version_name(versions[i].ordinal, v, sizeof v);
        assert_string_equal(v, versions[i].name);
    }
    assert_string_equal(sim_strategy_class(ALLOCATE_AVG),
                        "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely");
    assert_string_equal(sim_strategy_class(ALLOCATE_CONSISTENT_HASH),
                        "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash");
    assert_string_equal(sim_strategy_class(ALLOCATE_MACHINE_ROOM_NEARBY),
                        "org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby");
    assert_string_equal(sim_strategy_class((enum allocate_strategy)99), "?");
}

static void test_holdings_line(void **state)
{
    (void)state;
    struct allocate_queue qs[] = {{"T", "broker-a", 3}, {"T", "b\\x", 0}};
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(sim_holdings_line_encode(&b, 1700000000123LL, "c-1", "T", qs, 2, "notify"), RMQ_OK);
    assert_buf_str(&b,
                   "{\"t\":1700000000123,\"clientId\":\"c-1\",\"topic\":\"T\",\"queues\":[{\"brokerName\":"
                   "\"broker-a\",\"queueId\":3},{\"brokerName\":\"b\\\\x\",\"queueId\":0}],\"reason\":"
                   "\"notify\"}");
    buf_reset(&b);
    assert_int_equal(sim_holdings_line_encode(&b, 1, "c", "T", NULL, 0, "start"), RMQ_OK);
    assert_buf_str(&b, "{\"t\":1,\"clientId\":\"c\",\"topic\":\"T\",\"queues\":[],\"reason\":\"start\"}");
    buf_free(&b);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_heartbeat_java_shape),
                cmocka_unit_test(test_heartbeat_broadcast_v5), cmocka_unit_test(test_running_info_exact),
                cmocka_unit_test(test_running_info_oom), cmocka_unit_test(test_names),
                cmocka_unit_test(test_holdings_line))
