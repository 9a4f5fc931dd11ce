/* test_notify.c — NOTIFY_CONSUMER_IDS_CHANGED fan-out (server/requests/notify.c,
 * with the member_events hooks that schedule it), against a broker fixture
 * whose connections are socketpairs: who receives a NOTIFY, how often, and
 * for which changes (docs/protocol.md §4.2, §4.4, §4.5, §4.6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "conn.h"
#include "consumer_requests.h"
#include "request_codes.h"
#include "test_support.h"

#include <string.h>

/* Reads the HEART_BEAT reply (SUCCESS) at peer i. */
static void expect_hb_reply(struct fx *fx, size_t i)
{
    fx_expect_reply(fx, i, 7, RMQ_RESP_SUCCESS, NULL);
}

/* A join notifies every live channel of the group, the new member included. */
static void test_join_notifies_every_member(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx), other = fx_connect(fx);
    fx_heartbeat(fx, a, "cA", "g", "T");
    fx_heartbeat(fx, other, "cO", "h", "T");
    fx_iterate(fx);
    expect_hb_reply(fx, a);
    assert_int_equal(fx_notifies(fx, a, "g"), 1);
    expect_hb_reply(fx, other);
    assert_int_equal(fx_notifies(fx, other, "h"), 1);

    fx_heartbeat(fx, b, "cB", "g", "T");
    fx_iterate(fx);
    assert_int_equal(fx_notifies(fx, a, "g"), 1);
    expect_hb_reply(fx, b);
    assert_int_equal(fx_notifies(fx, b, "g"), 1);
    /* Another group's member hears nothing. */
    assert_int_equal(fx_drain(fx, other), 0);
    assert_int_equal(fx->b.stats.notifications_sent, 4);
}

/* However many changes a group sees in one iteration, each member gets one
 * NOTIFY; a channel in two changed groups gets one per group. */
static void test_coalesced_once_per_group_per_iteration(void **state)
{
    struct fx *fx = *state;
    size_t p[4];
    for (size_t i = 0; i < 4; i++)
        p[i] = fx_connect(fx);
    fx_heartbeat(fx, p[0], "c0", "g", "T");
    fx_heartbeat(fx, p[1], "c1", "g", "T");
    fx_heartbeat(fx, p[2], "c2", "g", "T");
    /* p[3] is in two groups at once. */
    const char *body = "{\"clientID\":\"c3\",\"consumerDataSet\":["
                       "{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":\"T\"}]},"
                       "{\"groupName\":\"h\",\"subscriptionDataSet\":[{\"topic\":\"T\"}]}]}";
    fx_handle_body(fx, p[3], consumer_req_heartbeat, RMQ_REQ_HEART_BEAT, 7, body);
    for (size_t i = 0; i < 3; i++) {
        expect_hb_reply(fx, p[i]);
        assert_int_equal(fx_notifies(fx, p[i], "g"), 1);
    }
    expect_hb_reply(fx, p[3]);
    size_t g = 0, h = 0;
    struct rmq_cmd n;
    while (fx_recv(fx, p[3], &n) == 0) {
        assert_int_equal(n.code, RMQ_REQ_NOTIFY_CONSUMER_IDS_CHANGED);
        const char *grp = rmq_cmd_ext_get(&n, "consumerGroup");
        assert_non_null(grp);
        g += !strcmp(grp, "g");
        h += !strcmp(grp, "h");
        rmq_cmd_clear(&n);
    }
    assert_int_equal(g, 1);
    assert_int_equal(h, 1);
    /* Nothing changed since: the next iteration sends nothing. */
    fx_iterate(fx);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(fx_drain(fx, p[i]), 0);
}

/* A repeated heartbeat (byte-identical, or re-sent with a new client id on
 * the same channel) is not a change: a reply, no NOTIFY. */
static void test_reheartbeat_is_not_a_change(void **state)
{
    struct fx *fx = *state;
    size_t a, b;
    fx_two_members(fx, &a, &b);

    uint64_t repeated = fx->b.stats.heartbeats_repeated;
    fx_heartbeat(fx, a, "cA", "g", "T");
    fx_iterate(fx);
    expect_hb_reply(fx, a);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_drain(fx, b), 0);
    assert_int_equal(fx->b.stats.heartbeats_repeated, repeated + 1);

    /* A different client id on a known channel replaces it silently. */
    fx_heartbeat(fx, a, "cA2", "g", "T");
    fx_iterate(fx);
    expect_hb_reply(fx, a);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_drain(fx, b), 0);
    const struct reg_group *g = fx_group(fx, "g", 2);
    assert_string_equal(g->g.members[0].client_id, "cA2");
}

