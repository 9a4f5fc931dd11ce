/* store_fixture.c — what the store writer's tests share (test_store*.c):
 * a fresh directory per test holding a real database file, and a separate
 * raw SQLite connection to check what the writer stored, the way another
 * process would see it.
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
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int fx_setup(void **state)
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
int fx_teardown(void **state)
{
    struct fx *fx = *state;
    return test_rmdir_all(fx->dir);
}

struct store *open_ok(const char *path)
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
sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_busy_timeout(db, 2000), SQLITE_OK);
    return db;
}

int64_t raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    assert_int_equal(sqlite3_finalize(st), SQLITE_OK);
    return v;
}

/* Copies the first column of the first row into buf ("" for NULL). */
const char *raw_text(sqlite3 *db, const char *sql, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
    assert_int_equal(sqlite3_finalize(st), SQLITE_OK);
    return buf;
}

int64_t q_int(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    int64_t v = raw_int(db, sql);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    return v;
}

void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

int topic_cb(void *ctx, const char *topic, const struct store_topic_broker *b, size_t n)
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

void put_three_topics(struct store *s)
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

int offset_cb(void *ctx, const char *group, const char *topic, int queue_id, int64_t offset)
{
    struct seen_offsets *o = ctx;
    if (o->n >= 8)
        return RMQ_E2BIG;
    snprintf(o->key[o->n], sizeof o->key[0], "%s/%s/%d", group, topic, queue_id);
    o->off[o->n++] = offset;
    return 0;
}
