/* test_admin_ops.c — the loop side of the admin API that answers from live
 * state (server/admin/admin_ops.c, admin_clients.c, metrics.c, and
 * cluster_admin_json), called as the mailbox drain calls them, on a broker
 * fixture: clients, eviction, the virtual clock, diagnostics, metrics,
 * reset, cluster, unknown ops (docs/admin-api.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "admin_ops.h"
#include "broker_fixture.h"
#include "conn.h"
#include "mailbox.h"
#include "request_codes.h"
#include "test_support.h"

#include <jansson.h>
#include <string.h>

/* Runs op with arg, query (borrowed, may be NULL) and body; its status
 * must be want (< 0: not checked); returns the reply (new reference). */
static json_t *op(struct fx *fx, enum admin_op code, const char *arg, json_t *query, json_t *body, int want)
{
    struct mailbox_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.op = code;
    msg.arg = (char *)arg;
    msg.query = query;
    msg.body = body;
    admin_ops_handle(&fx->b, &msg);
    assert_non_null(msg.reply);
    if (want >= 0)
        assert_int_equal(msg.status, want);
    return msg.reply;
}

/* op whose reply is only checked for its status. */
static void op_status(struct fx *fx, enum admin_op code, const char *arg, json_t *query, json_t *body,
                      int want)
{
    json_decref(op(fx, code, arg, query, body, want));
}

/* Readers of a reply: j[key] as a string, an integer, an array's size. */
static const char *jstr(const json_t *j, const char *key)
{
    return json_string_value(json_object_get(j, key));
}

static json_int_t jint(const json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

static size_t jlen(const json_t *j, const char *key)
{
    return json_array_size(json_object_get(j, key));
}

/* Clients sorted by id, one entry per id over its channels; 404 for an
 * unknown id. */
static void test_clients(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx), c = fx_connect(fx);
    fx_join(fx, a, "zeta", "g");
    fx_join(fx, b, "alpha", "g");
    fx_join(fx, c, "alpha", "h");
    json_t *r = op(fx, ADMIN_OP_CLIENTS_LIST, NULL, NULL, NULL, 200);
    json_t *list = json_object_get(r, "clients");
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(jstr(json_array_get(list, 0), "clientId"), "alpha");
    assert_int_equal(jlen(json_array_get(list, 0), "channels"), 2);
    assert_int_equal(jlen(json_array_get(list, 0), "groups"), 2);
    assert_string_equal(jstr(json_array_get(list, 1), "clientId"), "zeta");
    json_decref(r);
    r = op(fx, ADMIN_OP_CLIENT_GET, "nobody", NULL, NULL, 404);
    assert_string_equal(jstr(r, "error"), "client not found");
    json_decref(r);
    op_status(fx, ADMIN_OP_CLIENT_GET, "zeta", NULL, NULL, 200);
}

/* Eviction closes the member's channels; the close path notifies the rest. */
static void test_evict(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    fx_join(fx, a, "cA", "g");
    fx_join(fx, b, "cB", "g");
    fx_drain(fx, a);
    json_t *q = json_pack("{s:s}", "clientId", "cB");
    json_t *r = op(fx, ADMIN_OP_GROUP_EVICT, "g", q, NULL, 200);
    assert_int_equal(jlen(r, "evicted"), 1);
    json_decref(r);
    assert_true(fx_conn(fx, b)->closing);
    fx_iterate(fx);
    assert_null(fx->peers[b].c);
    assert_int_equal(fx_notifies(fx, a, "g"), 1);
    /* Again: nobody left with that id; an unknown group; no clientId. */
    op_status(fx, ADMIN_OP_GROUP_EVICT, "g", q, NULL, 404);
    op_status(fx, ADMIN_OP_GROUP_EVICT, "nope", q, NULL, 404);
    json_decref(q);
    q = json_object();
    op_status(fx, ADMIN_OP_GROUP_EVICT, "g", q, NULL, 400);
    json_decref(q);
}

/* The virtual clock: get, advance (which runs expiry), bad bodies. */
static void test_clock(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_member(fx, "cA", "g");
    json_t *r = op(fx, ADMIN_OP_CLOCK_GET, NULL, NULL, NULL, 200);
    assert_true(json_is_true(json_object_get(r, "virtual")));
    json_int_t t0 = jint(r, "nowMs");
    json_decref(r);
    json_t *body = json_pack("{s:I}", "ms", (json_int_t)120001);
    r = op(fx, ADMIN_OP_CLOCK_ADVANCE, NULL, NULL, body, 200);
    json_decref(body);
    assert_int_equal(jint(r, "nowMs"), t0 + 120001);
    assert_int_equal(jint(r, "advancedMs"), 120001);
    json_decref(r);
    assert_true(fx_conn(fx, a)->closing); /* expired by the advance */
    const char *bad[] = {"{\"ms\":-1}", "{\"ms\":\"5\"}", "{}", "{\"ms\":31622400001}"};
    for (size_t k = 0; k < 4; k++) {
        body = json_loads(bad[k], 0, NULL);
        assert_non_null(body);
        r = op(fx, ADMIN_OP_CLOCK_ADVANCE, NULL, NULL, body, 400);
        json_decref(body);
        json_decref(r);
    }
}

