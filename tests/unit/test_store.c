/* test_store.c — the SQLite writer's batches and commits (server/store/store.c)
 * on real files: one transaction per batch, a failed write or commit that
 * leaves nothing half-applied (RLIMIT_FSIZE forces the latter), soft
 * writes, lazy commits with the sync thread, and a process killed without
 * store_close. Other groups: test_store_open.c, test_store_topics.c,
 * test_store_members.c (fixture in store_fixture.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "store.h"
#include "store_fixture.h"
#include "store_sync.h"
#include "test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_uncommitted_batch_invisible(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_int_equal(store_put_offset(s, "g", "T", 0, 42, 1), 0);
    assert_true(store_in_batch(s));
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM offsets"), 0);
    assert_int_equal(store_commit(s), 0);
    assert_false(store_in_batch(s));
    assert_int_equal(q_int(fx->path, "SELECT queue_offset FROM offsets"), 42);
    store_close(s);
}

/* 100 writes of different kinds, watched by a reader after each one: no
 * row and no commit (PRAGMA data_version is unchanged) until store_commit,
 * then all of them at once. */
static void test_batch_is_one_transaction(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_int_equal(store_open_channel(s, 1, "127.0.0.1:1", 1), 0);
    assert_int_equal(store_put_group(s, "g", "PUSH", "CLUSTERING", "LAST", 1), 0);
    assert_int_equal(store_commit(s), 0);
    sqlite3 *rd = raw_open(fx->path);
    int64_t dv = raw_int(rd, "PRAGMA data_version");
    for (int i = 0; i < 100; i++) {
        char client[32];
        snprintf(client, sizeof client, "client-%d", i);
        struct store_event ev = {.ts_ms = i, .group = "g", .kind = "join", .client_id = client};
        assert_int_equal(store_put_client(s, client, "JAVA", 401, i), 0);
        assert_int_equal(store_put_offset(s, "g", "T", i, i, i), 0);
        assert_int_equal(store_append_event(s, &ev, NULL), 0);
        assert_true(store_in_batch(s));
        assert_int_equal(raw_int(rd, "SELECT count(*) FROM offsets"), 0);
        assert_int_equal(raw_int(rd, "SELECT count(*) FROM events"), 0);
        assert_int_equal(raw_int(rd, "PRAGMA data_version"), dv);
    }
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM offsets"), 100);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM clients"), 100);
    assert_int_equal(raw_int(rd, "SELECT count(*) FROM events"), 100);
    assert_true(raw_int(rd, "PRAGMA data_version") != dv);
    assert_int_equal(sqlite3_close(rd), SQLITE_OK);
    store_close(s);
}

/* A write that violates a constraint fails alone: the batch stays open,
 * earlier writes in it still commit, and a multi-statement write leaves
 * nothing half-applied. */
static void test_failed_write_keeps_batch(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    const struct store_topic_broker bad[] = {{"b1", 4, 4, 6}, {"b2", -1, 4, 6}};
    const struct store_subscription subs[] = {{"T", "*", "TAG", "[]", 1}};
    assert_int_equal(store_put_offset(s, "g", "T", 0, 7, 1), 0);
    assert_int_equal(store_member_join(s, "nogroup", 1, "c1", 1), RMQ_EINVAL); /* foreign keys */
    assert_true(strlen(store_errmsg(s)) > 0);
    assert_int_equal(store_put_subscriptions(s, "nogroup", subs, 1, 1), RMQ_EINVAL);
    assert_int_equal(store_put_topic(s, "Half", bad, 2, 1), RMQ_EINVAL);
    assert_int_equal(store_put_topic(s, "Half", NULL, 1, 1), RMQ_EINVAL);
    struct store_event ev = {.ts_ms = 1, .group = "g", .kind = "join", .before_json = "{not json"};
    assert_int_equal(store_append_event(s, &ev, NULL), RMQ_EINVAL);
    ev.before_json = "{\"an\":\"object\"}";
    assert_int_equal(store_append_event(s, &ev, NULL), RMQ_EINVAL); /* must be an array */
    ev.before_json = NULL;
    ev.group = NULL;
    assert_int_equal(store_append_event(s, &ev, NULL), RMQ_EINVAL); /* NOT NULL */
    assert_int_equal(store_append_event(s, NULL, NULL), RMQ_EINVAL);
    assert_true(store_in_batch(s));
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT queue_offset FROM offsets"), 7);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM topics"), 0); /* savepoint undid the topic row */
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM topic_brokers"), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM events"), 0);
    store_close(s);
}

