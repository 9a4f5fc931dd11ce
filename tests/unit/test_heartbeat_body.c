/* test_heartbeat_body.c — HeartbeatData from every client shape, the
 * malformed-heartbeat table, SubscriptionData encode/copy, the HeartbeatData
 * encoder (the Java bytes back from what was parsed), the enum names, and
 * fail-the-Nth-allocation loops over the parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "heartbeat_body.h"
#include "mem.h"
#include "test_support.h"

#include <string.h>

static int parse_hb(const char *text, struct rmq_heartbeat *hb, char *err, size_t errlen)
{
    memset(hb, 0, sizeof *hb);
    return rmq_heartbeat_parse((const uint8_t *)text, strlen(text), hb, err, errlen);
}

/* The subscription objects exactly as Java 4.9.8 writes them (java.md). */
#define JAVA_SUB_RETRY                                                                                       \
    "{\"classFilterMode\":false,\"codeSet\":[],\"expressionType\":\"TAG\",\"subString\":\"*\","              \
    "\"subVersion\":"                                                                                        \
    "1796218186708,\"tagsSet\":[],\"topic\":\"%RETRY%G1\"}"
#define JAVA_SUB_TAGS                                                                                        \
    "{\"classFilterMode\":false,\"codeSet\":[2598919,2598920],\"expressionType\":\"TAG\",\"subString\":"     \
    "\"TagA || TagB\",\"subVersion\":1796218186688,\"tagsSet\":[\"TagA\",\"TagB\"],\"topic\":\"T1\"}"

static const char java_498[] =
    "{\"clientID\":\"127.0.0.1@c1\",\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\","
    "\"consumeType\":\"CONSUME_PASSIVELY\",\"groupName\":\"G1\",\"messageModel\":\"CLUSTERING\","
    "\"subscriptionDataSet\":[" JAVA_SUB_RETRY "," JAVA_SUB_TAGS "],\"unitMode\":false}],"
    "\"producerDataSet\":[{\"groupName\":\"CLIENT_INNER_PRODUCER\"}]}";

static void test_java_498(void **state)
{
    (void)state;
    struct rmq_heartbeat hb;
    char err[160] = "";
    assert_int_equal(parse_hb(java_498, &hb, err, sizeof err), RMQ_OK);
    assert_string_equal(hb.client_id, "127.0.0.1@c1");
    assert_int_equal(hb.nconsumers, 1);
    const struct rmq_consumer_data *c = &hb.consumers[0];
    assert_string_equal(c->group, "G1");
    assert_int_equal(c->consume_type, RMQ_CONSUME_PASSIVELY);
    assert_int_equal(c->message_model, RMQ_MODEL_CLUSTERING);
    assert_int_equal(c->consume_from_where, 0);
    assert_false(c->unit_mode);
    assert_int_equal(c->nsubs, 2);
    assert_string_equal(c->subs[0].topic, "%RETRY%G1");
    assert_string_equal(c->subs[0].sub_string, "*");
    assert_string_equal(c->subs[0].expression_type, "TAG");
    assert_true(c->subs[0].sub_version == 1796218186708LL);
    assert_int_equal(c->subs[0].ntags, 0);
    const struct rmq_subscription *t = &c->subs[1];
    assert_string_equal(t->sub_string, "TagA || TagB");
    assert_int_equal(t->ntags, 2);
    assert_string_equal(t->tags[1], "TagB");
    assert_int_equal(t->ncodes, 2);
    assert_int_equal(t->codes[0], 2598919);
    assert_int_equal(hb.nproducers, 1);
    assert_string_equal(hb.producer_groups[0], "CLIENT_INNER_PRODUCER");
    assert_int_equal(hb.fingerprint, 0);
    assert_false(hb.without_sub);

    /* Encoding the parsed subscriptions gives Java's bytes back. */
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_subscription_encode(&c->subs[0], &b), RMQ_OK);
    assert_buf_str(&b, JAVA_SUB_RETRY);
    buf_reset(&b);
    assert_int_equal(rmq_subscription_encode(&c->subs[1], &b), RMQ_OK);
    assert_buf_str(&b, JAVA_SUB_TAGS);
    buf_free(&b);
    rmq_heartbeat_clear(&hb);
    assert_null(hb.consumers);
    rmq_heartbeat_clear(NULL);
}

