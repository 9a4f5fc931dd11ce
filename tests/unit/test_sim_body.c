/* test_sim_body.c — the bodies `rmqcoord sim` writes and reads: the Java
 * HeartbeatData shape (exact bytes, and re-parsed by the daemon's parser),
 * TopicRouteData with quoted and fastjson bare keys (plus a malformed table,
 * truncation at every byte and failed allocations), the consumer list, the
 * GET_CONSUMER_RUNNING_INFO body with inline unquoted mqTable keys (exact
 * bytes), version and strategy names, and the holdings line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "sim_body.h"

#include <stdio.h>
#include <string.h>

static void assert_buf_str(struct buf *b, const char *want)
{
    assert_int_equal(buf_terminate(b), RMQ_OK);
    assert_string_equal((const char *)buf_head(b), want);
}

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

static int parse_route(const char *text, struct sim_route *r)
{
    memset(r, 0, sizeof *r);
    char err[160];
    return sim_route_parse((const uint8_t *)text, strlen(text), r, err, sizeof err);
}

static const char route_bare[] =
    "{\"brokerDatas\":[{\"brokerAddrs\":{1:\"10.0.0.2:10911\",0:\"127.0.0.1:10911\"},\"brokerName\":\"broker-"
    "a\","
    "\"cluster\":\"DefaultCluster\"},{\"brokerAddrs\":{ 2 : \"10.0.0.9:1\"},\"brokerName\":\"b,{1:\\\"x\","
    "\"cluster\":\"C\"}],\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
    "\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4},{\"brokerName\":\"b,{1:\\\"x\",\"perm\":2,"
    "\"readQueueNums\":3,\"topicSysFlag\":0,\"writeQueueNums\":3}],\"codes\":[1,2,{3:[4,5]}]}";

static void test_route_bare_keys(void **state)
{
    (void)state;
    struct sim_route r;
    assert_int_equal(parse_route(route_bare, &r), RMQ_OK);
    assert_int_equal(r.nbrokers, 2);
    assert_string_equal(r.brokers[0].name, "broker-a");
    assert_string_equal(r.brokers[0].master, "127.0.0.1:10911");
    assert_int_equal(r.brokers[0].naddrs, 2);
    assert_string_equal(r.brokers[0].addrs[0], "127.0.0.1:10911"); /* ascending id */
    assert_string_equal(r.brokers[0].addrs[1], "10.0.0.2:10911");
    assert_string_equal(r.brokers[1].name, "b,{1:\"x"); /* digits after a brace inside a string */
    assert_null(r.brokers[1].master);
    assert_string_equal(sim_route_addr_of(&r, "b,{1:\"x"), "10.0.0.9:1"); /* no master: a slave */
    assert_string_equal(sim_route_addr_of(&r, "broker-a"), "127.0.0.1:10911");
    assert_null(sim_route_addr_of(&r, "nope"));
    assert_int_equal(r.nqueues, 2);
    assert_int_equal(r.queues[0].read_queue_nums, 4);
    assert_int_equal(r.queues[1].perm, 2);

    struct sim_route q;
    assert_int_equal(
        parse_route("{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\",\"1\":"
                    "\"10.0.0.2:10911\"},\"brokerName\":\"broker-a\"},{\"brokerAddrs\":{\"2\":"
                    "\"10.0.0.9:1\"},\"brokerName\":\"b,{1:\\\"x\"}],\"queueDatas\":[{\"brokerName\":"
                    "\"broker-a\",\"perm\":6,\"readQueueNums\":4},{\"brokerName\":\"b,{1:\\\"x\","
                    "\"perm\":2,\"readQueueNums\":3}]}",
                    &q),
        RMQ_OK);
    assert_true(sim_route_equal(&r, &q)); /* quoted keys read the same */
    q.queues[0].read_queue_nums = 8;
    assert_false(sim_route_equal(&r, &q));
    sim_route_clear(&q);
    sim_route_clear(&r);
}