/* A commit that cannot write (RLIMIT_FSIZE stops the WAL from growing)
 * returns RMQ_EIO, leaves no trace of the batch, and the store keeps
 * working once writes are possible again. */
static void test_failed_commit_rolls_back(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_int_equal(store_put_offset(s, "g", "T", 0, 1, 1), 0);
    assert_int_equal(store_commit(s), 0);

    char *big = test_big_json(512 * 1024);
    assert_non_null(big);
    struct store_event ev = {.ts_ms = 2, .group = "g", .kind = "join", .before_json = big};
    assert_int_equal(store_append_event(s, &ev, NULL), 0);
    assert_int_equal(store_put_offset(s, "g", "T", 0, 2, 2), 0);

    struct test_fsize_guard guard; /* EFBIG, not a signal */
    assert_int_equal(test_fsize_limit(fx->path, &guard), 0);
    int rc = store_commit(s);
    assert_int_equal(test_fsize_restore(&guard), 0);
    free(big);

    assert_int_equal(rc, RMQ_EIO);
    assert_non_null(strstr(store_errmsg(s), "commit"));
    assert_false(store_in_batch(s));
    assert_int_equal(store_commit(s), 0); /* the failure was reported once */
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM events"), 0);
    assert_int_equal(q_int(fx->path, "SELECT queue_offset FROM offsets"), 1);

    assert_int_equal(store_put_offset(s, "g", "T", 0, 3, 3), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT queue_offset FROM offsets"), 3);
    store_close(s);
}

/* Soft writes join the batch like any other but leave store_write_count
 * alone, which is how the loop tells a refreshed time from a fact. */
static void test_soft_writes_are_not_counted(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    uint64_t w0 = store_write_count(s);
    assert_int_equal(store_put_client(s, "c1", "JAVA", 409, 1), 0);
    uint64_t w1 = store_write_count(s);
    assert_true(w1 > w0);
    store_soft_writes(s, true);
    assert_int_equal(store_put_client(s, "c1", "JAVA", 409, 2), 0);
    store_soft_writes(s, false);
    assert_int_equal(store_write_count(s), w1);
    assert_true(store_in_batch(s));
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT last_heartbeat_ms FROM clients WHERE client_id = 'c1'"), 2);
    assert_int_equal(store_put_client(s, "c1", "JAVA", 409, 3), 0);
    assert_true(store_write_count(s) > w1);
    store_close(s);
}

/* Forks a child that commits an offset (77) and an event (lazily with
 * lazy, after store_lazy_sync), leaves a second batch open, and is
 * SIGKILLed without store_close. */
static void killed_child_writes(const char *path, bool lazy)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct store *s = NULL;
        struct store_event ev = {.ts_ms = 1, .group = "g", .kind = "join", .after_json = "[\"c\"]"};
        if (store_open(path, &s, NULL, 0) != 0 || (lazy && store_lazy_sync(s, 3600000) != 0) ||
            store_put_offset(s, "g", "T", 0, 77, 1) != 0 || store_append_event(s, &ev, NULL) != 0 ||
            (lazy ? store_commit_lazy(s) : store_commit(s)) != 0 ||
            store_put_offset(s, "g", "T", 1, 88, 2) != 0)
            _exit(1);
        kill(getpid(), SIGKILL);
        _exit(2);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
}

/* The parent must find exactly the committed data. */
static void test_killed_process_keeps_commits(void **state)
{
    struct fx *fx = *state;
    killed_child_writes(fx->path, false);
    struct store *s = open_ok(fx->path);
    struct seen_offsets o = {0};
    assert_int_equal(store_load_offsets(s, offset_cb, &o), 0);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.key[0], "g/T/0");
    assert_int_equal(o.off[0], 77);
    assert_int_equal(store_run_id(s), 2);
    store_close(s);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM events"), 1);
}