/* 5.3.3 with useHeartbeatV2: subscriptions left out on purpose. */
static void test_java_533_v2_without_sub(void **state)
{
    (void)state;
    static const char v2[] =
        "{\"clientID\":\"127.0.0.1@v2\",\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_LAST_"
        "OFFSET\","
        "\"consumeType\":\"CONSUME_PASSIVELY\",\"groupName\":\"GV\",\"messageModel\":\"CLUSTERING\","
        "\"subscriptionDataSet\":[],\"unitMode\":false}],\"heartbeatFingerprint\":550966797,"
        "\"producerDataSet\":[{\"groupName\":\"CLIENT_INNER_PRODUCER\"}],\"withoutSub\":true}";
    struct rmq_heartbeat hb;
    assert_int_equal(parse_hb(v2, &hb, NULL, 0), RMQ_OK);
    assert_true(hb.without_sub);
    assert_int_equal(hb.fingerprint, 550966797);
    assert_int_equal(hb.nconsumers, 1);
    assert_int_equal(hb.consumers[0].nsubs, 0);
    assert_null(hb.consumers[0].subs);
    rmq_heartbeat_clear(&hb);
    static const char negative_fp[] = "{\"clientID\":\"x\",\"heartbeatFingerprint\":-7,\"withoutSub\":false}";
    assert_int_equal(parse_hb(negative_fp, &hb, NULL, 0), RMQ_OK);
    assert_int_equal(hb.fingerprint, -7);
    assert_int_equal(hb.nconsumers, 0);
    rmq_heartbeat_clear(&hb);
}

static void test_ali_ons(void **state)
{
    (void)state;
    static const char ons[] =
        "{\"clientID\":\"192.0.2.2@6790\",\"consumerDataSet\":[{\"groupName\":\"GID_TEST\",\"consumeType\":"
        "\"CONSUME_PASSIVELY\",\"messageModel\":\"CLUSTERING\",\"consumeFromWhere\":\"CONSUME_FROM_LAST_"
        "OFFSET\","
        "\"subscriptionDataSet\":[{\"topic\":\"TopicTest\",\"subString\":\"*\",\"classFilterMode\":false,"
        "\"tagsSet\":[],\"codeSet\":[],\"subVersion\":1796216893025},{\"topic\":\"%RETRY%GID_TEST\","
        "\"subString\":"
        "\"*\",\"classFilterMode\":false,\"tagsSet\":[],\"codeSet\":[],\"subVersion\":1796216893064}],"
        "\"unitMode\":false}],\"producerDataSet\":[]}";
    struct rmq_heartbeat hb;
    char err[160] = "";
    assert_int_equal(parse_hb(ons, &hb, err, sizeof err), RMQ_OK);
    assert_string_equal(hb.client_id, "192.0.2.2@6790");
    assert_int_equal(hb.nproducers, 0);
    assert_int_equal(hb.consumers[0].nsubs, 2);
    assert_string_equal(hb.consumers[0].subs[1].topic, "%RETRY%GID_TEST");
    assert_string_equal(hb.consumers[0].subs[1].expression_type, "TAG"); /* absent */
    assert_true(hb.consumers[0].subs[1].sub_version == 1796216893064LL);
    rmq_heartbeat_clear(&hb);
}

/* PROTOCOL (docs/protocol.md §3.1): C++ sends enum ordinals, subVersion as a string, leaves out
 * empty arrays and unitMode, and ends the body with "\n". */
static void test_cpp(void **state)
{
    (void)state;
    static const char cpp[] =
        "{\"clientID\":\"10.0.0.7@1234#5678\",\"consumerDataSet\":[{\"consumeFromWhere\":4,\"consumeType\":0,"
        "\"groupName\":\"GC\",\"messageModel\":0,\"subscriptionDataSet\":[{\"subString\":\"TagA || TagB\","
        "\"subVersion\":\"1700000000123\",\"tagsSet\":[\"TagA\",\"TagB\"],\"codeSet\":[2598919,2598920],"
        "\"topic\":\"TC\"},{\"subString\":\"\",\"subVersion\":\"-1\",\"topic\":\"%RETRY%GC\"}]}]}\n";
    struct rmq_heartbeat hb;
    char err[160] = "";
    assert_int_equal(parse_hb(cpp, &hb, err, sizeof err), RMQ_OK);
    const struct rmq_consumer_data *c = &hb.consumers[0];
    assert_int_equal(c->consume_from_where, 4);
    assert_int_equal(c->consume_type, RMQ_CONSUME_ACTIVELY);
    assert_int_equal(c->message_model, RMQ_MODEL_BROADCASTING);
    assert_false(c->unit_mode);
    assert_true(c->subs[0].sub_version == 1700000000123LL);
    assert_int_equal(c->subs[0].ncodes, 2);
    assert_string_equal(c->subs[1].sub_string, "*"); /* empty means all */
    assert_true(c->subs[1].sub_version == -1);
    assert_int_equal(c->subs[1].ntags, 0);
    assert_null(c->subs[1].codes);
    assert_int_equal(hb.nproducers, 0);
    rmq_heartbeat_clear(&hb);
}