static void test_route_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "[]",
        "{}",
        "{\"brokerDatas\":{},\"queueDatas\":[]}",
        "{\"brokerDatas\":[],\"queueDatas\":{}}",
        "{\"brokerDatas\":[{\"brokerName\":\"a\"}],\"queueDatas\":[]}",
        "{\"brokerDatas\":[{\"brokerName\":\"a\",\"brokerAddrs\":{0:5}}],\"queueDatas\":[]}",
        "{\"brokerDatas\":[],\"queueDatas\":[{\"brokerName\":\"a\",\"perm\":6}]}",
        "{\"brokerDatas\":[],\"queueDatas\":[{\"brokerName\":\"a\",\"perm\":6,\"readQueueNums\":-1}]}",
        "{\"brokerDatas\":[],\"queueDatas\":[{\"brokerName\":\"a\",\"perm\":6,\"readQueueNums\":70000}]}",
        "{\"brokerDatas\":[],\"queueDatas\":[{\"brokerName\":1,\"perm\":6,\"readQueueNums\":1}]}",
        "{\"brokerDatas\":[{0:1}],\"queueDatas\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sim_route r;
        assert_int_equal(parse_route(bad[i], &r), RMQ_EPROTO);
        assert_int_equal(r.nbrokers + r.nqueues, 0);
    }
    /* Nesting deeper than the bound is refused, not recursed into. */
    char deep[RMQ_ROUTE_MAX_DEPTH * 2 + 8];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    struct sim_route r;
    assert_int_equal(parse_route(deep, &r), RMQ_EPROTO);
}

static void test_route_truncation_and_oom(void **state)
{
    (void)state;
    size_t n = strlen(route_bare);
    for (size_t cut = 0; cut < n; cut++) {
        struct sim_route r = {0};
        char err[160];
        int rc = sim_route_parse((const uint8_t *)route_bare, cut, &r, err, sizeof err);
        assert_int_equal(rc, RMQ_EPROTO);
    }
    for (long fail = 0;; fail++) {
        struct sim_route r = {0};
        char err[160];
        rmq_mem_fail_after(fail);
        int rc = sim_route_parse((const uint8_t *)route_bare, n, &r, err, sizeof err);
        rmq_mem_fail_after(-1);
        if (rc == RMQ_OK) {
            sim_route_clear(&r);
            break;
        }
        assert_true(rc == RMQ_ENOMEM || rc == RMQ_EPROTO); /* jansson reports OOM as a parse error */
        assert_true(fail < 1000);
    }
}

