/* test_store.c — the SQLite writer (server/store/store.c) on real files.
 *
 * Every test gets its own temporary directory (test_tmpdir) holding a real
 * database file, and checks what store.c wrote with a separate raw SQLite
 * connection, the way another process would see it. Failure paths are forced
 * on purpose: constraint violations, a commit that cannot write (RLIMIT_FSIZE),
 * a process killed without store_close, unwritable paths, newer schemas, and
 * a fail-the-Nth-allocation loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "store.h"
#include "store_sync.h"
#include "test_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern const unsigned schema_migration_count;

struct fx {
    char dir[4096];
    char path[4200];
};

static int setup(void **state)
{
    static struct fx fx;
    const char *dir = test_tmpdir();
    if (!dir)
        return -1;
    snprintf(fx.dir, sizeof fx.dir, "%s", dir);
    snprintf(fx.path, sizeof fx.path, "%s/store.db", dir);
    *state = &fx;
    return 0;
}

/* Removes everything the test left in its directory, then the directory. */
static int teardown(void **state)
{
    struct fx *fx = *state;
    DIR *d = opendir(fx->dir);
    if (!d)
        return -1;
    struct dirent *e;
    char p[8192];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", fx->dir, e->d_name);
        if (unlink(p) != 0)
            rmdir(p);
    }
    closedir(d);
    return rmdir(fx->dir);
}

static struct store *open_ok(const char *path)
{
    struct store *s = NULL;
    char err[256] = "";
    int rc = store_open(path, &s, err, sizeof err);
    if (rc != 0)
        print_error("store_open: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(s);
    return s;
}

/* A separate read-only connection, as another process would open one. */
static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_busy_timeout(db, 2000), SQLITE_OK);
    return db;
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    assert_int_equal(sqlite3_finalize(st), SQLITE_OK);
    return v;
}

/* Copies the first column of the first row into buf ("" for NULL). */
static const char *raw_text(sqlite3 *db, const char *sql, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
    assert_int_equal(sqlite3_finalize(st), SQLITE_OK);
    return buf;
}

static int64_t q_int(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    int64_t v = raw_int(db, sql);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    return v;
}

static void test_open_applies_migrations(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_true(schema_migration_count >= 1);
    assert_int_equal(q_int(fx->path, "PRAGMA user_version"), schema_migration_count);
    assert_int_equal(q_int(fx->path,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                           "('runs','topics','topic_brokers','clients','channels','consumer_groups',"
                           "'members','subscriptions','offsets','events')"),
                     10);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                                     "'events_group_id'"),
                     1);
    char mode[16];
    sqlite3 *db = raw_open(fx->path);
    assert_string_equal(raw_text(db, "PRAGMA journal_mode", mode, sizeof mode), "wal");
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    assert_int_equal(store_run_id(s), 1);
    assert_false(store_in_batch(s));
    assert_int_equal(store_commit(s), 0); /* no batch: a no-op */
    store_close(s);
    store_close(NULL);
}