static void test_go_and_minimal(void **state)
{
    (void)state;
    /* Go: struct order, nanosecond subVersion, unknown keys. */
    static const char go[] =
        "{\"clientID\":\"10.1.1.1@42\",\"producerDataSet\":[],\"consumerDataSet\":[{\"groupName\":\"GG\","
        "\"consumeType\":\"CONSUME_ACTIVELY\",\"messageModel\":\"BROADCASTING\",\"consumeFromWhere\":"
        "\"CONSUME_FROM_TIMESTAMP\",\"unitMode\":true,\"extra\":{\"x\":[1]},\"subscriptionDataSet\":[{"
        "\"topic\":"
        "\"TG\",\"expressionType\":\"SQL92\",\"subString\":\"a > 1\",\"subVersion\":1700000000123456789,"
        "\"classFilterMode\":true,\"tagsSet\":[],\"codeSet\":[]}]}],\"future\":null}";
    struct rmq_heartbeat hb;
    char err[160] = "";
    assert_int_equal(parse_hb(go, &hb, err, sizeof err), RMQ_OK);
    const struct rmq_consumer_data *c = &hb.consumers[0];
    assert_int_equal(c->consume_type, RMQ_CONSUME_ACTIVELY);
    assert_int_equal(c->message_model, RMQ_MODEL_BROADCASTING);
    assert_int_equal(c->consume_from_where, 5);
    assert_true(c->unit_mode);
    assert_string_equal(c->subs[0].expression_type, "SQL92");
    assert_true(c->subs[0].class_filter_mode);
    assert_true(c->subs[0].sub_version == 1700000000123456789LL);
    rmq_heartbeat_clear(&hb);
    /* The smallest valid body: everything else takes its default. */
    assert_int_equal(
        parse_hb("{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\"}]}", &hb, NULL, 0), RMQ_OK);
    assert_int_equal(hb.consumers[0].consume_type, RMQ_CONSUME_PASSIVELY);
    assert_int_equal(hb.consumers[0].message_model, RMQ_MODEL_CLUSTERING);
    assert_int_equal(hb.consumers[0].nsubs, 0);
    rmq_heartbeat_clear(&hb);
}

/* Each malformed heartbeat and the field path its error must name. */
static const struct {
    const char *text, *reason;
} bad_heartbeats[] = {
    {"", "heartbeat: invalid JSON"},
    {"[]", "heartbeat: expected a JSON object"},
    {"{\"clientID\":\"a\"} junk", "invalid JSON"},
    {"{}", "clientID: expected a non-empty string"},
    {"{\"clientID\":\"\"}", "clientID: expected a non-empty string"},
    {"{\"clientID\":7}", "clientID: expected a non-empty string"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":{}}", "consumerDataSet: expected an array"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[7]}", "consumerDataSet[0]: expected an object"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\"},{}]}",
     "consumerDataSet[1].groupName: expected a non-empty string"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"\"}]}",
     "consumerDataSet[0].groupName: expected a non-empty string"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"consumeType\":\"PUSH\"}]}",
     "consumerDataSet[0].consumeType: expected an enum"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"messageModel\":2}]}",
     "consumerDataSet[0].messageModel: expected an enum"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"consumeFromWhere\":6}]}",
     "consumerDataSet[0].consumeFromWhere"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"consumeFromWhere\":1.0}]}",
     "consumerDataSet[0].consumeFromWhere"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"unitMode\":\"false\"}]}",
     "consumerDataSet[0].unitMode: expected a boolean"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":\"T\"}]}",
     "consumerDataSet[0].subscriptionDataSet: expected an array"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":"
     "\"T\"},"
     "{\"subString\":\"*\"}]}]}",
     "consumerDataSet[0].subscriptionDataSet[1].topic: expected a non-empty string"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[[]]}]}",
     "consumerDataSet[0].subscriptionDataSet[0]: expected an object"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":"
     "\"T\","
     "\"subVersion\":\"12a\"}]}]}",
     "subscriptionDataSet[0].subVersion: expected an integer or a numeric string"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":"
     "\"T\","
     "\"subVersion\":1.5}]}]}",
     "subscriptionDataSet[0].subVersion"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":"
     "\"T\","
     "\"subString\":5}]}]}",
     "subscriptionDataSet[0].subString: expected a string"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":"
     "\"T\","
     "\"tagsSet\":[\"a\",1]}]}]}",
     "subscriptionDataSet[0].tagsSet: expected an array of strings"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":"
     "\"T\","
     "\"codeSet\":[4294967296]}]}]}",
     "subscriptionDataSet[0].codeSet: expected an array of int32"},
    {"{\"clientID\":\"a\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":"
     "\"T\","
     "\"classFilterMode\":0}]}]}",
     "subscriptionDataSet[0].classFilterMode: expected a boolean"},
    {"{\"clientID\":\"a\",\"producerDataSet\":[{}]}",
     "producerDataSet[0].groupName: expected a non-empty string"},
    {"{\"clientID\":\"a\",\"producerDataSet\":[\"P\"]}", "producerDataSet[0]: expected an object"},
    {"{\"clientID\":\"a\",\"heartbeatFingerprint\":2147483648}",
     "heartbeatFingerprint: integer out of range"},
    {"{\"clientID\":\"a\",\"withoutSub\":1}", "withoutSub: expected a boolean"},
};

