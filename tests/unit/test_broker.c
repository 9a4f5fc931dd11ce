/* test_broker.c — the operations every request family shares
 * (server/requests/broker.c): the expiry scan, idle timeout, the virtual
 * clock and the admin reset, on a broker fixture (docs/protocol.md §4.5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "broker_state.h"
#include "conn.h"
#include "err.h"
#include "loop.h"
#include "offset_table.h"
#include "request_codes.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

#define SILENT 300

/* Regression (fixed in 0f7d0ab; broken at 3896d98): broker_expire collected
 * expired channels with ONE registry_expire call bounded by 256 ids, and
 * registry_expire only removes a membership whose channel fits in the ids,
 * so with more than 256 silent channels the rest stayed members (and
 * their connections open) until the next scan, a second later, and so on.
 * One scan must close every expired channel: with 300 silent channels,
 * every connection is marked closing and no membership remains. */
static void test_one_scan_closes_every_expired_channel(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.channel_expiry_ms = 1000;
    struct fx *fx = fx_new(&cfg);
    size_t p[SILENT];
    for (size_t i = 0; i < SILENT; i++) {
        p[i] = fx_connect(fx);
        char id[32], group[32];
        snprintf(id, sizeof id, "c%zu", i);
        snprintf(group, sizeof group, "g%zu", i % 3);
        fx_heartbeat(fx, p[i], id, group, "T");
    }
    fx_iterate(fx);
    for (size_t i = 0; i < SILENT; i++)
        assert_true(fx_drain(fx, p[i]) >= 2); /* the reply and at least one NOTIFY */
    size_t members = 0;
    for (int g = 0; g < 3; g++) {
        char group[32];
        snprintf(group, sizeof group, "g%d", g);
        members += registry_group(&fx->b.reg, group)->g.nmembers;
    }
    assert_int_equal(members, SILENT);

    fx_advance(fx, 1001);
    broker_expire(&fx->b);
    for (size_t i = 0; i < SILENT; i++) {
        if (!fx_conn(fx, p[i])->closing)
            fail_msg("connection %zu of %d not closed by the scan", i, SILENT);
    }
    for (int g = 0; g < 3; g++) {
        char group[32];
        snprintf(group, sizeof group, "g%d", g);
        assert_null(registry_group(&fx->b.reg, group));
    }
    assert_int_equal(fx->b.stats.expirations, SILENT);
    fx_iterate(fx);
    assert_int_equal(conn_set_count(fx->b.conns), 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM members WHERE left_ms IS NULL"), 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM members WHERE leave_reason='expire'"), SILENT);
    fx_free(fx);
}

/* Only members past --channel-expiry-ms expire; a heartbeat renews. A
 * channel in two groups that expires from one is closed, leaving the other
 * too (docs/protocol.md §4.5). */
static void test_expiry_boundary_and_renewal(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.channel_expiry_ms = 1000;
    struct fx *fx = fx_new(&cfg);
    size_t a, b;
    fx_two_members(fx, &a, &b);
    fx_advance(fx, 1000);
    broker_expire(&fx->b); /* exactly the expiry: not older than it */
    assert_false(fx_conn(fx, a)->closing);
    assert_false(fx_conn(fx, b)->closing);
    fx_heartbeat(fx, a, "cA", "g", "T");
    fx_advance(fx, 1);
    broker_expire(&fx->b);
    assert_false(fx_conn(fx, a)->closing);
    assert_true(fx_conn(fx, b)->closing);
    fx_iterate(fx);
    fx_drain(fx, a);
    (void)fx_group(fx, "g", 1);
    assert_null(fx->peers[b].c);
    fx_free(fx);
}

/* --idle-timeout-ms closes a connection that sent nothing, member or not. */
static void test_idle_timeout(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.idle_timeout_ms = 1;
    struct fx *fx = fx_new(&cfg);
    size_t a = fx_connect(fx);
    fx_conn(fx, a)->last_frame_ms = loop_now_ms(fx->b.loop) - 2;
    size_t b = fx_connect(fx);
    broker_expire(&fx->b);
    assert_true(fx_conn(fx, a)->closing);
    assert_non_null(strstr(fx_conn(fx, a)->close_reason, "idle"));
    assert_false(fx_conn(fx, b)->closing);
    fx_free(fx);
}

/* --clock virtual: broker_clock_advance moves time and runs the expiry
 * scan; a real clock refuses, and so does a negative step. */
static void test_clock_advance(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.channel_expiry_ms = 5000;
    struct fx *fx = fx_new(&cfg);
    size_t a = fx_connect(fx);
    fx_heartbeat(fx, a, "cA", "g", "T");
    fx_iterate(fx);
    int64_t t0 = broker_now_ms(&fx->b);
    assert_int_equal(broker_clock_advance(&fx->b, -1), RMQ_EINVAL);
    assert_int_equal(broker_clock_advance(&fx->b, 5001), 0);
    assert_int_equal(broker_now_ms(&fx->b), t0 + 5001);
    assert_true(fx_conn(fx, a)->closing);
    fx_free(fx);

    fx_config_defaults(&cfg);
    cfg.virtual_clock = false;
    fx = fx_new(&cfg);
    assert_int_equal(broker_clock_advance(&fx->b, 10), RMQ_ESTATE);
    fx_free(fx);
}

/* broker_reset_live closes every connection and forgets groups, offsets,
 * locks and topics, then re-creates the --topic topics. */
static void test_reset_live(void **state)
{
    (void)state;
    struct config cfg;
    fx_config_defaults(&cfg);
    strcpy(cfg.topics[0].name, "Keep");
    cfg.topics[0].queues = 4;
    cfg.ntopics = 1;
    struct fx *fx = fx_new(&cfg);
    assert_non_null(topics_get(&fx->b.topics, "Keep"));
    size_t a = fx_connect(fx);
    fx_heartbeat(fx, a, "cA", "g", "T");
    assert_int_equal(offset_table_commit(&fx->b, "g", "T", 0, 5), 0);
    fx_iterate(fx);
    assert_non_null(topics_get(&fx->b.topics, "%RETRY%g"));
    uint64_t gen = fx->b.topics.generation;
    broker_reset_live(&fx->b);
    assert_null(fx->peers[a].c);
    assert_null(registry_group(&fx->b.reg, "g"));
    int64_t off;
    assert_int_equal(offsets_get(&fx->b.offsets, "g", "T", 0, &off), RMQ_ENOTFOUND);
    assert_null(topics_get(&fx->b.topics, "%RETRY%g"));
    const struct topic *keep = topics_get(&fx->b.topics, "Keep");
    assert_non_null(keep);
    assert_int_equal(keep->brokers[0].read_queue_nums, 4);
    assert_true(fx->b.topics.generation > gen);
    fx_iterate(fx);
    fx_free(fx);
}

TEST_MAIN(cmocka_unit_test(test_one_scan_closes_every_expired_channel),
          cmocka_unit_test(test_expiry_boundary_and_renewal), cmocka_unit_test(test_idle_timeout),
          cmocka_unit_test(test_clock_advance), cmocka_unit_test(test_reset_live))
