/* test_store_members.c — the writer's membership rows
 * (server/store/store_members.c): restart recovery, missing and duplicate
 * rows, subscription sets, event ids.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "store.h"
#include "store_fixture.h"
#include "test_support.h"

#include <sqlite3.h>

static void join(struct store *s, const char *group, int64_t channel, const char *client)
{
    assert_int_equal(store_member_join(s, group, channel, client, 100), 0);
}

/* Run 1 leaves live members behind; run 2 (with a live member of its own)
 * recovers: old members and channels are gone with reason "restart", one
 * event per affected group, and a second recover finds nothing. */
static void test_recover(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    for (int64_t ch = 101; ch <= 104; ch++)
        assert_int_equal(store_open_channel(s, ch, "10.0.0.1:5000", 100), 0);
    assert_int_equal(store_put_group(s, "g1", "PUSH", "CLUSTERING", "LAST", 100), 0);
    assert_int_equal(store_put_group(s, "g2", "PUSH", "CLUSTERING", "LAST", 100), 0);
    join(s, "g1", 101, "cB");
    join(s, "g1", 102, "cA");
    join(s, "g2", 103, "cC");
    assert_int_equal(store_member_leave(s, "g2", 103, "unregister", 150), 0);
    join(s, "g2", 104, "cE");
    assert_int_equal(store_close_channel(s, 104, "eof", 160), 0); /* ends cE too */
    assert_int_equal(store_commit(s), 0);
    store_close(s);

    s = open_ok(fx->path);
    assert_int_equal(store_run_id(s), 2);
    assert_int_equal(store_open_channel(s, 201, "10.0.0.2:5000", 4000), 0);
    join(s, "g1", 201, "cD");
    int groups = -1;
    assert_int_equal(store_recover(s, 5000, &groups), 0);
    assert_int_equal(groups, 1);
    assert_false(store_in_batch(s));

    sqlite3 *rd = raw_open(fx->path);
    char buf[128];
    assert_int_equal(
        raw_int(rd, "SELECT count(*) FROM members WHERE left_ms = 5000 AND leave_reason = 'restart'"), 2);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM members WHERE left_ms IS NULL AND client_id = 'cD'"),
                     1);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM members WHERE left_ms IS NULL"), 1);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM channels WHERE close_reason = 'restart'"), 3);
    assert_string_equal(raw_text(rd, "SELECT close_reason FROM channels WHERE id = 104", buf, sizeof buf),
                        "eof");
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM channels WHERE closed_ms IS NULL"), 1);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM events"), 1);
    assert_string_equal(
        raw_text(rd,
                 "SELECT group_name || ' ' || kind || ' ' || before_json || ' ' || after_json "
                 "|| ' ' || ts_ms FROM events",
                 buf, sizeof buf),
        "g1 restart [\"cA\",\"cB\"] [] 5000");

    groups = -1;
    assert_int_equal(store_recover(s, 6000, &groups), 0);
    assert_int_equal(groups, 0);
    assert_int_equal(store_recover(s, 6000, NULL), 0);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM events"), 1);
    assert_int_equal(sqlite3_close(rd), SQLITE_OK);
    store_close(s);
}

static void test_not_found_and_duplicates(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_int_equal(store_put_group(s, "g", "PUSH", "CLUSTERING", "LAST", 1), 0);
    assert_int_equal(store_open_channel(s, 1, "a:1", 1), 0);
    assert_int_equal(store_open_channel(s, 1, "a:1", 1), RMQ_EEXIST);
    assert_int_equal(store_member_heartbeat(s, "g", 1, 2), RMQ_ENOTFOUND);
    assert_int_equal(store_member_leave(s, "g", 1, "unregister", 2), RMQ_ENOTFOUND);
    assert_int_equal(store_delete_topic(s, "nope"), RMQ_ENOTFOUND);
    assert_int_equal(store_close_channel(s, 99, "eof", 2), RMQ_ENOTFOUND);
    assert_int_equal(store_member_join(s, "g", 99, "c", 2), RMQ_EINVAL); /* no such channel */
    join(s, "g", 1, "c1");
    join(s, "g", 1, "c1"); /* a repeated join refreshes the live row */
    assert_int_equal(store_member_heartbeat(s, "g", 1, 300), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM members"), 1);
    assert_int_equal(q_int(fx->path, "SELECT last_heartbeat_ms FROM members"), 300);
    assert_int_equal(store_member_leave(s, "g", 1, "unregister", 400), 0);
    join(s, "g", 1, "c1"); /* rejoin after leaving: a new stint */
    assert_int_equal(store_close_channel(s, 1, "eof", 500), 0);
    assert_int_equal(store_close_channel(s, 1, "eof", 500), RMQ_ENOTFOUND); /* already closed */
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM members WHERE left_ms IS NULL"), 0);
    assert_int_equal(
        q_int(fx->path, "SELECT count(*) FROM members WHERE leave_reason = 'eof' AND left_ms = 500"), 1);
    store_close(s);
}

static void test_subscriptions_replace_set(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    const struct store_subscription a[] = {{"T1", "*", "TAG", NULL, 1},
                                           {"T2", "a || b", "TAG", "[\"a\",\"b\"]", 2}};
    const struct store_subscription b[] = {{"T3", "x", "SQL92", "[]", 3}, {"T3", "y", "SQL92", "[]", 4}};
    assert_int_equal(store_put_group(s, "g", "PUSH", "CLUSTERING", "LAST", 1), 0);
    assert_int_equal(store_put_subscriptions(s, "g", a, 2, 1), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM subscriptions WHERE tags_json = '[]'"), 1);
    assert_int_equal(store_put_subscriptions(s, "g", b, 2, 2), 0); /* repeated topic: last wins */
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM subscriptions"), 1);
    assert_int_equal(q_int(fx->path, "SELECT sub_version FROM subscriptions WHERE topic = 'T3'"), 4);
    assert_int_equal(store_put_subscriptions(s, "g", NULL, 1, 3), RMQ_EINVAL);
    assert_int_equal(store_put_subscriptions(s, "g", NULL, 0, 3), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM subscriptions"), 0);
    store_close(s);
}

static void test_event_ids_increase(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    struct store_event ev = {.ts_ms = 1,
                             .group = "g",
                             .kind = "join",
                             .client_id = "c",
                             .channel_id = 9,
                             .before_json = "[]",
                             .after_json = "[\"c\"]"};
    int64_t id1 = 0, id2 = 0;
    assert_int_equal(store_append_event(s, &ev, &id1), 0);
    assert_int_equal(store_append_event(s, &ev, &id2), 0);
    assert_int_equal(id1, 1);
    assert_int_equal(id2, 2);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT channel_id FROM events WHERE id = 2"), 9);
    store_close(s);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

TEST_MAIN(T(test_recover), T(test_not_found_and_duplicates), T(test_subscriptions_replace_set),
          T(test_event_ids_increase))