static void test_heartbeat_malformed_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_heartbeats / sizeof bad_heartbeats[0]; i++) {
        struct rmq_heartbeat hb;
        char err[200] = "";
        int rc = parse_hb(bad_heartbeats[i].text, &hb, err, sizeof err);
        if (rc != RMQ_EPROTO)
            fail_msg("case %zu: rc %d, want EPROTO", i, rc);
        if (!strstr(err, bad_heartbeats[i].reason))
            fail_msg("case %zu: err \"%s\" lacks \"%s\"", i, err, bad_heartbeats[i].reason);
        /* Nothing may be left allocated in *hb after a failure. */
        assert_null(hb.client_id);
        assert_null(hb.consumers);
        assert_int_equal(hb.nconsumers, 0);
    }
}

struct hb_oom {
    struct rmq_heartbeat hb;
    char err[160];
};

static int hb_oom_run(void *ctx)
{
    struct hb_oom *x = ctx;
    memset(x, 0, sizeof *x);
    return rmq_heartbeat_parse((const uint8_t *)java_498, strlen(java_498), &x->hb, x->err, sizeof x->err);
}

static void hb_oom_check(void *ctx, int rc)
{
    struct hb_oom *x = ctx;
    if (rc == RMQ_OK) {
        assert_int_equal(x->hb.consumers[0].subs[1].ncodes, 2);
        rmq_heartbeat_clear(&x->hb);
        return;
    }
    if (rc != RMQ_ENOMEM)
        fail_msg("rc %d (%s)", rc, x->err);
    assert_null(x->hb.client_id);
    assert_null(x->hb.consumers);
}

static void test_heartbeat_allocation_failures(void **state)
{
    (void)state;
    struct hb_oom x;
    const struct test_oom t = {.run = hb_oom_run, .check = hb_oom_check, .max = 1000};
    assert_true(test_oom_loop(&t, &x) > 20);
}

struct copy_oom {
    const struct rmq_subscription *src;
    struct rmq_subscription dst;
};

static int copy_oom_run(void *ctx)
{
    struct copy_oom *x = ctx;
    return rmq_subscription_copy(&x->dst, x->src);
}

/* Every failing allocation leaves dst cleared. */
static void copy_oom_check(void *ctx, int rc)
{
    struct copy_oom *x = ctx;
    if (rc == RMQ_OK)
        return;
    assert_null(x->dst.topic);
    assert_null(x->dst.tags);
    assert_int_equal(x->dst.ntags, 0);
}

static void test_subscription_copy(void **state)
{
    (void)state;
    struct rmq_heartbeat hb;
    assert_int_equal(parse_hb(java_498, &hb, NULL, 0), RMQ_OK);
    const struct rmq_subscription *src = &hb.consumers[0].subs[1];
    struct rmq_subscription dst;
    assert_int_equal(rmq_subscription_copy(&dst, src), RMQ_OK);
    assert_ptr_not_equal(dst.topic, src->topic);
    assert_ptr_not_equal(dst.tags, src->tags);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_subscription_encode(&dst, &b), RMQ_OK);
    assert_buf_str(&b, JAVA_SUB_TAGS);
    buf_free(&b);
    rmq_subscription_clear(&dst);
    struct copy_oom x = {.src = src};
    const struct test_oom t = {.run = copy_oom_run, .check = copy_oom_check, .max = 1000};
    assert_int_equal(test_oom_loop(&t, &x), 7); /* 3 strings, tag array, 2 tags, codes */
    rmq_subscription_clear(&x.dst);

    rmq_subscription_clear(NULL);
    rmq_heartbeat_clear(&hb);
}

