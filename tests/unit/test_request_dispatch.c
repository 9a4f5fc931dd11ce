/* test_request_dispatch.c — routing request codes to handlers
 * (server/requests/request_dispatch.c) on a broker fixture: unknown codes,
 * oneway requests, and one request of each family through the table,
 * including the consumer list, connection list, routes and cluster info
 * (docs/protocol.md §1.5, §2.3, §4.7, §8.1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "conn.h"
#include "request_codes.h"
#include "request_dispatch.h"
#include "test_support.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Dispatches code with up to two extFields on peer i; reply in *out. */
static int32_t send_req(struct fx *fx, size_t i, int32_t code, int32_t opaque, int32_t flag, const char *k1,
                        const char *v1, const char *k2, const char *v2, struct rmq_cmd *out)
{
    struct rmq_cmd req;
    fx_request(&req, code, opaque, flag);
    if (k1)
        assert_int_equal(rmq_cmd_ext_set(&req, k1, v1), 0);
    if (k2)
        assert_int_equal(rmq_cmd_ext_set(&req, k2, v2), 0);
    dispatch_request(&fx->b, fx_conn(fx, i), &req);
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    if (flag & RMQ_FLAG_ONEWAY)
        return -1;
    return fx_reply(fx, i, opaque, out);
}

/* send_req with one extField whose reply must be want with remark (NULL:
 * not checked). */
static void expect(struct fx *fx, size_t i, int32_t code, int32_t opaque, const char *k, const char *v,
                   int32_t want, const char *remark)
{
    struct rmq_cmd r;
    assert_int_equal(send_req(fx, i, code, opaque, 0, k, v, NULL, NULL, &r), want);
    if (remark)
        assert_string_equal(r.remark, remark);
    rmq_cmd_clear(&r);
}

/* send_req with one extField whose reply must be SUCCESS with a JSON body
 * (returned; caller decrefs). */
static json_t *expect_json(struct fx *fx, size_t i, int32_t code, int32_t opaque, const char *k,
                           const char *v)
{
    struct rmq_cmd r;
    assert_int_equal(send_req(fx, i, code, opaque, 0, k, v, NULL, NULL, &r), RMQ_RESP_SUCCESS);
    json_error_t err;
    json_t *j = json_loadb((const char *)r.body, r.body_len, 0, &err);
    if (!j)
        fail_msg("reply body is not JSON: %s", err.text);
    rmq_cmd_clear(&r);
    return j;
}

/* Readers of a JSON reply: j[key] as a string, j[key] as an integer. */
static const char *jstr(const json_t *j, const char *key)
{
    return json_string_value(json_object_get(j, key));
}

static json_int_t jint(const json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

/* An unknown code gets REQUEST_CODE_NOT_SUPPORTED naming the code; a
 * oneway one gets nothing, whatever the code. */
static void test_unknown_code(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd r;
    expect(fx, a, 9999, 5, NULL, NULL, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED,
           "request code 9999 (UNKNOWN) is not supported by rmqcoord");
    expect(fx, a, RMQ_REQ_UPDATE_BROKER_CONFIG, 6, NULL, NULL, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED,
           "request code 25 (UPDATE_BROKER_CONFIG) is not supported by rmqcoord");
    assert_int_equal(send_req(fx, a, 9999, 7, RMQ_FLAG_ONEWAY, NULL, NULL, NULL, NULL, &r), -1);
    assert_int_equal(
        send_req(fx, a, RMQ_REQ_CHECK_CLIENT_CONFIG, 8, RMQ_FLAG_ONEWAY, NULL, NULL, NULL, NULL, &r), -1);
    assert_int_equal(fx_drain(fx, a), 0);
}

/* Requests answered with a bare SUCCESS. */
static void test_bare_success_codes(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd r;
    assert_int_equal(send_req(fx, a, RMQ_REQ_CHECK_CLIENT_CONFIG, 10, 0, NULL, NULL, NULL, NULL, &r),
                     RMQ_RESP_SUCCESS);
    assert_null(r.remark);
    assert_int_equal(r.body_len, 0);
    rmq_cmd_clear(&r);
    /* CONSUMER_SEND_MSG_BACK looks its message up: the offset is required. */
    expect(fx, a, RMQ_REQ_CONSUMER_SEND_MSG_BACK, 11, "group", "g", RMQ_RESP_SYSTEM_ERROR,
           "missing field offset in CONSUMER_SEND_MSG_BACK request");
}

/* GET_CONSUMER_LIST_BY_GROUP: an unknown group is SYSTEM_ERROR with the
 * broker's remark; a live one lists one id per channel, duplicates kept,
 * in join order. */
static void test_consumer_list(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx), c = fx_connect(fx);
    expect(fx, a, RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP, 1, "consumerGroup", "g", RMQ_RESP_SYSTEM_ERROR,
           "no consumer for this group, g");
    fx_heartbeat(fx, b, "cB", "g", "T");
    fx_heartbeat(fx, a, "cA", "g", "T");
    fx_heartbeat(fx, c, "cA", "g", "T"); /* the same client id on another connection */
    fx_iterate(fx);
    fx_drain(fx, a);
    fx_drain(fx, b);
    fx_drain(fx, c);
    json_t *j = expect_json(fx, a, RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP, 2, "consumerGroup", "g");
    json_t *ids = json_object_get(j, "consumerIdList");
    assert_int_equal(json_array_size(ids), 3);
    assert_string_equal(json_string_value(json_array_get(ids, 0)), "cB");
    assert_string_equal(json_string_value(json_array_get(ids, 1)), "cA");
    assert_string_equal(json_string_value(json_array_get(ids, 2)), "cA");
    json_decref(j);
}