/* Broadcasting groups are never notified: not on join, not on close. */
static void test_broadcast_group_not_notified(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    const char *topics[] = {"T"};
    for (size_t i = 0; i < 2; i++)
        fx_send_heartbeat(fx, i ? b : a, 7, i ? "cB" : "cA", "bg", topics, 1, true);
    expect_hb_reply(fx, a);
    expect_hb_reply(fx, b);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_drain(fx, b), 0);
    (void)fx_group(fx, "bg", 2);
    conn_close_async(fx_conn(fx, b), "test");
    fx_iterate(fx);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx->b.stats.notifications_sent, 0);
}

/* A close notifies the rest of the group; the closed peer sees EOF. */
static void test_close_notifies_the_rest(void **state)
{
    struct fx *fx = *state;
    size_t a, b;
    fx_two_members(fx, &a, &b);
    conn_close_async(fx_conn(fx, b), "client went away");
    fx_iterate(fx);
    assert_null(fx->peers[b].c);
    assert_int_equal(fx_drain(fx, b), 0);
    assert_true(fx->peers[b].eof);
    assert_int_equal(fx_notifies(fx, a, "g"), 1);
    (void)fx_group(fx, "g", 1);
    /* The last member closing removes the group; nobody is left to notify. */
    conn_close_async(fx_conn(fx, a), "client went away");
    fx_iterate(fx);
    assert_null(registry_group(&fx->b.reg, "g"));
    assert_int_equal(fx_drain(fx, a), 0);
}

/* UNREGISTER_CLIENT notifies the remaining members, and only when the
 * channel was a member; the connection stays open. */
static void test_unregister_notifies_only_on_change(void **state)
{
    struct fx *fx = *state;
    size_t a, b;
    fx_two_members(fx, &a, &b);

    fx_unregister(fx, a, 21, "other", "cA");
    fx_expect_reply(fx, a, 21, RMQ_RESP_SUCCESS, NULL);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_drain(fx, b), 0);

    fx_unregister(fx, a, 22, "g", NULL);
    fx_expect_reply(fx, a, 22, RMQ_RESP_SUCCESS, NULL);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_notifies(fx, b, "g"), 1);
    assert_non_null(fx->peers[a].c);
    assert_false(fx->peers[a].c->closing);
}

/* A topic added to or removed from the group's table is a change. */
static void test_subscription_change_notifies(void **state)
{
    struct fx *fx = *state;
    size_t a, b;
    fx_two_members(fx, &a, &b);
    const char *two[] = {"T", "U"};
    fx_send_heartbeat(fx, a, 7, "cA", "g", two, 2, false);
    expect_hb_reply(fx, a);
    assert_int_equal(fx_notifies(fx, a, "g"), 1);
    assert_int_equal(fx_notifies(fx, b, "g"), 1);
    /* b's heartbeat lists only T: U is removed from the shared table. */
    fx_heartbeat(fx, b, "cB", "g", "T");
    fx_iterate(fx);
    expect_hb_reply(fx, b);
    assert_int_equal(fx_notifies(fx, a, "g"), 1);
    assert_int_equal(fx_notifies(fx, b, "g"), 1);
    assert_int_equal(registry_group(&fx->b.reg, "g")->g.nsubs, 1);
}

/* --notify-on-expiry off: an expired member leaves silently. */
static void test_expiry_silent_when_configured(void **state)
{
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.dialect.notify_on_expiry = false;
    cfg.channel_expiry_ms = 1000;
    struct fx *fx = fx_new(&cfg);
    (void)state;
    size_t a, b;
    fx_two_members(fx, &a, &b);
    fx_advance(fx, 600);
    fx_heartbeat(fx, a, "cA", "g", "T"); /* a stays alive */
    fx_advance(fx, 600);
    broker_expire(&fx->b);
    assert_true(fx_conn(fx, b)->closing);
    fx_iterate(fx);
    expect_hb_reply(fx, a);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_null(fx->peers[b].c);
    assert_int_equal(registry_group(&fx->b.reg, "g")->g.nmembers, 1);
    fx_free(fx);
}

TEST_MAIN(cmocka_unit_test_setup_teardown(test_join_notifies_every_member, fx_setup, fx_teardown),
          cmocka_unit_test_setup_teardown(test_coalesced_once_per_group_per_iteration, fx_setup, fx_teardown),
          cmocka_unit_test_setup_teardown(test_reheartbeat_is_not_a_change, fx_setup, fx_teardown),
          cmocka_unit_test_setup_teardown(test_broadcast_group_not_notified, fx_setup, fx_teardown),
          cmocka_unit_test_setup_teardown(test_close_notifies_the_rest, fx_setup, fx_teardown),
          cmocka_unit_test_setup_teardown(test_unregister_notifies_only_on_change, fx_setup, fx_teardown),
          cmocka_unit_test_setup_teardown(test_subscription_change_notifies, fx_setup, fx_teardown),
          cmocka_unit_test(test_expiry_silent_when_configured))
