/* test_namesrv_table.c — --role namesrv (server/cluster/namesrv_table.c and
 * cluster_dispatch): REGISTER_BROKER checks, routes built from the
 * registrations, broker expiry, unregistration, brokers forgotten when
 * their connection closes, broker codes refused (docs/protocol.md §2.3,
 * §8.1, §8.4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "cluster.h"
#include "conn.h"
#include "crc32.h"
#include "namesrv_table.h"
#include "request_codes.h"
#include "test_support.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int setup(void **state)
{
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.role = CONFIG_ROLE_NAMESRV;
    cfg.broker_expiry_ms = 1000;
    struct fx *fx = fx_new(&cfg);
    assert_int_equal(namesrv_table_new(&fx->b.ns), 0);
    fx->b.hooks.conn_closed = cluster_conn_closed;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    /* Close the connections while the table still exists. */
    for (size_t i = 0; i < fx->npeers; i++)
        if (fx->peers[i].c)
            conn_close_async(fx->peers[i].c, "teardown");
    fx_iterate(fx);
    namesrv_table_free(fx->b.ns);
    fx->b.ns = NULL;
    fx_free(fx);
    return 0;
}

static int32_t next_opaque = 1;

struct reg {
    const char *name, *addr, *topic;
    const char *broker_id;  /* NULL = absent */
    const char *compressed; /* NULL = absent */
    bool bad_crc;
    const char *timeout_ms; /* heartbeatTimeoutMillis, NULL = absent */
};

/* REGISTER_BROKER through cluster_dispatch; returns the reply code. */
static int32_t do_register(struct fx *fx, size_t i, const struct reg *g, struct rmq_cmd *out)
{
    char body[1024];
    int n =
        snprintf(body, sizeof body,
                 "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":3,"
                 "\"timestamp\":1700000000000},\"topicConfigTable\":{\"%s\":{\"topicName\":\"%s\","
                 "\"readQueueNums\":4,\"writeQueueNums\":2,\"perm\":6}}}}",
                 g->topic, g->topic);
    assert_true(n > 0 && (size_t)n < sizeof body);
    struct rmq_cmd req;
    int32_t opaque = next_opaque++;
    fx_request(&req, RMQ_REQ_REGISTER_BROKER, opaque, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "brokerName", g->name), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "brokerAddr", g->addr), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "clusterName", "C1"), 0);
    if (g->broker_id)
        assert_int_equal(rmq_cmd_ext_set(&req, "brokerId", g->broker_id), 0);
    if (g->compressed)
        assert_int_equal(rmq_cmd_ext_set(&req, "compressed", g->compressed), 0);
    if (g->timeout_ms)
        assert_int_equal(rmq_cmd_ext_set(&req, "heartbeatTimeoutMillis", g->timeout_ms), 0);
    int32_t crc = crc32_rocketmq((const uint8_t *)body, (size_t)n);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "bodyCrc32", g->bad_crc ? crc ^ 1 : crc), 0);
    assert_int_equal(rmq_cmd_set_body_copy(&req, body, (size_t)n), 0);
    assert_true(cluster_dispatch(&fx->b, fx_conn(fx, i), &req));
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    return fx_reply(fx, i, opaque, out);
}

