/* store_topics.c — the writer's topic and offset rows: topics with their
 * per-broker queue counts, committed consumer offsets, and the scans that
 * load both back into memory at start (store_topics.h).
 *
 * Owned by the loop thread, on the writer's connection (store.c). A topic
 * with its brokers is one write (a savepoint): readers never see a topic
 * whose broker list is half replaced.
 */
#include "store_topics.h"

#include "err.h"
#include "mem.h"
#include "store_exec.h"

#include <assert.h>
#include <sqlite3.h>
#include <string.h>

/* Accumulates the broker rows of one topic while load_topics scans. */
struct topic_acc {
    char *topic;
    struct store_topic_broker *brokers;
    size_t n, cap;
};

static void topic_acc_clear(struct topic_acc *a)
{
    for (size_t i = 0; i < a->n; i++)
        rmq_free((char *)a->brokers[i].broker_name);
    rmq_free(a->topic);
    a->topic = NULL;
    a->n = 0;
}

static int topic_acc_add(struct topic_acc *a, sqlite3_stmt *st)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        struct store_topic_broker *b = rmq_realloc(a->brokers, cap * sizeof *b);
        if (!b)
            return RMQ_ENOMEM;
        a->brokers = b;
        a->cap = cap;
    }
    const char *name = (const char *)sqlite3_column_text(st, 1);
    char *copy = name ? rmq_strdup(name) : NULL;
    if (!copy)
        return RMQ_ENOMEM; /* the column is NOT NULL, so NULL here is SQLite's OOM */
    a->brokers[a->n++] = (struct store_topic_broker){
        .broker_name = copy,
        .read_queue_nums = sqlite3_column_int(st, 2),
        .write_queue_nums = sqlite3_column_int(st, 3),
        .perm = sqlite3_column_int(st, 4),
    };
    return 0;
}

/* One row of the topics LEFT JOIN brokers scan: rows of one topic are
 * adjacent (ORDER BY), so a change of name hands the finished topic to cb.
 * Returns 0, cb's non-zero result, or an RMQ_E* code. */
static int topic_row(struct topic_acc *a, sqlite3_stmt *st, store_topic_cb cb, void *ctx)
{
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (!name)
        return RMQ_ENOMEM;
    if (a->topic && strcmp(a->topic, name) != 0) {
        int r = cb(ctx, a->topic, a->brokers, a->n);
        topic_acc_clear(a);
        if (r)
            return r;
    }
    if (!a->topic && !(a->topic = rmq_strdup(name)))
        return RMQ_ENOMEM;
    return sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : topic_acc_add(a, st);
}

/* Calls cb once per topic with its brokers (borrowed for the call; n may be
 * 0). cb must not write to the store: the scan is still running. On a
 * SQLite error mid-scan, cb has already seen the topics before it. */
int store_load_topics(struct store *s, store_topic_cb cb, void *ctx)
{
    if (!cb)
        return store_refuse(s, RMQ_EINVAL, "load topics");
    sqlite3_stmt *st = s->st[ST_LOAD_TOPICS];
    struct topic_acc a = {0};
    int rc, r = 0;
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        r = topic_row(&a, st, cb, ctx);
    if (r == RMQ_ENOMEM)
        r = store_refuse(s, RMQ_ENOMEM, store_stmt_name(ST_LOAD_TOPICS));
    else if (r == 0 && rc != SQLITE_DONE)
        r = store_fail(s, rc, store_stmt_name(ST_LOAD_TOPICS));
    (void)sqlite3_reset(st); /* returns the step error again, handled above */
    if (r == 0 && a.topic)
        r = cb(ctx, a.topic, a.brokers, a.n);
    topic_acc_clear(&a);
    rmq_free(a.brokers);
    return r;
}

/* Calls cb once per stored offset (strings borrowed for the call). Same
 * rules as store_load_topics. */
int store_load_offsets(struct store *s, store_offset_cb cb, void *ctx)
{
    if (!cb)
        return store_refuse(s, RMQ_EINVAL, "load offsets");
    sqlite3_stmt *st = s->st[ST_LOAD_OFFSETS];
    int rc, r = 0;
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *group = (const char *)sqlite3_column_text(st, 0);
        const char *topic = (const char *)sqlite3_column_text(st, 1);
        if (!group || !topic)
            r = store_refuse(s, RMQ_ENOMEM, store_stmt_name(ST_LOAD_OFFSETS));
        else
            r = cb(ctx, group, topic, sqlite3_column_int(st, 2), sqlite3_column_int64(st, 3));
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = store_fail(s, rc, store_stmt_name(ST_LOAD_OFFSETS));
    (void)sqlite3_reset(st); /* returns the step error again, handled above */
    return r;
}

int store_put_topic(struct store *s, const char *topic, const struct store_topic_broker *brokers, size_t n,
                    int64_t now_ms)
{
    if (n && !brokers)
        return store_refuse(s, RMQ_EINVAL, "put topic");
    int err = store_write_begin(s);
    if (err)
        return err;
    err = store_exec_st(s, ST_TOPIC_UPSERT, NULL, "sI", topic, now_ms);
    if (!err)
        err = store_exec_st(s, ST_TOPIC_BROKERS_CLEAR, NULL, "s", topic);
    for (size_t i = 0; i < n && !err; i++)
        err = store_exec_st(s, ST_TOPIC_BROKER_PUT, NULL, "ssddd", topic, brokers[i].broker_name,
                            brokers[i].read_queue_nums, brokers[i].write_queue_nums, brokers[i].perm);
    err = store_write_end(s, err);
    assert(store_batch_sanity(s));
    return err;
}

int store_delete_topic(struct store *s, const char *topic)
{
    int changes = 0;
    int err = store_write_one(s, &changes, ST_TOPIC_DELETE, "s", topic);
    return err ? err : changes ? 0 : store_refuse(s, RMQ_ENOTFOUND, "delete topic");
}

int store_put_offset(struct store *s, const char *group, const char *topic, int queue_id, int64_t offset,
                     int64_t now_ms)
{
    return store_write_one(s, NULL, ST_OFFSET_PUT, "ssdII", group, topic, queue_id, offset, now_ms);
}