static void test_reopen_is_idempotent(void **state)
{
    struct fx *fx = *state;
    for (int64_t run = 1; run <= 3; run++) {
        struct store *s = open_ok(fx->path);
        assert_int_equal(store_run_id(s), run);
        store_close(s);
        assert_int_equal(q_int(fx->path, "PRAGMA user_version"), schema_migration_count);
    }
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM runs"), 3);
    assert_int_equal(
        q_int(fx->path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'"), 1);
}

static void test_file_mode_is_0600(void **state)
{
    struct fx *fx = *state;
    mode_t old = umask(0); /* prove the mode does not depend on the caller's umask */
    struct store *s = open_ok(fx->path);
    umask(old);
    assert_int_equal(store_put_offset(s, "g", "t", 0, 1, 1), 0);
    assert_int_equal(store_commit(s), 0);
    struct stat st;
    char wal[4300];
    snprintf(wal, sizeof wal, "%s-wal", fx->path);
    assert_int_equal(stat(fx->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(wal, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    store_close(s);
}

struct seen_topics {
    int n;
    char name[4][32];
    size_t nb[4];
    char broker[4][4][32];
    int rq[4][4], wq[4][4], perm[4][4];
    int stop_at; /* return 7 from the callback after this many calls (0 = never) */
};

static int topic_cb(void *ctx, const char *topic, const struct store_topic_broker *b, size_t n)
{
    struct seen_topics *t = ctx;
    if (t->n >= 4 || n > 4)
        return RMQ_E2BIG;
    snprintf(t->name[t->n], sizeof t->name[0], "%s", topic);
    t->nb[t->n] = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(t->broker[t->n][i], sizeof t->broker[0][0], "%s", b[i].broker_name);
        t->rq[t->n][i] = b[i].read_queue_nums;
        t->wq[t->n][i] = b[i].write_queue_nums;
        t->perm[t->n][i] = b[i].perm;
    }
    t->n++;
    return t->stop_at && t->n >= t->stop_at ? 7 : 0;
}

static void put_three_topics(struct store *s)
{
    const struct store_topic_broker two[] = {{"broker-b", 8, 8, 6}, {"broker-a", 4, 2, 4}};
    const struct store_topic_broker one[] = {{"broker-a", 16, 16, 6}};
    assert_int_equal(store_put_topic(s, "TopicA", two, 2, 10), 0);
    assert_int_equal(store_put_topic(s, "TopicB", two, 2, 10), 0);
    assert_int_equal(store_put_topic(s, "TopicB", one, 1, 11), 0); /* replaces the broker set */
    assert_int_equal(store_put_topic(s, "TopicC", NULL, 0, 12), 0);
    assert_int_equal(store_put_topic(s, "TopicD", one, 1, 12), 0);
    assert_int_equal(store_delete_topic(s, "TopicD"), 0);
    assert_int_equal(store_commit(s), 0);
}

static void test_topics_survive_reopen(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_three_topics(s);
    store_close(s);
    s = open_ok(fx->path);
    struct seen_topics t = {0};
    assert_int_equal(store_load_topics(s, topic_cb, &t), 0);
    assert_int_equal(t.n, 3);
    assert_string_equal(t.name[0], "TopicA");
    assert_int_equal(t.nb[0], 2);
    assert_string_equal(t.broker[0][0], "broker-a"); /* ordered by broker name */
    assert_int_equal(t.rq[0][0], 4);
    assert_int_equal(t.wq[0][0], 2);
    assert_int_equal(t.perm[0][0], 4);
    assert_string_equal(t.broker[0][1], "broker-b");
    assert_string_equal(t.name[1], "TopicB");
    assert_int_equal(t.nb[1], 1);
    assert_int_equal(t.rq[1][0], 16);
    assert_string_equal(t.name[2], "TopicC");
    assert_int_equal(t.nb[2], 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM topic_brokers WHERE topic = 'TopicD'"), 0);
    store_close(s);
}

static void test_load_topics_callback_stops(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_three_topics(s);
    struct seen_topics t = {.stop_at = 1};
    assert_int_equal(store_load_topics(s, topic_cb, &t), 7);
    assert_int_equal(t.n, 1);
    t = (struct seen_topics){.stop_at = 3}; /* stop on the last topic, delivered after the scan */
    assert_int_equal(store_load_topics(s, topic_cb, &t), 7);
    assert_int_equal(t.n, 3);
    assert_int_equal(store_load_topics(s, NULL, NULL), RMQ_EINVAL);
    store_close(s);
}

struct seen_offsets {
    int n;
    char key[8][64];
    int64_t off[8];
};

static int offset_cb(void *ctx, const char *group, const char *topic, int queue_id, int64_t offset)
{
    struct seen_offsets *o = ctx;
    if (o->n >= 8)
        return RMQ_E2BIG;
    snprintf(o->key[o->n], sizeof o->key[0], "%s/%s/%d", group, topic, queue_id);
    o->off[o->n++] = offset;
    return 0;
}

static void test_offsets_survive_reopen(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_int_equal(store_put_offset(s, "g1", "T", 1, 100, 1), 0);
    assert_int_equal(store_put_offset(s, "g1", "T", 0, 5, 1), 0);
    assert_int_equal(store_put_offset(s, "g1", "T", 1, 150, 2), 0); /* upsert: last value wins */
    assert_int_equal(store_put_offset(s, "g0", "T", 3, INT64_C(1) << 40, 2), 0);
    assert_int_equal(store_put_offset(s, "g0", "T", -1, 1, 2), RMQ_EINVAL); /* CHECK queue_id >= 0 */
    assert_int_equal(store_commit(s), 0);
    store_close(s);
    s = open_ok(fx->path);
    struct seen_offsets o = {0};
    assert_int_equal(store_load_offsets(s, offset_cb, &o), 0);
    assert_int_equal(o.n, 3);
    assert_string_equal(o.key[0], "g0/T/3");
    assert_true(o.off[0] == INT64_C(1) << 40);
    assert_string_equal(o.key[1], "g1/T/0");
    assert_int_equal(o.off[1], 5);
    assert_string_equal(o.key[2], "g1/T/1");
    assert_int_equal(o.off[2], 150);
    assert_int_equal(store_load_offsets(s, NULL, NULL), RMQ_EINVAL);
    store_close(s);
}

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

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
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

    size_t big_len = 512 * 1024;
    char *big = rmq_malloc(big_len + 5);
    assert_non_null(big);
    memcpy(big, "[\"", 2);
    memset(big + 2, 'x', big_len);
    memcpy(big + 2 + big_len, "\"]", 3);
    struct store_event ev = {.ts_ms = 2, .group = "g", .kind = "join", .before_json = big};
    assert_int_equal(store_append_event(s, &ev, NULL), 0);
    assert_int_equal(store_put_offset(s, "g", "T", 0, 2, 2), 0);

    char wal[4300];
    snprintf(wal, sizeof wal, "%s-wal", fx->path);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    off_t cur = file_size(wal) > file_size(fx->path) ? file_size(wal) : file_size(fx->path);
    lim.rlim_cur = (rlim_t)cur + 4096;
    void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN); /* get EFBIG, not a signal */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = store_commit(s);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_sig);
    rmq_free(big);

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

static void test_future_version_refused(void **state)
{
    struct fx *fx = *state;
    store_close(open_ok(fx->path));
    sqlite3 *db = NULL;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %u", schema_migration_count + 5);
    assert_int_equal(sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);

    struct store *s = (struct store *)1;
    char err[256] = "";
    assert_int_equal(store_open(fx->path, &s, err, sizeof err), RMQ_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "newer"));
    assert_int_equal(q_int(fx->path, "PRAGMA user_version"), schema_migration_count + 5);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM runs"), 1); /* nothing written */
}

static void expect_open_fails(const char *path, int code)
{
    struct store *s = (struct store *)1;
    char err[256] = "";
    assert_int_equal(store_open(path, &s, err, sizeof err), code);
    assert_null(s);
    assert_true(strlen(err) > 0);
}

/* As root, file modes do not stop open(): run store_open in a child that
 * has dropped to nobody (the test directory is opened up to let it reach
 * the file). The child's exit status says whether it got code. */
static void expect_open_fails_unprivileged(const char *dir, const char *path, int code)
{
    assert_int_equal(chmod(dir, 0755), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the group may be unmapped in a user namespace; the uid is what counts */
        (void)setgroups(0, NULL);
        (void)setgid(65534);
        if (setuid(65534) != 0)
            _exit(77);
        struct store *s = (struct store *)1;
        char err[256] = "";
        int rc = store_open(path, &s, err, sizeof err);
        _exit(rc == code && s == NULL && err[0] ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        print_message("# cannot drop privileges; %s not checked as non-root\n", path);
        return;
    }
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_bad_paths_fail_cleanly(void **state)
{
    struct fx *fx = *state;
    char p[4300];
    snprintf(p, sizeof p, "%s/no/such/dir/store.db", fx->dir);
    expect_open_fails(p, -ENOENT);
    expect_open_fails(fx->dir, -EISDIR);

    snprintf(p, sizeof p, "%s/garbage.db", fx->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    char junk[8192];
    memset(junk, 'J', sizeof junk);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    assert_int_equal(close(fd), 0);
    expect_open_fails(p, RMQ_EIO); /* "file is not a database" */

    snprintf(p, sizeof p, "%s/readonly.db", fx->dir);
    store_close(open_ok(p));
    assert_int_equal(chmod(p, 0400), 0);
    if (geteuid() != 0)
        expect_open_fails(p, -EACCES);
    else
        expect_open_fails_unprivileged(fx->dir, p, -EACCES); /* root ignores file modes */

    /* A writable file in a directory where the -wal file cannot be created. */
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/rodir", fx->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(p, sizeof p, "%s/rodir/store.db", fx->dir);
    store_close(open_ok(p));
    assert_int_equal(chmod(p, 0666), 0);
    assert_int_equal(chmod(sub, 0555), 0);
    if (geteuid() != 0)
        expect_open_fails(p, RMQ_EIO);
    else
        expect_open_fails_unprivileged(fx->dir, p, RMQ_EIO);
    assert_int_equal(chmod(sub, 0700), 0);
    char f[4400];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", p, suffix[i]);
        unlink(f);
    }
    struct store *s = NULL;
    assert_int_equal(store_open(NULL, &s, NULL, 0), RMQ_EINVAL);
    assert_int_equal(store_open(fx->path, NULL, NULL, 0), RMQ_EINVAL);
}

/* Fails each of store's own allocations in turn: every attempt either
 * succeeds or returns RMQ_ENOMEM, and ASan sees no leak. */
static void test_open_and_load_oom(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_three_topics(s);
    store_close(s);
    int rc = RMQ_ENOMEM;
    for (long n = 0; n < 100 && rc != 0; n++) {
        rmq_mem_fail_after(n);
        rc = store_open(fx->path, &s, NULL, 0);
        rmq_mem_fail_after(-1);
        assert_true(rc == 0 || rc == RMQ_ENOMEM);
    }
    assert_int_equal(rc, 0);
    rc = RMQ_ENOMEM;
    for (long n = 0; n < 100 && rc != 0; n++) {
        struct seen_topics t = {0};
        rmq_mem_fail_after(n);
        rc = store_load_topics(s, topic_cb, &t);
        rmq_mem_fail_after(-1);
        assert_true(rc == 0 || rc == RMQ_ENOMEM);
        if (rc == 0)
            assert_int_equal(t.n, 3);
    }
    assert_int_equal(rc, 0);
    store_close(s);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_open_applies_migrations),
        T(test_reopen_is_idempotent),
        T(test_file_mode_is_0600),
        T(test_topics_survive_reopen),
        T(test_load_topics_callback_stops),
        T(test_offsets_survive_reopen),
        T(test_uncommitted_batch_invisible),
        T(test_batch_is_one_transaction),
        T(test_failed_write_keeps_batch),
        T(test_failed_commit_rolls_back),
        T(test_recover),
        T(test_not_found_and_duplicates),
        T(test_subscriptions_replace_set),
        T(test_event_ids_increase),
        T(test_killed_process_keeps_commits),
        T(test_lazy_commit_visible_and_checkpointed),
        T(test_lazy_sync_takes_checkpoints_off_the_writer),
        T(test_killed_process_keeps_lazy_commits),
        T(test_soft_writes_are_not_counted),
        T(test_future_version_refused),
        T(test_bad_paths_fail_cleanly),
        T(test_open_and_load_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