/* Encoding what was parsed gives the Java bytes back. */
static void test_heartbeat_encode_round_trip(void **state)
{
    (void)state;
    struct rmq_heartbeat hb;
    assert_int_equal(parse_hb(java_498, &hb, NULL, 0), RMQ_OK);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_heartbeat_encode(&hb, false, &b), RMQ_OK);
    assert_buf_str(&b, java_498);
    rmq_heartbeat_clear(&hb);

    /* The 5.x fields, non-default values, enums by name, several producers. */
    static const char v5[] =
        "{\"clientID\":\"c\\\"1\",\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_TIMESTAMP\","
        "\"consumeType\":\"CONSUME_ACTIVELY\",\"groupName\":\"G\",\"messageModel\":\"BROADCASTING\","
        "\"subscriptionDataSet\":[],\"unitMode\":true},{\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\","
        "\"consumeType\":\"CONSUME_PASSIVELY\",\"groupName\":\"H\",\"messageModel\":\"CLUSTERING\","
        "\"subscriptionDataSet\":[" JAVA_SUB_TAGS "],\"unitMode\":false}],\"heartbeatFingerprint\":-7,"
        "\"producerDataSet\":[{\"groupName\":\"P1\"},{\"groupName\":\"P2\"}],\"withoutSub\":true}";
    assert_int_equal(parse_hb(v5, &hb, NULL, 0), RMQ_OK);
    assert_int_equal(hb.fingerprint, -7);
    buf_reset(&b);
    assert_int_equal(rmq_heartbeat_encode(&hb, true, &b), RMQ_OK);
    assert_buf_str(&b, v5);

    /* A full buffer is restored. */
    struct buf small;
    buf_init(&small, 64);
    assert_int_equal(buf_append_str(&small, "x"), RMQ_OK);
    assert_int_equal(rmq_heartbeat_encode(&hb, true, &small), RMQ_E2BIG);
    assert_int_equal(buf_live(&small), 1);
    buf_free(&small);
    rmq_heartbeat_clear(&hb);

    /* Nothing at all: empty sets. */
    struct rmq_heartbeat empty = {.client_id = (char *)"c"};
    buf_reset(&b);
    assert_int_equal(rmq_heartbeat_encode(&empty, false, &b), RMQ_OK);
    assert_buf_str(&b, "{\"clientID\":\"c\",\"consumerDataSet\":[],\"producerDataSet\":[]}");
    buf_free(&b);
}

static void test_enum_names(void **state)
{
    (void)state;
    assert_string_equal(rmq_consume_type_name(RMQ_CONSUME_ACTIVELY), "CONSUME_ACTIVELY");
    assert_string_equal(rmq_consume_type_name(RMQ_CONSUME_PASSIVELY), "CONSUME_PASSIVELY");
    assert_string_equal(rmq_message_model_name(RMQ_MODEL_BROADCASTING), "BROADCASTING");
    assert_string_equal(rmq_message_model_name(RMQ_MODEL_CLUSTERING), "CLUSTERING");
    assert_string_equal(rmq_consume_from_where_name(0), "CONSUME_FROM_LAST_OFFSET");
    assert_string_equal(rmq_consume_from_where_name(4), "CONSUME_FROM_FIRST_OFFSET");
    assert_string_equal(rmq_consume_from_where_name(5), "CONSUME_FROM_TIMESTAMP");
    assert_string_equal(rmq_consume_from_where_name(6), "UNKNOWN");
    assert_string_equal(rmq_consume_type_name(-1), "UNKNOWN");
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_java_498),
                cmocka_unit_test(test_java_533_v2_without_sub), cmocka_unit_test(test_ali_ons),
                cmocka_unit_test(test_cpp), cmocka_unit_test(test_go_and_minimal),
                cmocka_unit_test(test_heartbeat_malformed_table),
                cmocka_unit_test(test_heartbeat_allocation_failures),
                cmocka_unit_test(test_subscription_copy), cmocka_unit_test(test_heartbeat_encode_round_trip),
                cmocka_unit_test(test_enum_names))