/* WAL frames not yet copied into the database file, read from the
 * wal-index (-shm) without touching the WAL: mxFrame of the index header
 * (offset 16) minus nBackfill of the checkpoint info (offset 96), both
 * native-endian u32 (SQLite's documented WAL-index layout). A checkpoint
 * from here would copy the frames itself and prove nothing. */
static int wal_frames_behind(const char *path)
{
    char shm[4300];
    snprintf(shm, sizeof shm, "%s-shm", path);
    int fd = open(shm, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    unsigned char hdr[100];
    assert_int_equal(pread(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
    assert_int_equal(close(fd), 0);
    uint32_t mx_frame, backfill;
    memcpy(&mx_frame, hdr + 16, sizeof mx_frame);
    memcpy(&backfill, hdr + 96, sizeof backfill);
    return (int)mx_frame - (int)backfill;
}

/* A lazy commit is visible to other connections at once and survives the
 * process being killed; the syncer thread checkpoints it within its
 * interval, which is what makes it durable against power loss. */
static void test_lazy_commit_visible_and_checkpointed(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    struct store_syncer_stats st;
    assert_false(store_sync_stats(s, &st));
    assert_int_equal(store_lazy_sync(s, 20), 0);
    assert_int_equal(store_lazy_sync(s, 20), RMQ_ESTATE); /* already on */
    assert_int_equal(store_put_offset(s, "g", "T", 0, 5, 1), 0);
    if (store_commit_lazy(s) != 0)
        fail_msg("lazy commit: %s", store_errmsg(s));
    assert_false(store_in_batch(s));
    assert_int_equal(q_int(fx->path, "SELECT queue_offset FROM offsets WHERE queue_id = 0"), 5);
    /* A durable commit after lazy ones works and switches back to FULL. */
    assert_int_equal(store_put_offset(s, "g", "T", 1, 6, 2), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(store_put_offset(s, "g", "T", 2, 7, 3), 0);
    assert_int_equal(store_commit_lazy(s), 0);
    /* The syncer runs every 20 ms: within 2 s it has checkpointed. */
    uint64_t checkpoints = 0;
    for (int i = 0; i < 200 && checkpoints < 2; i++) {
        usleep(10000);
        assert_true(store_sync_stats(s, &st));
        checkpoints = st.checkpoints;
    }
    assert_true(checkpoints >= 2);
    assert_int_equal(st.failures, 0);
    assert_int_equal(wal_frames_behind(fx->path), 0);
    store_close(s);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM offsets"), 3);
}

/* Without the syncer the writer's own automatic checkpoint is what keeps
 * the WAL short; with it, the writer never checkpoints on its own (that
 * would fsync on the loop) until the WAL is very large. */
static void test_lazy_sync_takes_checkpoints_off_the_writer(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_int_equal(store_lazy_sync(s, 3600000), 0); /* the interval never fires in this test */
    for (int i = 0; i < 50; i++) {
        assert_int_equal(store_put_offset(s, "g", "T", i, i, i), 0);
        assert_int_equal(store_commit_lazy(s), 0);
    }
    assert_true(wal_frames_behind(fx->path) >= 50); /* one frame or more per commit, none copied */
    struct store_syncer_stats st;
    assert_true(store_sync_stats(s, &st));
    assert_int_equal(st.checkpoints, 0);
    store_close(s); /* the syncer's last checkpoint */
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM offsets"), 50);
}

/* Lazily committed batches survive SIGKILL of the process (they are in the
 * WAL file); only power loss could take the last interval. */
static void test_killed_process_keeps_lazy_commits(void **state)
{
    struct fx *fx = *state;
    killed_child_writes(fx->path, true);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM offsets"), 1);
    assert_int_equal(q_int(fx->path, "SELECT queue_offset FROM offsets"), 77);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM events"), 1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

TEST_MAIN(T(test_uncommitted_batch_invisible), T(test_batch_is_one_transaction),
          T(test_failed_write_keeps_batch), T(test_failed_commit_rolls_back),
          T(test_killed_process_keeps_commits), T(test_lazy_commit_visible_and_checkpointed),
          T(test_lazy_sync_takes_checkpoints_off_the_writer), T(test_killed_process_keeps_lazy_commits),
          T(test_soft_writes_are_not_counted))