/* GET_CONSUMER_CONNECTION_LIST: 206 for a group not online, else the
 * connections and the subscription table. */
static void test_connection_list(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    expect(fx, a, RMQ_REQ_GET_CONSUMER_CONNECTION_LIST, 1, "consumerGroup", "g", RMQ_RESP_CONSUMER_NOT_ONLINE,
           "the consumer group[g] not online");
    fx_join(fx, a, "cA", "g");
    json_t *j = expect_json(fx, a, RMQ_REQ_GET_CONSUMER_CONNECTION_LIST, 2, "consumerGroup", "g");
    json_t *conns = json_object_get(j, "connectionSet");
    assert_int_equal(json_array_size(conns), 1);
    json_t *c0 = json_array_get(conns, 0);
    assert_string_equal(jstr(c0, "clientId"), "cA");
    assert_string_equal(jstr(c0, "clientAddr"), fx_conn(fx, a)->peer);
    assert_string_equal(jstr(j, "messageModel"), "CLUSTERING");
    assert_non_null(json_object_get(json_object_get(j, "subscriptionTable"), "T"));
    json_decref(j);
}

/* GET_ROUTEINFO_BY_TOPIC: auto-create (8 queues) answered after the topic
 * is stored; %RETRY% of a known group with 1 queue; unknown retry topic
 * with auto-create off is 17 with the name server's remark. */
static void test_routes(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    json_t *j = expect_json(fx, a, RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, 1, "topic", "Fresh");
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM topics WHERE name='Fresh'"), 1);
    json_t *qd = json_array_get(json_object_get(j, "queueDatas"), 0);
    assert_int_equal(jint(qd, "readQueueNums"), 8);
    assert_string_equal(jstr(qd, "brokerName"), "broker-a");
    json_decref(j);
    fx_free(fx);

    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.auto_create_queues = 0;
    fx = fx_new(&cfg);
    *state = fx;
    a = fx_connect(fx);
    expect(fx, a, RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, 2, "topic", "%RETRY%g", RMQ_RESP_TOPIC_NOT_EXIST,
           "No topic route info in name server for the topic: %RETRY%g");
    assert_int_equal(registry_mark_known(&fx->b.reg, "g"), 0);
    j = expect_json(fx, a, RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, 3, "topic", "%RETRY%g");
    qd = json_array_get(json_object_get(j, "queueDatas"), 0);
    assert_int_equal(jint(qd, "readQueueNums"), 1);
    json_decref(j);
    expect(fx, a, RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, 4, "topic", "Other", RMQ_RESP_TOPIC_NOT_EXIST, NULL);
}

/* The rest of the table reaches its handlers: offsets, pulls (both
 * codes), locks, cluster info. */
static void test_table_reaches_handlers(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd r;
    assert_int_equal(send_req(fx, a, RMQ_REQ_GET_MAX_OFFSET, 1, 0, "topic", "T", "queueId", "0", &r), 0);
    assert_string_equal(rmq_cmd_ext_get(&r, "offset"), "0");
    rmq_cmd_clear(&r);
    assert_int_equal(
        send_req(fx, a, RMQ_REQ_GET_EARLIEST_MSG_STORETIME, 2, 0, "topic", "T", "queueId", "0", &r), 0);
    assert_string_equal(rmq_cmd_ext_get(&r, "timestamp"), "-1");
    rmq_cmd_clear(&r);
    /* consumerGroup missing */
    expect(fx, a, RMQ_REQ_LITE_PULL_MESSAGE, 3, "topic", "Nope", RMQ_RESP_SYSTEM_ERROR,
           "missing field consumerGroup in LITE_PULL_MESSAGE request");
    expect(fx, a, RMQ_REQ_UNLOCK_BATCH_MQ, 4, NULL, NULL, RMQ_RESP_SYSTEM_ERROR, NULL); /* no body */
    assert_int_equal(send_req(fx, a, RMQ_REQ_GET_BROKER_CLUSTER_INFO, 5, 0, NULL, NULL, NULL, NULL, &r),
                     RMQ_RESP_SUCCESS);
    /* ClusterInfo has fastjson's bare numeric keys (docs/protocol.md §3.5): not strict JSON. */
    char *text = strndup((const char *)r.body, r.body_len);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"brokerAddrTable\":{\"broker-a\":"));
    assert_non_null(strstr(text, "\"DefaultCluster\":[\"broker-a\"]"));
    free(text);
    rmq_cmd_clear(&r);
}

TEST_MAIN(FX_TEST(test_unknown_code), FX_TEST(test_bare_success_codes), FX_TEST(test_consumer_list),
          FX_TEST(test_connection_list), FX_TEST(test_routes), FX_TEST(test_table_reaches_handlers))