static void register_ok(struct fx *fx, size_t i, const char *name, const char *addr, const char *topic)
{
    struct reg g = {name, addr, topic, "0", NULL, false, NULL};
    struct rmq_cmd r;
    assert_int_equal(do_register(fx, i, &g, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
}

/* GET_ROUTEINFO_BY_TOPIC through cluster_dispatch: the reply code, and the
 * broker names and addresses listed (comma-joined) into names. */
static int32_t route(struct fx *fx, size_t i, const char *topic, char *names, size_t cap, struct rmq_cmd *out)
{
    struct rmq_cmd req;
    int32_t opaque = next_opaque++;
    fx_request(&req, RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, opaque, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", topic), 0);
    assert_true(cluster_dispatch(&fx->b, fx_conn(fx, i), &req));
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    int32_t code = fx_reply(fx, i, opaque, out);
    names[0] = 0;
    if (code != RMQ_RESP_SUCCESS)
        return code;
    json_error_t err;
    json_t *j = json_loadb((const char *)out->body, out->body_len, 0, &err);
    assert_non_null(j);
    size_t k;
    json_t *bd;
    size_t len = 0;
    json_array_foreach(json_object_get(j, "brokerDatas"), k, bd)
    {
        const char *addr = json_string_value(json_object_get(json_object_get(bd, "brokerAddrs"), "0"));
        len += (size_t)snprintf(names + len, cap - len, "%s%s@%s", k ? "," : "",
                                json_string_value(json_object_get(bd, "brokerName")), addr ? addr : "?");
    }
    json_t *qd = json_array_get(json_object_get(j, "queueDatas"), 0);
    assert_int_equal(json_integer_value(json_object_get(qd, "readQueueNums")), 4);
    assert_int_equal(json_integer_value(json_object_get(qd, "writeQueueNums")), 2);
    json_decref(j);
    return code;
}

/* Routes list every registered broker with the topic, sorted by name;
 * a topic nobody has is 17 with the name server's remark. */
static void test_register_and_route(void **state)
{
    struct fx *fx = *state;
    size_t nb = fx_connect(fx), na = fx_connect(fx), client = fx_connect(fx);
    register_ok(fx, nb, "broker-b", "10.0.0.2:10911", "TopicA");
    register_ok(fx, na, "broker-a", "10.0.0.1:10911", "TopicA");
    char names[256];
    struct rmq_cmd r;
    assert_int_equal(route(fx, client, "TopicA", names, sizeof names, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_string_equal(names, "broker-a@10.0.0.1:10911,broker-b@10.0.0.2:10911");
    assert_int_equal(route(fx, client, "TopicB", names, sizeof names, &r), RMQ_RESP_TOPIC_NOT_EXIST);
    assert_string_equal(r.remark, "No topic route info in name server for the topic: TopicB");
    rmq_cmd_clear(&r);
    /* A re-registration under the same name replaces the entry whole. */
    register_ok(fx, na, "broker-a", "10.0.0.9:10911", "TopicB");
    assert_int_equal(route(fx, client, "TopicA", names, sizeof names, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_string_equal(names, "broker-b@10.0.0.2:10911");
    assert_int_equal(route(fx, client, "TopicB", names, sizeof names, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_string_equal(names, "broker-a@10.0.0.9:10911");
    int st = 0;
    json_t *page = namesrv_admin_json(&fx->b, NULL, &st);
    json_t *admin = json_object_get(page, "brokers");
    assert_int_equal(json_array_size(admin), 2);
    json_t *a0 = json_array_get(admin, 0);
    assert_int_equal(json_integer_value(json_object_get(a0, "registrations")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a0, "dataVersion"), "counter")), 3);
    json_decref(page);
}

/* Refused registrations: bad CRC, compressed body, missing field; a slave
 * (brokerId 1) is acknowledged and ignored. None enters the routes. */
static void test_registration_checks(void **state)
{
    struct fx *fx = *state;
    size_t b = fx_connect(fx);
    struct rmq_cmd r;
    char names[128];
    struct reg bad_crc = {"broker-a", "10.0.0.1:1", "T", "0", NULL, true, NULL};
    assert_int_equal(do_register(fx, b, &bad_crc, &r), RMQ_RESP_SYSTEM_ERROR);
    assert_string_equal(r.remark, "crc32 not match");
    rmq_cmd_clear(&r);
    struct reg compressed = {"broker-a", "10.0.0.1:1", "T", "0", "true", false, NULL};
    assert_int_equal(do_register(fx, b, &compressed, &r), RMQ_RESP_SYSTEM_ERROR);
    assert_non_null(strstr(r.remark, "compressed"));
    rmq_cmd_clear(&r);
    struct reg slave = {"broker-a", "10.0.0.1:1", "T", "1", NULL, false, NULL};
    assert_int_equal(do_register(fx, b, &slave, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(route(fx, b, "T", names, sizeof names, &r), RMQ_RESP_TOPIC_NOT_EXIST);
    rmq_cmd_clear(&r);

    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_REGISTER_BROKER, 500, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "brokerName", "broker-a"), 0);
    assert_true(cluster_dispatch(&fx->b, fx_conn(fx, b), &req));
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, b, 500, &r), RMQ_RESP_SYSTEM_ERROR);
    assert_string_equal(r.remark, "missing field brokerAddr in REGISTER_BROKER request");
    rmq_cmd_clear(&r);
}

/* A broker silent for --broker-expiry-ms leaves the routes; one that sent
 * heartbeatTimeoutMillis uses that instead. */
static void test_expiry(void **state)
{
    struct fx *fx = *state;
    size_t b1 = fx_connect(fx), b2 = fx_connect(fx);
    register_ok(fx, b1, "broker-a", "10.0.0.1:1", "T");
    struct reg longer = {"broker-b", "10.0.0.2:1", "T", "0", NULL, false, "5000"};
    struct rmq_cmd r;
    assert_int_equal(do_register(fx, b2, &longer, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    char names[128];
    fx_advance(fx, 1000);
    namesrv_expire(&fx->b);
    assert_int_equal(route(fx, b1, "T", names, sizeof names, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_string_equal(names, "broker-a@10.0.0.1:1,broker-b@10.0.0.2:1");
    fx_advance(fx, 1);
    namesrv_expire(&fx->b);
    assert_int_equal(route(fx, b1, "T", names, sizeof names, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_string_equal(names, "broker-b@10.0.0.2:1");
    fx_advance(fx, 4000);
    namesrv_expire(&fx->b);
    assert_int_equal(route(fx, b1, "T", names, sizeof names, &r), RMQ_RESP_TOPIC_NOT_EXIST);
    rmq_cmd_clear(&r);
}

/* UNREGISTER_BROKER removes a broker only when name and address match;
 * a closed registering connection removes its brokers at once. */
static void test_unregister_and_forget_on_close(void **state)
{
    struct fx *fx = *state;
    size_t b1 = fx_connect(fx), b2 = fx_connect(fx), client = fx_connect(fx);
    register_ok(fx, b1, "broker-a", "10.0.0.1:1", "T");
    register_ok(fx, b2, "broker-b", "10.0.0.2:1", "T");
    const char *addrs[] = {"10.0.0.99:1", "10.0.0.1:1"};
    for (size_t k = 0; k < 2; k++) {
        struct rmq_cmd req, r;
        fx_request(&req, RMQ_REQ_UNREGISTER_BROKER, 600 + (int32_t)k, 0);
        assert_int_equal(rmq_cmd_ext_set(&req, "brokerName", "broker-a"), 0);
        assert_int_equal(rmq_cmd_ext_set(&req, "brokerAddr", addrs[k]), 0);
        assert_true(cluster_dispatch(&fx->b, fx_conn(fx, b1), &req));
        rmq_cmd_clear(&req);
        fx_iterate(fx);
        assert_int_equal(fx_reply(fx, b1, 600 + (int32_t)k, &r), RMQ_RESP_SUCCESS);
        rmq_cmd_clear(&r);
        char names[128];
        assert_int_equal(route(fx, client, "T", names, sizeof names, &r), RMQ_RESP_SUCCESS);
        rmq_cmd_clear(&r);
        assert_string_equal(names,
                            k == 0 ? "broker-a@10.0.0.1:1,broker-b@10.0.0.2:1" : "broker-b@10.0.0.2:1");
    }
    conn_close_async(fx_conn(fx, b2), "broker went away");
    fx_iterate(fx);
    char names[128];
    struct rmq_cmd r;
    assert_int_equal(route(fx, client, "T", names, sizeof names, &r), RMQ_RESP_TOPIC_NOT_EXIST);
    rmq_cmd_clear(&r);
    int st = 0;
    json_t *page = namesrv_admin_json(&fx->b, NULL, &st);
    json_t *admin = json_object_get(page, "brokers");
    assert_int_equal(json_array_size(admin), 0);
    json_decref(page);
}

/* A pure name server refuses broker codes with a remark saying so, and
 * leaves the codes it shares (GET_KV_CONFIG) to the normal dispatch. */
static void test_broker_codes_refused(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd req, r;
    fx_request(&req, RMQ_REQ_HEART_BEAT, 700, 0);
    assert_true(cluster_dispatch(&fx->b, fx_conn(fx, a), &req));
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, a, 700, &r), RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED);
    assert_string_equal(r.remark,
                        "request code 34 (HEART_BEAT) is for a broker; this rmqcoord runs --role namesrv");
    rmq_cmd_clear(&r);
    fx_request(&req, RMQ_REQ_GET_KV_CONFIG, 701, 0);
    assert_false(cluster_dispatch(&fx->b, fx_conn(fx, a), &req));
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    assert_int_equal(fx_drain(fx, a), 0);
}

/* An existing broker name is replaced or removed only over the connection
 * that registered it; a close of another connection removes nothing. */
static void test_ownership(void **state)
{
    struct fx *fx = *state;
    size_t own = fx_connect(fx), evil = fx_connect(fx), client = fx_connect(fx);
    register_ok(fx, own, "broker-a", "10.0.0.1:1", "T");
    struct reg hijack = {"broker-a", "10.6.6.6:1", "T", "0", NULL, false, NULL};
    struct rmq_cmd r;
    assert_int_equal(do_register(fx, evil, &hijack, &r), RMQ_RESP_SYSTEM_ERROR);
    assert_non_null(
        strstr(r.remark, "broker name broker-a is registered at 10.0.0.1:1 by another connection"));
    rmq_cmd_clear(&r);
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_UNREGISTER_BROKER, 800, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "brokerName", "broker-a"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "brokerAddr", "10.0.0.1:1"), 0);
    assert_true(cluster_dispatch(&fx->b, fx_conn(fx, evil), &req));
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, evil, 800, &r), RMQ_RESP_SYSTEM_ERROR);
    rmq_cmd_clear(&r);
    conn_close_async(fx_conn(fx, evil), "attacker left");
    fx_iterate(fx);
    char names[128];
    assert_int_equal(route(fx, client, "T", names, sizeof names, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_string_equal(names, "broker-a@10.0.0.1:1");
}

/* brokerAddr must be HOST:PORT with a port 1..65535 and a sane host. */
static void test_broker_addr_checked(void **state)
{
    struct fx *fx = *state;
    size_t c = fx_connect(fx);
    const char *bad[] = {"nohost", "h:0", "h:65536", "h:", ":1", "a b:1", "h:1x", "[zz]:1", "h:0000001"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct reg g = {"broker-x", bad[i], "T", "0", NULL, false, NULL};
        struct rmq_cmd r;
        assert_int_equal(do_register(fx, c, &g, &r), RMQ_RESP_SYSTEM_ERROR);
        assert_non_null(strstr(r.remark, "brokerAddr must be HOST:PORT"));
        rmq_cmd_clear(&r);
    }
    register_ok(fx, c, "broker-x", "[::1]:65535", "T");
    register_ok(fx, c, "broker-y", "host_1.example-2:1", "T");
}

/* Topic caps per registration and in total, each a limit hit; the admin
 * view pages by broker name and lists topics only for topicsOf. */
static void test_caps_and_admin_page(void **state)
{
    struct fx *fx = *state;
    size_t c = fx_connect(fx);
    fx->cfg.ns_max_topics_per_broker = 1;
    fx->cfg.ns_max_topics = 2;
    register_ok(fx, c, "b1", "10.0.0.1:1", "T1");
    register_ok(fx, c, "b2", "10.0.0.2:1", "T2");
    struct reg g = {"b3", "10.0.0.3:1", "T3", "0", NULL, false, NULL};
    struct rmq_cmd r;
    uint64_t hits = fx->b.stats.limit_hits;
    assert_int_equal(do_register(fx, c, &g, &r), RMQ_RESP_SYSTEM_ERROR);
    assert_non_null(strstr(r.remark, "--ns-max-topics (2)"));
    rmq_cmd_clear(&r);
    assert_int_equal(fx->b.stats.limit_hits, hits + 1);
    json_t *q = json_pack("{s:s,s:s,s:s}", "limit", "1", "brokersAfter", "a", "topicsOf", "b1");
    int st = 0;
    json_t *page = namesrv_admin_json(&fx->b, q, &st);
    assert_int_equal(st, 200);
    json_t *b = json_array_get(json_object_get(page, "brokers"), 0);
    assert_string_equal(json_string_value(json_object_get(b, "brokerName")), "b1");
    assert_int_equal(json_array_size(json_object_get(b, "topics")), 1);
    assert_string_equal(json_string_value(json_object_get(page, "nextBrokersAfter")), "b1");
    assert_int_equal(json_integer_value(json_object_get(page, "topicCount")), 2);
    json_decref(page);
    json_object_set_new(q, "brokersAfter", json_string("b1"));
    page = namesrv_admin_json(&fx->b, q, &st);
    b = json_array_get(json_object_get(page, "brokers"), 0);
    assert_string_equal(json_string_value(json_object_get(b, "brokerName")), "b2");
    assert_int_equal(json_array_size(json_object_get(b, "topics")), 1); /* under the 16-topic preview */
    assert_false(json_is_true(json_object_get(b, "topicsTruncated")));
    assert_int_equal(json_integer_value(json_object_get(b, "topicCount")), 1);
    assert_null(json_object_get(page, "nextBrokersAfter"));
    json_decref(page);
    /* DELETE_TOPIC_IN_NAMESRV gives its room back to --ns-max-topics. */
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_DELETE_TOPIC_IN_NAMESRV, 900, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T1"), 0);
    assert_true(cluster_dispatch(&fx->b, fx_conn(fx, c), &req));
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, c, 900, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    register_ok(fx, c, "b3", "10.0.0.3:1", "T3");
    json_object_set_new(q, "limit", json_string("0"));
    page = namesrv_admin_json(&fx->b, q, &st);
    assert_int_equal(st, 400);
    json_decref(page);
    json_decref(q);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

TEST_MAIN(T(test_register_and_route), T(test_registration_checks), T(test_expiry),
          T(test_unregister_and_forget_on_close), T(test_broker_codes_refused), T(test_ownership),
          T(test_broker_addr_checked), T(test_caps_and_admin_page))
