/* test_member_events.c — what the daemon stores when the registry reports a
 * membership change (server/requests/member_events.c), driven by
 * HEART_BEAT / UNREGISTER_CLIENT / close on a broker fixture and read back
 * from the store file: group, member, subscription and event rows, the
 * retry topic, and heartbeats refused by the limits (docs/protocol.md §3.1,
 * §4.2, §4.3, §4.5). */
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

#include <stdio.h>
#include <string.h>

#define NSUBS 100

/* Regression (fixed in 0f7d0ab; broken at 3896d98): save_subscriptions
 * copied the group's table into fixed arrays of 64 and stored at most 64
 * subscriptions, so a heartbeat with more topics (allowed up to
 * --max-subscriptions, 256 by default) was acknowledged but lost the rest
 * in the store (admin views and restarts saw 64). All 100 must be stored. */
static void test_heartbeat_stores_every_subscription(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    char names[NSUBS][16];
    const char *topics[NSUBS];
    for (size_t i = 0; i < NSUBS; i++) {
        snprintf(names[i], sizeof names[i], "Topic%03zu", i);
        topics[i] = names[i];
    }
    fx_send_heartbeat(fx, a, 7, "cA", "g", topics, NSUBS, false);
    fx_expect_reply(fx, a, 7, RMQ_RESP_SUCCESS, NULL);
    assert_int_equal(registry_group(&fx->b.reg, "g")->g.nsubs, NSUBS);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM subscriptions WHERE group_name='g'"), NSUBS);
    assert_int_equal(fx_sql_int(fx, "SELECT count(DISTINCT topic) FROM subscriptions WHERE group_name='g'"),
                     NSUBS);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM subscriptions WHERE topic='Topic099'"), 1);

    /* A later change stores the whole set again (one topic fewer). */
    fx_send_heartbeat(fx, a, 8, "cA", "g", topics + 1, NSUBS - 1, false);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM subscriptions WHERE group_name='g'"), NSUBS - 1);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM subscriptions WHERE topic='Topic000'"), 0);
}

/* A first heartbeat stores the group, the member, the client row and one
 * "join" event (join and subscribe at once are one change), and creates
 * %RETRY%<group> with one queue. */
static void test_join_rows_and_retry_topic(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    fx_heartbeat(fx, a, "cA", "g", "T");
    fx_iterate(fx);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM consumer_groups WHERE name='g' AND "
                                    "message_model='CLUSTERING'"),
                     1);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM members WHERE group_name='g' AND client_id='cA' "
                                    "AND left_ms IS NULL"),
                     1);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM clients WHERE client_id='cA'"), 1);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM events WHERE group_name='g'"), 1);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM events WHERE group_name='g' AND kind='join' AND "
                                    "before_json='[]' AND after_json='[\"cA\"]'"),
                     1);
    const struct topic *retry = topics_get(&fx->b.topics, "%RETRY%g");
    assert_non_null(retry);
    assert_int_equal(retry->nbrokers, 1);
    assert_int_equal(retry->brokers[0].read_queue_nums, 1);
    assert_string_equal(retry->brokers[0].broker_name, "broker-a");
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM topics WHERE name='%RETRY%g'"), 1);
    assert_int_equal(fx->b.stats.changes, 1);
}

/* Leaves are stored with their reason and an event listing the member
 * list before and after. */
static void test_leave_rows(void **state)
{
    struct fx *fx = *state;
    size_t a, b;
    fx_two_members(fx, &a, &b);
    fx_unregister(fx, a, 3, "g", NULL);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM members WHERE client_id='cA' AND "
                                    "leave_reason='unregister' AND left_ms IS NOT NULL"),
                     1);
    assert_int_equal(fx_sql_int(fx,
                                "SELECT count(*) FROM events WHERE kind='unregister' AND "
                                "client_id='cA' AND before_json='[\"cA\",\"cB\"]' AND after_json='[\"cB\"]'"),
                     1);
    conn_close_async(fx_conn(fx, b), "test");
    fx_iterate(fx);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM members WHERE client_id='cB' AND "
                                    "leave_reason='close'"),
                     1);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM channels WHERE closed_ms IS NOT NULL AND "
                                    "close_reason='test'"),
                     1);
    assert_null(registry_group(&fx->b.reg, "g"));
}

/* A heartbeat beyond --max-subscriptions is refused with SYSTEM_ERROR
 * naming the flag, and changes nothing (no member, no row). */
static void test_heartbeat_over_limit_changes_nothing(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.max_subscriptions = 3;
    struct fx *fx = fx_new(&cfg);
    size_t a = fx_connect(fx);
    const char *topics[] = {"A", "B", "C", "D"};
    struct rmq_cmd r;
    fx_send_heartbeat(fx, a, 7, "cA", "g", topics, 4, false);
    assert_int_equal(fx_reply(fx, a, 7, &r), RMQ_RESP_SYSTEM_ERROR);
    assert_non_null(r.remark);
    assert_non_null(strstr(r.remark, "max-subscriptions"));
    rmq_cmd_clear(&r);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_null(registry_group(&fx->b.reg, "g"));
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM members"), 0);

    fx_send_heartbeat(fx, a, 8, "cA", "g", topics, 3, false);
    fx_expect_reply(fx, a, 8, RMQ_RESP_SUCCESS, NULL);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM subscriptions"), 3);
    fx_free(fx);
}

/* A malformed body is SYSTEM_ERROR with the parser's reason. */
static void test_bad_heartbeat_body(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    /* clientID is required */
    fx_handle_body(fx, a, consumer_req_heartbeat, RMQ_REQ_HEART_BEAT, 9, "{\"consumerDataSet\":[]}");
    fx_expect_reply_prefix(fx, a, 9, RMQ_RESP_SYSTEM_ERROR, "bad heartbeat body: ");
}

/* The HEART_BEAT reply carries the v2 fields (docs/protocol.md §3.2). */
static void test_heartbeat_reply_v2_fields(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    fx_heartbeat(fx, a, "cA", "g", "T");
    fx_iterate(fx);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 7, &r), RMQ_RESP_SUCCESS);
    assert_string_equal(rmq_cmd_ext_get(&r, "IS_SUPPORT_HEART_BEAT_V2"), "true");
    assert_string_equal(rmq_cmd_ext_get(&r, "IS_SUB_CHANGE"), "true");
    rmq_cmd_clear(&r);
}

TEST_MAIN(FX_TEST(test_heartbeat_stores_every_subscription), FX_TEST(test_join_rows_and_retry_topic),
          FX_TEST(test_leave_rows), cmocka_unit_test(test_heartbeat_over_limit_changes_nothing),
          FX_TEST(test_bad_heartbeat_body), FX_TEST(test_heartbeat_reply_v2_fields))
