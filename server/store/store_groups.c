/* store_groups.c — the writer's subscription-group configs
 * (schema/0004_subscription_groups.sql) and the offset deletions the admin
 * codes need (a topic's offsets, a group's offsets) (store_groups.h).
 *
 * Admin writes are rare, so each statement is prepared for the call rather
 * than cached in store_exec.c's table. Every write joins the open batch (a
 * savepoint), as the other writes do. Owned by the loop thread.
 */
#include "store_groups.h"

#include "err.h"
#include "store_exec.h"

#include <assert.h>
#include <sqlite3.h>

/* Prepares sql, binds the strings args (NULL binds SQL NULL) and int64
 * last_i64 as the parameter after them when has_i64, runs it to completion.
 * Returns 0 or an RMQ_E* code with errbuf set. */
static int run(struct store *s, const char *what, const char *sql, const char *const *args, int nargs,
               bool has_i64, int64_t last_i64)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    for (int i = 0; rc == SQLITE_OK && i < nargs; i++)
        rc = args[i] ? sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_TRANSIENT)
                     : sqlite3_bind_null(st, i + 1);
    if (rc == SQLITE_OK && has_i64)
        rc = sqlite3_bind_int64(st, nargs + 1, last_i64);
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ;
        if (rc == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    int err = rc == SQLITE_OK ? 0 : store_fail(s, rc, what);
    (void)sqlite3_finalize(st); /* returns the step error again, handled above */
    return err;
}

static int write_sql(struct store *s, const char *what, const char *sql, const char *const *args, int nargs,
                     bool has_i64, int64_t last_i64)
{
    int err = store_write_begin(s);
    if (err)
        return err;
    err = store_write_end(s, run(s, what, sql, args, nargs, has_i64, last_i64));
    assert(store_batch_sanity(s));
    return err;
}

int store_put_group_config(struct store *s, const char *group, const char *config_json, int64_t now_ms)
{
    if (!group || !config_json)
        return store_refuse(s, RMQ_EINVAL, "put group config");
    const char *args[] = {group, config_json};
    return write_sql(
        s, "put group config",
        "INSERT INTO subscription_groups (group_name, config_json, updated_ms) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (group_name) DO UPDATE SET config_json = excluded.config_json, "
        "updated_ms = excluded.updated_ms",
        args, 2, true, now_ms);
}

int store_delete_group_config(struct store *s, const char *group)
{
    const char *args[] = {group};
    return write_sql(s, "delete group config", "DELETE FROM subscription_groups WHERE group_name = ?1", args,
                     1, false, 0);
}

int store_delete_offsets(struct store *s, const char *group, const char *topic)
{
    const char *args[] = {group, topic};
    return write_sql(
        s, "delete offsets",
        "DELETE FROM offsets WHERE (?1 IS NULL OR group_name = ?1) AND (?2 IS NULL OR topic = ?2)", args, 2,
        false, 0);
}

int store_load_group_configs(struct store *s, store_group_config_cb cb, void *ctx)
{
    if (!cb)
        return store_refuse(s, RMQ_EINVAL, "load group configs");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        s->db, "SELECT group_name, config_json FROM subscription_groups ORDER BY group_name", -1, &st, NULL);
    int r = 0;
    while (rc == SQLITE_OK && r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *group = (const char *)sqlite3_column_text(st, 0);
        const char *json = (const char *)sqlite3_column_text(st, 1);
        r = group && json ? cb(ctx, group, json) : store_refuse(s, RMQ_ENOMEM, "load group configs");
        rc = SQLITE_OK;
    }
    if (r == 0 && rc != SQLITE_OK && rc != SQLITE_DONE)
        r = store_fail(s, rc, "load group configs");
    (void)sqlite3_finalize(st);
    return r;
}

int store_load_offset_times(struct store *s, store_offset_time_cb cb, void *ctx)
{
    if (!cb)
        return store_refuse(s, RMQ_EINVAL, "load offset times");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT group_name, topic, queue_id, updated_ms FROM offsets", -1, &st,
                                NULL);
    int r = 0;
    while (rc == SQLITE_OK && r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *group = (const char *)sqlite3_column_text(st, 0);
        const char *topic = (const char *)sqlite3_column_text(st, 1);
        r = group && topic ? cb(ctx, group, topic, sqlite3_column_int(st, 2), sqlite3_column_int64(st, 3))
                           : store_refuse(s, RMQ_ENOMEM, "load offset times");
        rc = SQLITE_OK;
    }
    if (r == 0 && rc != SQLITE_OK && rc != SQLITE_DONE)
        r = store_fail(s, rc, "load offset times");
    (void)sqlite3_finalize(st);
    return r;
}
