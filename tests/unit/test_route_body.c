/* test_route_body.c — TopicRouteData: the daemon's encoder (exact bytes,
 * bare and quoted brokerAddrs keys), the client side's parser (fastjson bare
 * keys, a malformed table, truncation at every byte, failed allocations) and
 * the one reading what the other wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "route_body.h"
#include "test_support.h"

#include <string.h>

static void test_route_encode_exact(void **state)
{
    (void)state;
    const struct rmq_route_broker brokers[] = {
        {"broker-a", "DefaultCluster", "127.0.0.1:10911"},
        {"broker-b", "DefaultCluster", "127.0.0.1:10921"},
    };
    const struct rmq_route_queue queues[] = {
        {"broker-a", 4, 4, 6, 0},
        {"broker-b", 8, 2, 4, 1},
    };
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_route_encode(brokers, 1, queues, 1, false, &b), RMQ_OK);
    /* The body clients/java.md shows the 4.9.8 client accepting. */
    assert_buf_str(
        &b, "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},\"brokerName\":\"broker-a\","
            "\"cluster\":\"DefaultCluster\"}],\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":"
            "\"broker-a\",\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}");
    buf_reset(&b);
    assert_int_equal(rmq_route_encode(brokers, 2, queues, 2, true, &b), RMQ_OK);
    assert_buf_str(
        &b, "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"},\"brokerName\":\"broker-a\","
            "\"cluster\":\"DefaultCluster\"},{\"brokerAddrs\":{\"0\":\"127.0.0.1:10921\"},\"brokerName\":"
            "\"broker-b\",\"cluster\":\"DefaultCluster\"}],\"filterServerTable\":{},\"queueDatas\":[{"
            "\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,"
            "\"writeQueueNums\":4},{\"brokerName\":\"broker-b\",\"perm\":4,\"readQueueNums\":8,"
            "\"topicSysFlag\":1,\"writeQueueNums\":2}]}");
    buf_reset(&b);
    /* Both arrays are present even when empty (PROTOCOL: docs/protocol.md §3.4). */
    assert_int_equal(rmq_route_encode(NULL, 0, NULL, 0, true, &b), RMQ_OK);
    assert_buf_str(&b, "{\"brokerDatas\":[],\"filterServerTable\":{},\"queueDatas\":[]}");
    buf_free(&b);
    /* A full buffer is restored. */
    buf_init(&b, 50);
    assert_int_equal(buf_append_str(&b, "x"), RMQ_OK);
    assert_int_equal(rmq_route_encode(brokers, 2, queues, 2, true, &b), RMQ_E2BIG);
    assert_int_equal(buf_live(&b), 1);
    buf_free(&b);
}

static int parse_route(const char *text, struct rmq_route_info *r)
{
    memset(r, 0, sizeof *r);
    char err[160];
    return rmq_route_parse((const uint8_t *)text, strlen(text), r, err, sizeof err);
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
    struct rmq_route_info r;
    assert_int_equal(parse_route(route_bare, &r), RMQ_OK);
    assert_int_equal(r.nbrokers, 2);
    assert_string_equal(r.brokers[0].name, "broker-a");
    assert_string_equal(r.brokers[0].master, "127.0.0.1:10911");
    assert_int_equal(r.brokers[0].naddrs, 2);
    assert_string_equal(r.brokers[0].addrs[0], "127.0.0.1:10911"); /* ascending id */
    assert_string_equal(r.brokers[0].addrs[1], "10.0.0.2:10911");
    assert_string_equal(r.brokers[1].name, "b,{1:\"x"); /* digits after a brace inside a string */
    assert_null(r.brokers[1].master);
    assert_string_equal(rmq_route_info_addr_of(&r, "b,{1:\"x"), "10.0.0.9:1"); /* no master: a slave */
    assert_string_equal(rmq_route_info_addr_of(&r, "broker-a"), "127.0.0.1:10911");
    assert_null(rmq_route_info_addr_of(&r, "nope"));
    assert_int_equal(r.nqueues, 2);
    assert_int_equal(r.queues[0].read_queue_nums, 4);
    assert_int_equal(r.queues[1].perm, 2);

    struct rmq_route_info q;
    assert_int_equal(
        parse_route("{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\",\"1\":"
                    "\"10.0.0.2:10911\"},\"brokerName\":\"broker-a\"},{\"brokerAddrs\":{\"2\":"
                    "\"10.0.0.9:1\"},\"brokerName\":\"b,{1:\\\"x\"}],\"queueDatas\":[{\"brokerName\":"
                    "\"broker-a\",\"perm\":6,\"readQueueNums\":4},{\"brokerName\":\"b,{1:\\\"x\","
                    "\"perm\":2,\"readQueueNums\":3}]}",
                    &q),
        RMQ_OK);
    assert_true(rmq_route_info_equal(&r, &q)); /* quoted keys read the same */
    q.queues[0].read_queue_nums = 8;
    assert_false(rmq_route_info_equal(&r, &q));
    rmq_route_info_clear(&q);
    rmq_route_info_clear(&r);
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
        struct rmq_route_info r;
        assert_int_equal(parse_route(bad[i], &r), RMQ_EPROTO);
        assert_int_equal(r.nbrokers + r.nqueues, 0);
    }
    /* Nesting deeper than the bound is refused, not recursed into. */
    char deep[RMQ_ROUTE_MAX_DEPTH * 2 + 8];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    struct rmq_route_info r;
    assert_int_equal(parse_route(deep, &r), RMQ_EPROTO);
}

