/* test_store_guard.c — the store's own protections and upkeep (issue 19):
 * one writer per store (the lock file), another application's file refused
 * untouched, a bounded wait on an outside lock, closed channels pruned,
 * the run's members ended at stop, re-writes asked for after a failure,
 * and the per-group event numbers the reader checks. Real SQLite files in
 * a temporary directory (store_fixture.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "err.h"
#include "store.h"
#include "store_fixture.h"
#include "store_read.h"
#include "test_support.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_second_writer_refused(void **state)
{
    struct fx *fx = *state;
    struct store *a = open_ok(fx->path);
    struct store *b = (struct store *)1;
    char err[512] = "";
    assert_int_equal(store_open(fx->path, &b, err, sizeof err), RMQ_ESTATE);
    assert_null(b);
    assert_non_null(strstr(err, fx->path));
    assert_non_null(strstr(err, "in use"));
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    assert_non_null(strstr(err, pid));
    store_close(a);
    store_close(open_ok(fx->path)); /* free again once the first is closed */
}

static void test_foreign_file_refused_untouched(void **state)
{
    struct fx *fx = *state;
    raw_exec(fx->path, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine')");
    struct store *s = (struct store *)1;
    char err[512] = "";
    assert_int_equal(store_open(fx->path, &s, err, sizeof err), RMQ_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "not an rmqcoord store"));
    sqlite3 *db = raw_open(fx->path);
    char mode[16];
    assert_string_equal(raw_text(db, "PRAGMA journal_mode", mode, sizeof mode), "delete");
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_master"), 1);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 0);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static void test_ours_carries_application_id(void **state)
{
    struct fx *fx = *state;
    store_close(open_ok(fx->path));
    assert_int_equal(q_int(fx->path, "PRAGMA application_id"), 0x524D5143);
    /* a 0-byte file is a new store (logged) */
    char p[4300];
    snprintf(p, sizeof p, "%s/empty.db", fx->dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    store_close(open_ok(p));
    assert_int_equal(q_int(p, "PRAGMA application_id"), 0x524D5143);
}

static void test_outside_lock_fails_fast_and_recovers(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    int64_t t0 = mono_ms();
    assert_int_equal(store_put_offset(s, "g", "t", 0, 1, 1), RMQ_EIO);
    int64_t first = mono_ms() - t0;
    assert_true(first < 1000);
    t0 = mono_ms();
    for (int i = 0; i < 20; i++)
        assert_int_not_equal(store_put_offset(s, "g", "t", 0, 2 + i, 1), 0);
    assert_true(mono_ms() - t0 < 200); /* later writes do not wait again */
    assert_false(store_in_batch(s));
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    usleep(600 * 1000);
    assert_int_equal(store_put_offset(s, "g", "t", 0, 99, 1), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT queue_offset FROM offsets"), 99);
    store_close(s);
}

static void test_prune_keeps_the_bound(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    int64_t base = store_run_id(s) << 32;
    int total = STORE_KEEP_CLOSED_CHANNELS + 1500;
    assert_int_equal(store_put_group(s, "g", NULL, NULL, NULL, 1), 0);
    for (int i = 1; i <= total; i++) {
        assert_int_equal(store_open_channel(s, base + i, "peer", 1000), 0);
        assert_int_equal(store_member_join(s, "g", base + i, "c", 1000), 0);
        if (i <= total - 3) /* the last three stay open */
            assert_int_equal(store_close_channel(s, base + i, "close", 2000), 0);
    }
    assert_int_equal(store_commit(s), 0);
    int64_t now = 10000;
    int pruned = 0, sum = 0;
    for (int round = 0; round < 10; round++, now += 2000) {
        assert_int_equal(store_prune(s, now, &pruned), 0);
        assert_true(pruned <= STORE_PRUNE_BATCH);
        sum += pruned;
    }
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(sum, total - 3 - STORE_KEEP_CLOSED_CHANNELS);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM channels WHERE closed_ms IS NOT NULL"),
                     STORE_KEEP_CLOSED_CHANNELS);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM channels WHERE closed_ms IS NULL"), 3);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM members"), STORE_KEEP_CLOSED_CHANNELS + 3);
    /* the newest closed ones are kept */
    assert_int_equal(q_int(fx->path, "SELECT max(id) FROM channels WHERE closed_ms IS NOT NULL"),
                     base + total - 3);
    /* not due again within the second */
    assert_int_equal(store_prune(s, now - 1999, &pruned), 0);
    assert_int_equal(pruned, 0);
    /* closed a day ago: pruned whatever the count */
    assert_int_equal(store_prune(s, 2000 + STORE_KEEP_CLOSED_MS + 1 + now, &pruned), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM channels WHERE closed_ms IS NOT NULL"),
                     STORE_KEEP_CLOSED_CHANNELS - STORE_PRUNE_BATCH);
    store_close(s);
}