static void test_clock_real_refused(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.virtual_clock = false;
    struct fx *fx = fx_new(&cfg);
    json_t *body = json_pack("{s:i}", "ms", 10);
    json_t *r = op(fx, ADMIN_OP_CLOCK_ADVANCE, NULL, NULL, body, 409);
    assert_string_equal(jstr(r, "error"), "real clock");
    json_decref(r);
    json_decref(body);
    fx_free(fx);
}

static bool has_issue(json_t *r, const char *kind)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(r, "issues"), i, it)
    {
        if (!strcmp(jstr(it, "kind"), kind))
            return true;
    }
    return false;
}

/* Diagnostics: 404 for a group never seen, a known-but-empty group is
 * "live": false, duplicate client ids and stale heartbeats are issues. */
static void test_diagnostics(void **state)
{
    struct fx *fx = *state;
    op_status(fx, ADMIN_OP_GROUP_DIAGNOSTICS, "g", NULL, NULL, 404);
    size_t a = fx_connect(fx), b = fx_connect(fx);
    fx_join(fx, a, "same", "g");
    fx_join(fx, b, "same", "g");
    json_t *r = op(fx, ADMIN_OP_GROUP_DIAGNOSTICS, "g", NULL, NULL, 200);
    assert_int_equal(jint(r, "members"), 2);
    assert_true(has_issue(r, "duplicateClientIds"));
    assert_false(has_issue(r, "staleHeartbeats"));
    json_decref(r);
    fx_advance(fx, 60001);
    r = op(fx, ADMIN_OP_GROUP_DIAGNOSTICS, "g", NULL, NULL, -1);
    assert_true(has_issue(r, "staleHeartbeats"));
    assert_int_equal(jlen(r, "staleMembers"), 2);
    json_decref(r);
    conn_close_async(fx_conn(fx, a), "test");
    conn_close_async(fx_conn(fx, b), "test");
    fx_iterate(fx);
    r = op(fx, ADMIN_OP_GROUP_DIAGNOSTICS, "g", NULL, NULL, 200);
    assert_true(json_is_false(json_object_get(r, "live")));
    json_decref(r);
}

/* /metrics, loop side: the live counts in Prometheus text. */
static void test_metrics(void **state)
{
    struct fx *fx = *state;
    (void)fx_member(fx, "cA", "g");
    json_t *r = op(fx, ADMIN_OP_METRICS, NULL, NULL, NULL, 200);
    const char *text = jstr(r, "text");
    assert_non_null(text);
    assert_non_null(strstr(text, "\nrmqcoord_connections 1\n"));
    assert_non_null(strstr(text, "\nrmqcoord_groups 1\n"));
    assert_non_null(strstr(text, "rmqcoord_group_members{group=\"g\"} 1\n"));
    assert_non_null(strstr(text, "\nrmqcoord_notifications_sent_total 1\n"));
    json_decref(r);
}

/* Reset closes every connection and empties the store. */
static void test_reset(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    fx_connect(fx);
    fx_join(fx, a, "cA", "g");
    json_t *r = op(fx, ADMIN_OP_RESET, NULL, NULL, NULL, 200);
    assert_int_equal(jint(r, "closedConnections"), 2);
    json_decref(r);
    assert_int_equal(conn_set_count(fx->b.conns), 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM members"), 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM topics"), 0);
    assert_null(registry_group(&fx->b.reg, "g"));
}

/* GET /api/cluster in --role both; an unknown op is 404. */
static void test_cluster_and_unknown(void **state)
{
    struct fx *fx = *state;
    json_t *q = json_pack("{s:s}", "group", "g");
    json_t *r = op(fx, ADMIN_OP_CLUSTER, NULL, q, NULL, 200);
    json_decref(q);
    assert_string_equal(jstr(r, "role"), "both");
    assert_string_equal(jstr(r, "brokerName"), "broker-a");
    assert_string_equal(jstr(r, "group"), "g");
    json_decref(r);
    op_status(fx, (enum admin_op)999, NULL, NULL, NULL, 404);
}

TEST_MAIN(FX_TEST(test_clients), FX_TEST(test_evict), FX_TEST(test_clock),
          cmocka_unit_test(test_clock_real_refused), FX_TEST(test_diagnostics), FX_TEST(test_metrics),
          FX_TEST(test_reset), FX_TEST(test_cluster_and_unknown))