static void test_consumer_list(void **state)
{
    (void)state;
    const char *text = "{\"consumerIdList\":[\"b\",\"a\",\"b\"]}\n";
    char **ids = NULL;
    size_t n = 0;
    char err[160];
    assert_int_equal(sim_consumer_list_parse((const uint8_t *)text, strlen(text), &ids, &n, err, sizeof err),
                     0);
    assert_int_equal(n, 3);
    assert_string_equal(ids[0], "b");
    assert_string_equal(ids[2], "b"); /* duplicates kept, as the client keeps them */
    sim_ids_free(ids, n);
    static const char *const bad[] = {"{}", "{\"consumerIdList\":{}}", "{\"consumerIdList\":[1]}", "[", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(
            sim_consumer_list_parse((const uint8_t *)bad[i], strlen(bad[i]), &ids, &n, err, sizeof err),
            RMQ_EPROTO);
    for (long fail = 0;; fail++) {
        rmq_mem_fail_after(fail);
        int rc = sim_consumer_list_parse((const uint8_t *)text, strlen(text), &ids, &n, err, sizeof err);
        rmq_mem_fail_after(-1);
        if (rc == RMQ_OK) {
            sim_ids_free(ids, n);
            break;
        }
        assert_true(rc == RMQ_ENOMEM || rc == RMQ_EPROTO);
        assert_true(fail < 1000);
    }
}

#define PQ_INFO(commit, pull)                                                                                \
    "{\"cachedMsgCount\":0,\"cachedMsgMaxOffset\":0,\"cachedMsgMinOffset\":0,\"cachedMsgSizeInMiB\":0,"      \
    "\"commitOffset\":" commit ",\"droped\":false,\"lastConsumeTimestamp\":0,\"lastLockTimestamp\":0,"       \
    "\"lastPullTimestamp\":" pull                                                                            \
    ",\"locked\":false,\"transactionMsgCount\":0,\"transactionMsgMaxOffset\":0,"                             \
    "\"transactionMsgMinOffset\":0,\"tryUnlockTimes\":0}"

static const char rinfo_want[] =
    "{\"mqTable\":{{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"%RETRY%G\"}"
    ":" PQ_INFO("0", "7") ",{\"brokerName\":\"broker-a\",\"queueId\":2,\"topic\":\"T\"}"
                          ":" PQ_INFO(
                              "5", "1700000000001") ",{\"brokerName\":\"broker-a\","
                                                    "\"queueId\":10,\"topic\":\"T\"}"
                                                    ":" PQ_INFO(
                                                        "42", "1700000000002") "},"
                                                                               "\"properties"
                                                                               "\":{\"PROP_"
                                                                               "CLIENT_"
                                                                               "VERSION\":"
                                                                               "\"V4_9_8\","
                                                                               "\"PROP_"
                                                                               "CONSUMEORDER"
                                                                               "LY\":"
                                                                               "\"false\","
                                                                               "\"PROP_"
                                                                               "CONSUMER_"
                                                                               "START_"
                                                                               "TIMESTAMP\":"
                                                                               "\"1700000000"
                                                                               "000\","
                                                                               "\"PROP_"
                                                                               "CONSUME_"
                                                                               "TYPE\":"
                                                                               "\"CONSUME_"
                                                                               "PASSIVELY\","
                                                                               "\"PROP_"
                                                                               "NAMESERVER_"
                                                                               "ADDR\":"
                                                                               "\"127.0.0.1:"
                                                                               "9876;\","
                                                                               "\"PROP_"
                                                                               "THREADPOOL_"
                                                                               "CORE_SIZE\":"
                                                                               "\"20\","
                                                                               "\"adjustThre"
                                                                               "adPoolNumsTh"
                                                                               "reshold\":"
                                                                               "\"100000\","
                                                                               "\"allocateMe"
                                                                               "ssageQueueSt"
                                                                               "rategy\":"
                                                                               "\"org."
                                                                               "apache."
                                                                               "rocketmq."
                                                                               "client."
                                                                               "consumer."
                                                                               "rebalance."
                                                                               "AllocateMess"
                                                                               "ageQueueAver"
                                                                               "agelyByCircl"
                                                                               "e@1\","
                                                                               "\"awaitTermi"
                                                                               "nationMillis"
                                                                               "WhenShutdown"
                                                                               "\":\"0\","
                                                                               "\"consumeCon"
                                                                               "currentlyMax"
                                                                               "Span\":"
                                                                               "\"2000\","
                                                                               "\"consumeFro"
                                                                               "mWhere\":"
                                                                               "\"CONSUME_"
                                                                               "FROM_LAST_"
                                                                               "OFFSET\","
                                                                               "\"consumeMes"
                                                                               "sageBatchMax"
                                                                               "Size\":"
                                                                               "\"1\","
                                                                               "\"consumeThr"
                                                                               "eadMax\":"
                                                                               "\"20\","
                                                                               "\"consumeThr"
                                                                               "eadMin\":"
                                                                               "\"20\","
                                                                               "\"consumeTim"
                                                                               "eout\":"
                                                                               "\"15\","
                                                                               "\"consumeTim"
                                                                               "estamp\":"
                                                                               "\"2023111421"
                                                                               "4320\","
                                                                               "\"consumerGr"
                                                                               "oup\":\"G\","
                                                                               "\"maxReconsu"
                                                                               "meTimes\":"
                                                                               "\"-1\","
                                                                               "\"messageMod"
                                                                               "el\":"
                                                                               "\"CLUSTERING"
                                                                               "\","
                                                                               "\"postSubscr"
                                                                               "iptionWhenPu"
                                                                               "ll\":"
                                                                               "\"false\","
                                                                               "\"pullBatchS"
                                                                               "ize\":"
                                                                               "\"32\","
                                                                               "\"pullInterv"
                                                                               "al\":\"0\","
                                                                               "\"pullThresh"
                                                                               "oldForQueue"
                                                                               "\":\"1000\","
                                                                               "\"pullThresh"
                                                                               "oldForTopic"
                                                                               "\":\"-1\","
                                                                               "\"pullThresh"
                                                                               "oldSizeForQu"
                                                                               "eue\":"
                                                                               "\"100\","
                                                                               "\"pullThresh"
                                                                               "oldSizeForTo"
                                                                               "pic\":\"-"
                                                                               "1\","
                                                                               "\"subscripti"
                                                                               "on\":\"{}\","
                                                                               "\"suspendCur"
                                                                               "rentQueueTim"
                                                                               "eMillis\":"
                                                                               "\"1000\","
                                                                               "\"unitMode\""
                                                                               ":\"false\"},"
                                                                               "\"statusTabl"
                                                                               "e\":{\"%"
                                                                               "RETRY%G\":{"
                                                                               "\"consumeFai"
                                                                               "ledMsgs\":0,"
                                                                               "\"consumeFai"
                                                                               "ledTPS\":0."
                                                                               "0,"
                                                                               "\"consumeOKT"
                                                                               "PS\":0.0,"
                                                                               "\"consumeRT"
                                                                               "\":0.0,"
                                                                               "\"pullRT\":"
                                                                               "0.0,"
                                                                               "\"pullTPS\":"
                                                                               "0.0},\"T\":{"
                                                                               "\"consumeFai"
                                                                               "ledMsgs\":0,"
                                                                               "\"consumeFai"
                                                                               "ledTPS\":0."
                                                                               "0,"
                                                                               "\"consumeOKT"
                                                                               "PS\":0.0,"
                                                                               "\"consumeRT"
                                                                               "\":0.0,"
                                                                               "\"pullRT\":"
                                                                               "0.0,"
                                                                               "\"pullTPS\":"
                                                                               "0.0}},"
                                                                               "\"subscripti"
                                                                               "onSet\":"
                                                                               "[" SUB("%RETRY%"
                                                                                       "G",
                                                                                       "2") "," SUB("T",
                                                                                                    "1") "]}";

static void fill_rinfo(struct sim_rinfo *ri, struct sim_rinfo_queue *qs, struct sim_sub *subs)
{
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
    struct sim_rinfo ri;
    struct sim_rinfo_queue qs[3];
    struct sim_sub subs[2];
    fill_rinfo(&ri, qs, subs);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(sim_running_info_encode(&ri, &b), RMQ_OK);
    assert_buf_str(&b, rinfo_want);
    assert_string_equal(qs[0].mq.topic, "T"); /* the caller's arrays are not reordered */

    /* Empty holdings: an empty map, still valid for a fastjson reader. */
    buf_reset(&b);
    ri.nqueues = 0;
    ri.nsubs = 0;
    ri.broadcast = true;
    assert_int_equal(sim_running_info_encode(&ri, &b), RMQ_OK);
    assert_int_equal(buf_terminate(&b), RMQ_OK);
    assert_non_null(strstr((const char *)buf_head(&b), "{\"mqTable\":{},\"properties\":{"));
    assert_non_null(strstr((const char *)buf_head(&b), "\"messageModel\":\"BROADCASTING\""));
    assert_non_null(strstr((const char *)buf_head(&b), "\"statusTable\":{},\"subscriptionSet\":[]}"));
    buf_free(&b);
}

static void test_running_info_oom(void **state)
{
    (void)state;
    struct sim_rinfo ri;
    struct sim_rinfo_queue qs[3];
    struct sim_sub subs[2];
    fill_rinfo(&ri, qs, subs);
    for (long fail = 0;; fail++) {
        struct buf b;
        buf_init(&b, 0);
        rmq_mem_fail_after(fail);
        int rc = sim_running_info_encode(&ri, &b);
        rmq_mem_fail_after(-1);
        if (rc == RMQ_OK) {
            assert_buf_str(&b, rinfo_want);
            buf_free(&b);
            break;
        }
        assert_int_equal(buf_live(&b), 0); /* nothing half-written */
        buf_free(&b);
        assert_true(fail < 1000);
    }
    /* A capped buffer fails cleanly too. */
    struct buf small;
    buf_init(&small, 64);
    assert_int_not_equal(sim_running_info_encode(&ri, &small), RMQ_OK);
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

int main(void)
{
    rmq_mem_install_jansson();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heartbeat_java_shape),
        cmocka_unit_test(test_heartbeat_broadcast_v5),
        cmocka_unit_test(test_route_bare_keys),
        cmocka_unit_test(test_route_malformed),
        cmocka_unit_test(test_route_truncation_and_oom),
        cmocka_unit_test(test_consumer_list),
        cmocka_unit_test(test_running_info_exact),
        cmocka_unit_test(test_running_info_oom),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_holdings_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