static void test_end_run_and_resync(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    int64_t base = store_run_id(s) << 32;
    assert_false(store_resync_due(s, 1));
    assert_int_equal(store_put_group(s, "g", NULL, NULL, NULL, 1), 0);
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(store_open_channel(s, base + i, "peer", 1), 0);
        assert_int_equal(store_member_join(s, "g", base + i, i == 1 ? "a" : i == 2 ? "b" : "c", 1), 0);
    }
    assert_int_equal(store_commit(s), 0);
    /* a failed write asks for a re-write, once a second */
    assert_int_equal(store_member_join(s, "nosuchgroup", base + 1, "x", 2), RMQ_EINVAL);
    assert_true(store_resync_pending(s));
    assert_true(store_resync_due(s, 1000));
    assert_false(store_resync_due(s, 1500));
    /* the re-write: channel 2 and 3 live, channel 1 gone */
    assert_int_equal(store_resync_channel(s, base + 2, "peer", 1), 0);
    assert_int_equal(store_resync_channel(s, base + 4, "peer", 1), 0); /* missing: added */
    char live[128];
    snprintf(live, sizeof live, "[%lld,%lld,%lld]", (long long)(base + 2), (long long)(base + 3),
             (long long)(base + 4));
    assert_int_equal(store_resync_group(s, "g", live, 5), 0);
    assert_int_equal(store_resync_finish(s, "[\"g\"]", live, 5), 0);
    assert_int_equal(store_commit(s), 0);
    assert_false(store_resync_pending(s));
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM members WHERE left_ms IS NULL"), 2);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM channels WHERE closed_ms IS NULL"), 3);
    /* a clean stop ends the rest, with one event */
    int groups = 0;
    assert_int_equal(store_end_run(s, 9, &groups), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(groups, 1);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM members WHERE left_ms IS NULL"), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM channels WHERE closed_ms IS NULL"), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM events WHERE kind = 'stop'"), 1);
    store_close(s);
}

static void append(struct store *s, const char *group, const char *kind, const char *client,
                   const char *before, const char *after, bool delta, int64_t index)
{
    struct store_event ev = {1, group, kind, client, 0, before, after, delta, index};
    assert_int_equal(store_append_event(s, &ev, NULL), 0);
}

static void test_event_numbers_and_gap(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    append(s, "g", "join", "a", "[]", "[\"a\"]", false, 0);
    append(s, "h", "join", "x", "[]", "[\"x\"]", false, 0);
    append(s, "g", "join", "b", NULL, NULL, true, 1);
    append(s, "g", "join", "c", NULL, NULL, true, 2);
    append(s, "g", "close", "b", NULL, NULL, true, 1);
    append(s, "g", "close", "c", NULL, NULL, true, 1);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT group_concat(group_seq) FROM events WHERE group_name = 'h'"), 1);
    assert_int_equal(q_int(fx->path, "SELECT max(group_seq) FROM events WHERE group_name = 'g'"), 5);
    struct store_reader *r = NULL;
    char err[256];
    assert_int_equal(store_reader_open(fx->path, &r, err, sizeof err), 0);
    json_t *out = store_reader_events(r, "g", 0, 100, err, sizeof err);
    assert_non_null(out);
    json_t *evs = json_object_get(out, "events");
    assert_int_equal(json_array_size(evs), 5);
    for (size_t i = 0; i < 5; i++)
        assert_true(json_is_array(json_object_get(json_array_get(evs, i), "after")));
    json_decref(out);
    /* the join of c removed by hand: the two closes after it cannot be rebuilt */
    raw_exec(fx->path, "DELETE FROM events WHERE client_id = 'c' AND kind = 'join'");
    out = store_reader_events(r, "g", 0, 100, err, sizeof err);
    assert_non_null(out);
    evs = json_object_get(out, "events");
    assert_int_equal(json_array_size(evs), 4);
    assert_true(json_is_array(json_object_get(json_array_get(evs, 1), "after")));
    assert_true(json_is_null(json_object_get(json_array_get(evs, 2), "after")));
    assert_true(json_is_null(json_object_get(json_array_get(evs, 3), "before")));
    json_decref(out);
    store_reader_close(r);
    store_close(s);
}

TEST_MAIN(FX_TEST(test_second_writer_refused), FX_TEST(test_foreign_file_refused_untouched),
          FX_TEST(test_ours_carries_application_id), FX_TEST(test_outside_lock_fails_fast_and_recovers),
          FX_TEST(test_prune_keeps_the_bound), FX_TEST(test_end_run_and_resync),
          FX_TEST(test_event_numbers_and_gap))