struct route_oom {
    struct rmq_route_info r;
};

static int route_oom_run(void *ctx)
{
    struct route_oom *x = ctx;
    char err[160];
    memset(&x->r, 0, sizeof x->r);
    return rmq_route_parse((const uint8_t *)route_bare, strlen(route_bare), &x->r, err, sizeof err);
}

static void route_oom_check(void *ctx, int rc)
{
    if (rc == RMQ_OK)
        rmq_route_info_clear(&((struct route_oom *)ctx)->r);
}

static void test_route_truncation_and_oom(void **state)
{
    (void)state;
    size_t n = strlen(route_bare);
    for (size_t cut = 0; cut < n; cut++) {
        struct rmq_route_info r = {0};
        char err[160];
        int rc = rmq_route_parse((const uint8_t *)route_bare, cut, &r, err, sizeof err);
        assert_int_equal(rc, RMQ_EPROTO);
    }
    struct route_oom x;
    /* jansson reports its failed allocation as a parse error */
    test_oom_loop(
        &(struct test_oom){.run = route_oom_run, .check = route_oom_check, .also = RMQ_EPROTO, .max = 1000},
        &x);
}

/* What the daemon writes, the client side reads back, in both key forms. */
static void test_route_round_trip(void **state)
{
    (void)state;
    const struct rmq_route_broker brokers[] = {
        {"broker-a", "C", "127.0.0.1:10911"},
        {"broker-b", "C", NULL},
    };
    const struct rmq_route_queue queues[] = {{"broker-a", 4, 4, 6, 0}, {"broker-b", 8, 2, 4, 1}};
    for (int quoted = 0; quoted < 2; quoted++) {
        struct buf b;
        buf_init(&b, 0);
        assert_int_equal(rmq_route_encode(brokers, 2, queues, 2, quoted, &b), RMQ_OK);
        struct rmq_route_info r = {0};
        char err[160];
        assert_int_equal(rmq_route_parse(buf_head(&b), buf_live(&b), &r, err, sizeof err), RMQ_OK);
        assert_int_equal(r.nbrokers, 2);
        assert_string_equal(r.brokers[0].name, "broker-a");
        assert_string_equal(r.brokers[0].master, "127.0.0.1:10911");
        assert_int_equal(r.brokers[1].naddrs, 0);
        assert_null(rmq_route_info_addr_of(&r, "broker-b"));
        assert_int_equal(r.nqueues, 2);
        assert_string_equal(r.queues[1].broker_name, "broker-b");
        assert_int_equal(r.queues[1].read_queue_nums, 8);
        assert_int_equal(r.queues[1].perm, 4);
        rmq_route_info_clear(&r);
        buf_free(&b);
    }
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_route_encode_exact),
                cmocka_unit_test(test_route_bare_keys), cmocka_unit_test(test_route_malformed),
                cmocka_unit_test(test_route_truncation_and_oom), cmocka_unit_test(test_route_round_trip))
