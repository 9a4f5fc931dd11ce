/* store.c — the SQLite writer's core: open + migrate, batches and commits.
 *
 * Owned by the loop thread: one connection opened SQLITE_OPEN_NOMUTEX, never
 * touched by another thread (store_read.c has its own connection).
 *
 * Design:
 * - Every statement is prepared once at open (the stmt table below) with
 *   SQLITE_PREPARE_PERSISTENT and reused; store_exec_st() binds, steps, and always
 *   resets, so no statement holds a read lock or a borrowed string after the
 *   call returns.
 * - Group commit: the first write after a commit runs BEGIN IMMEDIATE (so a
 *   foreign writer is detected at that write, not at commit time), and
 *   store_commit() COMMITs. The loop commits once per iteration, so the fsync
 *   cost is paid per iteration, not per write.
 * - A write made of several statements (a topic and its brokers, a
 *   subscription set, a channel close that ends its members, recovery) runs
 *   inside a SAVEPOINT, so a failing call leaves the batch as it was before
 *   the call instead of half-applied.
 * - If SQLite itself rolls the whole batch back (I/O error, disk full), the
 *   store notes it (batch_lost) and the next store_commit returns RMQ_EIO,
 *   so the caller never acknowledges a write that vanished.
 * - Foreign keys are on: a member needs its channel and group rows first.
 *   Natural order: store_open_channel at accept, then per heartbeat
 *   store_put_client, store_put_group, store_member_join, subscriptions.
 *
 * This file is the writer core (statements, batch and savepoints, commit,
 * lazy sync) and the schema migrations at open; the writes themselves are
 * grouped by what they store: store_members.c (clients, channels, groups,
 * members, subscriptions, events, restart recovery) and store_topics.c
 * (topics, offsets and their loading at start).
 *
 * Errors: 0, or RMQ_EIO for SQLite failures, RMQ_EINVAL for a violated
 * constraint (bad argument, missing parent row), RMQ_EEXIST for a duplicate
 * key, RMQ_ENOTFOUND when an update matched no row, RMQ_ENOMEM, or -errno
 * from creating the file. store_errmsg() says what failed.
 */
#include "store.h"

#include "err.h"
#include "mem.h"
#include "store_internal.h"
#include "store_sync.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Generated from schema/NNNN_*.sql by schema/embed_sql.c (see meson.build);
 * schema_migrations[i] takes the database from user_version i to i + 1. */
extern const char *const schema_migrations[];
extern const unsigned schema_migration_count;

/* While the store opens (migrations), the writer can wait this long for a
 * lock held by another connection; afterwards it waits far less
 * (store_bounded_busy in store_guard.c). */
#define STORE_BUSY_TIMEOUT_MS 5000

#define STORE_PRUNE_SET                                                                                      \
    "SELECT id FROM channels WHERE closed_ms IS NOT NULL AND (closed_ms < ?2 OR id <= coalesce((SELECT id "  \
    "FROM channels WHERE closed_ms IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET ?1), 0)) ORDER BY id LIMIT "  \
    "?3"

/* The columns store_messages.c reads a message from, in its order. */
#define STORE_MSG_COLS                                                                                       \
    "physical_id, topic, queue_id, queue_offset, size, born_ms, store_ms, flag, sys_flag, tags_code, "       \
    "reconsume_times, body_crc, deliver_ms, uniq_key, born_host, store_host, properties, body"

static const struct {
    const char *name; /* for error messages */
    const char *sql;
} stmt_def[ST_COUNT] = {
    [ST_BEGIN] = {"begin", "BEGIN IMMEDIATE"},
    [ST_COMMIT] = {"commit", "COMMIT"},
    [ST_ROLLBACK] = {"rollback", "ROLLBACK"},
    [ST_SAVEPOINT] = {"savepoint", "SAVEPOINT store_write"},
    [ST_RELEASE] = {"release", "RELEASE store_write"},
    [ST_ROLLBACK_TO] = {"rollback to", "ROLLBACK TO store_write"},
    [ST_RUN_INSERT] = {"insert run", "INSERT INTO runs (started_ms, schema_version) VALUES (?1, ?2)"},
    [ST_TOPIC_UPSERT] = {"put topic", "INSERT INTO topics (name, updated_ms) VALUES (?1, ?2) "
                                      "ON CONFLICT (name) DO UPDATE SET updated_ms = excluded.updated_ms"},
    [ST_TOPIC_BROKERS_CLEAR] = {"clear topic brokers", "DELETE FROM topic_brokers WHERE topic = ?1"},
    [ST_TOPIC_BROKER_PUT] =
        {"put topic broker",
         "INSERT INTO topic_brokers (topic, broker_name, read_queue_nums, write_queue_nums, "
         "perm) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (topic, broker_name) DO UPDATE SET "
         "read_queue_nums = excluded.read_queue_nums, write_queue_nums = "
         "excluded.write_queue_nums, perm = excluded.perm"},
    [ST_TOPIC_DELETE] = {"delete topic", "DELETE FROM topics WHERE name = ?1"},
    [ST_OFFSET_PUT] = {"put offset",
                       "INSERT INTO offsets (group_name, topic, queue_id, queue_offset, updated_ms) "
                       "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (group_name, topic, queue_id) DO UPDATE SET "
                       "queue_offset = excluded.queue_offset, updated_ms = excluded.updated_ms"},
    [ST_CLIENT_PUT] = {"put client",
                       "INSERT INTO clients (client_id, language, version, first_seen_ms, last_heartbeat_ms) "
                       "VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (client_id) DO UPDATE SET language = "
                       "excluded.language, version = excluded.version, last_heartbeat_ms = "
                       "excluded.last_heartbeat_ms"},
    [ST_CHANNEL_OPEN] = {"open channel",
                         "INSERT INTO channels (id, run_id, remote_addr, opened_ms) VALUES (?1, ?2, ?3, ?4)"},
    [ST_CHANNEL_CLOSE] = {"close channel", "UPDATE channels SET closed_ms = ?2, close_reason = ?3 "
                                           "WHERE id = ?1 AND closed_ms IS NULL"},
    [ST_CHANNEL_MEMBERS_LEAVE] = {"end channel members", "UPDATE members SET left_ms = ?2, leave_reason = ?3 "
                                                         "WHERE channel_id = ?1 AND left_ms IS NULL"},
    [ST_GROUP_PUT] =
        {"put group",
         "INSERT INTO consumer_groups (name, consume_type, message_model, consume_from_where, "
         "created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (name) DO UPDATE SET "
         "consume_type = excluded.consume_type, message_model = excluded.message_model, "
         "consume_from_where = excluded.consume_from_where, updated_ms = excluded.updated_ms"},
    /* A repeated join of a live (group, channel) refreshes it instead of failing. */
    [ST_MEMBER_JOIN] =
        {"member join",
         "INSERT INTO members (group_name, channel_id, client_id, joined_ms, last_heartbeat_ms) "
         "VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (group_name, channel_id) WHERE left_ms IS NULL "
         "DO UPDATE SET client_id = excluded.client_id, last_heartbeat_ms = "
         "excluded.last_heartbeat_ms"},
    [ST_MEMBER_HEARTBEAT] = {"member heartbeat",
                             "UPDATE members SET last_heartbeat_ms = ?3 "
                             "WHERE group_name = ?1 AND channel_id = ?2 AND left_ms IS NULL"},
    [ST_MEMBER_LEAVE] = {"member leave", "UPDATE members SET left_ms = ?3, leave_reason = ?4 "
                                         "WHERE group_name = ?1 AND channel_id = ?2 AND left_ms IS NULL"},
    [ST_SUBS_CLEAR] = {"clear subscriptions", "DELETE FROM subscriptions WHERE group_name = ?1"},
    [ST_SUB_PUT] =
        {"put subscription",
         "INSERT INTO subscriptions (group_name, topic, sub_string, expression_type, tags_json, "
         "sub_version, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (group_name, topic) "
         "DO UPDATE SET sub_string = excluded.sub_string, expression_type = excluded.expression_type, "
         "tags_json = excluded.tags_json, sub_version = excluded.sub_version, updated_ms = "
         "excluded.updated_ms"},
    /* group_seq: the group's events are numbered 1, 2, ... (0003) */
    [ST_EVENT_APPEND] = {"append event",
                         "INSERT INTO events (ts_ms, group_name, kind, client_id, channel_id, before_json, "
                         "after_json, list_delta, group_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                         "coalesce((SELECT group_seq FROM events WHERE group_name = ?2 ORDER BY id DESC "
                         "LIMIT 1), 0) + 1)"},
    /* One event (kind ?3: "restart" at start, "stop" at a clean stop) per
     * group with members left live by runs before ?2; the inner ORDER BY
     * fixes the order json_group_array sees the client ids. */
    [ST_RECOVER_EVENTS] =
        {"recover events",
         "INSERT INTO events (ts_ms, group_name, kind, client_id, channel_id, before_json, "
         "after_json, group_seq) SELECT ?1, group_name, ?3, NULL, NULL, json_group_array(client_id), "
         "'[]', coalesce((SELECT e.group_seq FROM events e WHERE e.group_name = x.group_name ORDER BY "
         "e.id DESC LIMIT 1), 0) + 1 FROM (SELECT DISTINCT m.group_name, m.client_id FROM members m "
         "JOIN channels c ON c.id = m.channel_id WHERE m.left_ms IS NULL AND c.run_id < ?2 ORDER BY "
         "m.group_name, m.client_id) AS x GROUP BY group_name ORDER BY group_name"},
    [ST_RECOVER_MEMBERS] = {"recover members",
                            "UPDATE members SET left_ms = ?1, leave_reason = ?3 WHERE left_ms IS NULL AND "
                            "channel_id IN (SELECT id FROM channels WHERE run_id < ?2)"},
    [ST_RECOVER_CHANNELS] = {"recover channels", "UPDATE channels SET closed_ms = ?1, close_reason = ?3 "
                                                 "WHERE closed_ms IS NULL AND run_id < ?2"},
    [ST_LOAD_TOPICS] =
        {"load topics",
         "SELECT t.name, b.broker_name, b.read_queue_nums, b.write_queue_nums, b.perm FROM topics t "
         "LEFT JOIN topic_brokers b ON b.topic = t.name ORDER BY t.name, b.broker_name"},
    [ST_LOAD_OFFSETS] = {"load offsets", "SELECT group_name, topic, queue_id, queue_offset FROM offsets "
                                         "ORDER BY group_name, topic, queue_id"},
    /* store_maint.c: closed channels beyond the newest ?1 closed ones, or
     * closed before ?2, go with their member rows, ?3 at a time (the two
     * statements select the same rows: nothing else writes in between). */
    [ST_PRUNE_MEMBERS] = {"prune members", "DELETE FROM members WHERE channel_id IN (" STORE_PRUNE_SET ")"},
    [ST_PRUNE_CHANNELS] = {"prune channels", "DELETE FROM channels WHERE id IN (" STORE_PRUNE_SET ")"},
    /* store_maint.c: re-writing membership after failed writes. */
    [ST_RESYNC_CHANNEL] =
        {"resync channel",
         "INSERT INTO channels (id, run_id, remote_addr, opened_ms) VALUES (?1, ?2, ?3, ?4) "
         "ON CONFLICT (id) DO NOTHING"},
    [ST_RESYNC_CLOSE_CHANNELS] =
        {"resync channels", "UPDATE channels SET closed_ms = ?2, close_reason = 'resync' WHERE closed_ms "
                            "IS NULL AND id NOT IN (SELECT value FROM json_each(?1))"},
    [ST_RESYNC_END_MEMBERS] =
        {"resync members", "UPDATE members SET left_ms = ?3, leave_reason = 'resync' WHERE group_name = ?1 "
                           "AND left_ms IS NULL AND channel_id NOT IN (SELECT value FROM json_each(?2))"},
    [ST_RESYNC_END_GROUPS] =
        {"resync groups", "UPDATE members SET left_ms = ?2, leave_reason = 'resync' WHERE left_ms IS NULL "
                          "AND group_name NOT IN (SELECT value FROM json_each(?1))"},
    /* store_messages.c (schema/0005_messages.sql) */
    [ST_MSG_PUT] = {"put message",
                    "INSERT INTO messages (physical_id, topic, queue_id, queue_offset, size, born_ms, store_ms, "
                    "flag, sys_flag, tags_code, reconsume_times, body_crc, deliver_ms, uniq_key, born_host, "
                    "store_host, properties, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                    "?13, ?14, ?15, ?16, ?17, ?18)"},
    [ST_MSG_KEY_PUT] = {"put message key",
                        "INSERT INTO message_keys (key, physical_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING"},
    [ST_MSG_RANGES] = {"load queue ranges",
                       "SELECT q.topic, q.queue_id, (SELECT min(m.queue_offset) FROM messages m WHERE m.topic = "
                       "q.topic AND m.queue_id = q.queue_id), (SELECT max(m.queue_offset) FROM messages m WHERE "
                       "m.topic = q.topic AND m.queue_id = q.queue_id), q.messages, q.bytes FROM message_queues q "
                       "WHERE q.messages > 0 ORDER BY q.topic, q.queue_id"},
    [ST_MSG_MAX_ID] = {"max physical id",
                       "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)"},
    [ST_MSG_READ] = {"read messages", "SELECT " STORE_MSG_COLS " FROM messages WHERE topic = ?1 AND queue_id = ?2 "
                                      "AND queue_offset >= ?3 ORDER BY queue_offset LIMIT ?4"},
    [ST_MSG_BY_ID] = {"message by id", "SELECT " STORE_MSG_COLS " FROM messages WHERE physical_id = ?1"},
    [ST_MSG_BY_UNIQ] = {"messages by unique key", "SELECT " STORE_MSG_COLS " FROM messages WHERE uniq_key = ?1 "
                                                  "ORDER BY physical_id LIMIT ?2"},
    [ST_MSG_BY_KEY] = {"messages by key",
                       "SELECT " STORE_MSG_COLS " FROM messages WHERE physical_id IN (SELECT physical_id FROM "
                       "message_keys WHERE key = ?1 ORDER BY physical_id LIMIT ?2) ORDER BY physical_id"},
    /* Never the queue's newest message: it keeps the queue's next offset. */
    [ST_MSG_DELETE_BELOW] = {"delete messages below",
                             "DELETE FROM messages WHERE topic = ?1 AND queue_id = ?2 AND queue_offset < min(?3, "
                             "(SELECT max(queue_offset) FROM messages WHERE topic = ?1 AND queue_id = ?2))"},
    [ST_MSG_OLDEST_IN_QUEUE] = {"oldest messages of a queue",
                                "SELECT queue_offset, size FROM messages WHERE topic = ?1 AND queue_id = ?2 "
                                "ORDER BY queue_offset LIMIT ?3"},
    [ST_MSG_OLDEST] = {"oldest messages",
                       "SELECT m.physical_id, m.topic, m.queue_id, m.queue_offset, m.size FROM messages m WHERE "
                       "m.queue_offset < (SELECT max(x.queue_offset) FROM messages x WHERE x.topic = m.topic AND "
                       "x.queue_id = m.queue_id) ORDER BY m.physical_id LIMIT ?1"},
    [ST_MSG_DELETE_ID] = {"delete message", "DELETE FROM messages WHERE physical_id = ?1"},
};

const char *store_stmt_name(enum stmt_id id)
{
    return stmt_def[id].name;
}

/* WAL frames after which the syncer is asked for an early checkpoint (the
 * writer's own automatic checkpoint is off while the syncer runs). */
#define STORE_WAL_KICK_FRAMES 1000

/* Maps a (extended) SQLite result code to an RMQ_E* code: constraint
 * failures are the caller's input, everything else is storage trouble. */
static int map_rc(int rc)
{
    switch (rc) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE: return RMQ_EEXIST;
    case SQLITE_NOMEM: return RMQ_ENOMEM;
    default: break;
    }
    return (rc & 0xff) == SQLITE_CONSTRAINT ? RMQ_EINVAL : RMQ_EIO;
}

/* Records a failed SQLite call (rc) in errbuf and returns its RMQ_E* code.
 * Also notices when SQLite has rolled the whole batch back on its own (it
 * does for I/O errors, SQLITE_FULL, SQLITE_NOMEM), so the loss is reported
 * by the next store_commit instead of passing silently. */
int store_fail(struct store *s, int rc, const char *what)
{
    snprintf(s->errbuf, sizeof s->errbuf, "%s: %s (%d)", what, sqlite3_errmsg(s->db), rc);
    s->resync_needed = true; /* whatever failed may be a membership fact (store_maint.c) */
    if (s->in_batch && sqlite3_get_autocommit(s->db)) {
        s->in_batch = false;
        s->batch_lost = true;
    }
    return map_rc(rc);
}

/* Records a caller error that never reached SQLite; returns code. */
int store_refuse(struct store *s, int code, const char *what)
{
    snprintf(s->errbuf, sizeof s->errbuf, "%s: %s", what, rmq_strerror(code));
    return code;
}

/* Binds the arguments described by fmt to st, one character per parameter:
 * 's' const char * (NULL binds SQL NULL; bound SQLITE_STATIC, which is safe
 * because store_exec_st clears bindings before returning), 'd' int, 'I' int64_t,
 * 'N' int64_t where 0 binds SQL NULL, 'n' an int64_t that is skipped and
 * binds SQL NULL. Returns a SQLite code. */
static int bind_va(sqlite3_stmt *st, const char *fmt, va_list ap)
{
    int rc = SQLITE_OK;
    for (int i = 0; fmt[i] && rc == SQLITE_OK; i++) {
        switch (fmt[i]) {
        case 's': {
            const char *v = va_arg(ap, const char *);
            rc = v ? sqlite3_bind_text(st, i + 1, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i + 1);
            break;
        }
        case 'd': rc = sqlite3_bind_int(st, i + 1, va_arg(ap, int)); break;
        case 'I': rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t)); break;
        case 'n':
            (void)va_arg(ap, int64_t);
            rc = sqlite3_bind_null(st, i + 1);
            break;
        case 'N': {
            int64_t v = va_arg(ap, int64_t);
            rc = v ? sqlite3_bind_int64(st, i + 1, v) : sqlite3_bind_null(st, i + 1);
            break;
        }
        case 'b': {
            const void *v = va_arg(ap, const void *);
            size_t n = va_arg(ap, size_t);
            rc = n > INT_MAX ? SQLITE_TOOBIG : sqlite3_bind_blob(st, i + 1, v ? v : "", (int)n, SQLITE_STATIC);
            break;
        }
        case 't': {
            const char *v = va_arg(ap, const char *);
            size_t n = va_arg(ap, size_t);
            rc = n > INT_MAX ? SQLITE_TOOBIG : sqlite3_bind_text(st, i + 1, v ? v : "", (int)n, SQLITE_STATIC);
            break;
        }
        default: rc = SQLITE_MISUSE; break;
        }
    }
    return rc;
}

/* Runs cached statement id to completion with the parameters in fmt (see
 * bind_va). *changes (may be NULL) gets the number of rows it changed.
 * Returns 0 or an RMQ_E* code with errbuf set. */
static int exec_st_va(struct store *s, enum stmt_id id, int *changes, const char *fmt, va_list ap)
{
    sqlite3_stmt *st = s->st[id];
    int rc = bind_va(st, fmt, ap);
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ;
        if (rc == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    int err = rc == SQLITE_OK ? 0 : store_fail(s, rc, store_stmt_name(id));
    if (!err && changes)
        *changes = sqlite3_changes(s->db);
    /* reset returns the step error again, already handled above;
     * clear_bindings always returns SQLITE_OK. */
    (void)sqlite3_reset(st);
    (void)sqlite3_clear_bindings(st);
    return err;
}

int store_exec_st(struct store *s, enum stmt_id id, int *changes, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int err = exec_st_va(s, id, changes, fmt, ap);
    va_end(ap);
    return err;
}

/* Opens the batch transaction if none is open (the first write after a
 * commit). Returns 0 or an RMQ_E* code. */
static int batch_begin(struct store *s)
{
    if (!s->soft)
        s->writes++;
    if (s->in_batch)
        return 0;
    store_syncer_yield(s->syncer); /* a TRUNCATE checkpoint gets its gap between two batches */
    int err = store_exec_st(s, ST_BEGIN, NULL, "");
    if (!err)
        s->in_batch = true;
    return err;
}

/* Starts a multi-statement write: the batch, then a savepoint inside it. */
int store_write_begin(struct store *s)
{
    int err = batch_begin(s);
    return err ? err : store_exec_st(s, ST_SAVEPOINT, NULL, "");
}

/* Ends a multi-statement write: keeps its changes when err is 0, otherwise
 * undoes them so the batch is as it was before the call. Returns err, or
 * the savepoint's own failure. If even the undo fails, the whole batch is
 * rolled back and reported lost (a half-applied write must not commit). */
int store_write_end(struct store *s, int err)
{
    if (!err)
        return store_exec_st(s, ST_RELEASE, NULL, "");
    if (!s->in_batch)
        return err; /* SQLite already rolled the whole batch back; store_fail() noted it */
    if (store_exec_st(s, ST_ROLLBACK_TO, NULL, "") == 0 && store_exec_st(s, ST_RELEASE, NULL, "") == 0)
        return err;
    if (store_exec_st(s, ST_ROLLBACK, NULL, "") == 0 || sqlite3_get_autocommit(s->db)) {
        s->in_batch = false;
        s->batch_lost = true;
    }
    return err;
}

/* Runs a single-statement write in the batch; a statement is atomic on its
 * own, so no savepoint is needed. Returns 0 or an RMQ_E* code. */
int store_write_one(struct store *s, int *changes, enum stmt_id id, const char *fmt, ...)
{
    int err = batch_begin(s);
    if (err)
        return err;
    va_list ap;
    va_start(ap, fmt);
    err = exec_st_va(s, id, changes, fmt, ap);
    va_end(ap);
    return err;
}

/* Reads a single integer from a PRAGMA (or any one-row query). */
static int query_int(struct store *s, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_ERROR; /* a pragma the library does not know returns no row */
        }
    }
    int err = rc == SQLITE_OK ? 0 : store_fail(s, rc, sql);
    (void)sqlite3_finalize(st); /* returns the step error again, handled above */
    return err;
}

/* Runs SQL text that may hold several statements (migrations, pragmas). */
static int exec_sql(struct store *s, const char *sql, const char *what)
{
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return 0;
    snprintf(s->errbuf, sizeof s->errbuf, "%s: %s (%d)", what, msg ? msg : sqlite3_errstr(rc), rc);
    sqlite3_free(msg);
    return map_rc(rc);
}

/* Switches to WAL so the HTTP thread's reader sees committed snapshots while
 * the loop writes. synchronous=FULL: a commit is fsynced before COMMIT
 * returns, which is what lets the loop acknowledge an offset right after
 * store_commit (NORMAL would survive a process crash but could lose the
 * last commits on power loss). Group commit keeps it to one fsync per loop
 * iteration, not per write; store_lazy_sync moves even that off the loop for
 * batches no reply depends on. */
static int configure(struct store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *mode = sqlite3_column_text(st, 0);
        rc = mode && strcmp((const char *)mode, "wal") == 0 ? SQLITE_OK : SQLITE_CANTOPEN;
    }
    int err = rc == SQLITE_OK ? 0 : store_fail(s, rc, "journal_mode=WAL");
    (void)sqlite3_finalize(st); /* returns the step error again, handled above */
    if (err)
        return err;
    /* When the WAL starts over it is cut back to this size (the sync
     * thread truncates a WAL that never gets to start over). */
    err = exec_sql(s, "PRAGMA journal_size_limit = 4194304", "journal_size_limit");
    return err ? err : exec_sql(s, "PRAGMA synchronous = FULL", "synchronous");
}

/* Returns RMQ_EINVAL with errbuf set if the file's schema is newer than
 * every migration this binary carries (a downgrade must not scribble on
 * tables it does not understand). */
static int check_version(struct store *s, int64_t version)
{
    if (version >= 0 && version <= (int64_t)schema_migration_count)
        return 0;
    snprintf(s->errbuf, sizeof s->errbuf,
             "database schema version %lld is newer than this binary supports (%u); refusing to open",
             (long long)version, schema_migration_count);
    return RMQ_EINVAL;
}

/* Applies the missing migrations, each in its own IMMEDIATE transaction
 * together with its user_version bump, so a crash leaves the file at a
 * whole version. The version is re-read inside the transaction in case
 * another process migrated first. Runs before foreign keys are enabled, so a
 * future migration may rebuild a table the way SQLite documents. */
static int migrate(struct store *s)
{
    for (;;) {
        int64_t v = 0;
        int err = exec_sql(s, "BEGIN IMMEDIATE", "migration begin");
        if (err)
            return err;
        if ((err = query_int(s, "PRAGMA user_version", &v)) != 0 || (err = check_version(s, v)) != 0) {
            (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* keep err's message */
            return err;
        }
        if (v == (int64_t)schema_migration_count)
            return exec_sql(s, "COMMIT", "migration end");
        char what[64], bump[64];
        snprintf(what, sizeof what, "migration %04lld", (long long)v + 1);
        snprintf(bump, sizeof bump, "PRAGMA user_version = %lld", (long long)v + 1);
        if ((err = exec_sql(s, schema_migrations[v], what)) != 0 || (err = exec_sql(s, bump, what)) != 0 ||
            (err = exec_sql(s, "COMMIT", what)) != 0) {
            /* keep the migration's message; the rollback result adds nothing */
            if (!sqlite3_get_autocommit(s->db))
                (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            return err;
        }
    }
}

static int enable_foreign_keys(struct store *s)
{
    int64_t on = 0;
    int err = exec_sql(s, "PRAGMA foreign_keys = ON", "foreign_keys");
    if (!err)
        err = query_int(s, "PRAGMA foreign_keys", &on);
    if (!err && on != 1)
        err = store_refuse(s, RMQ_EIO, "foreign_keys unsupported by this SQLite");
    return err;
}

static int prepare_all(struct store *s)
{
    for (int i = 0; i < ST_COUNT; i++) {
        int rc = sqlite3_prepare_v3(s->db, stmt_def[i].sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
        if (rc != SQLITE_OK)
            return store_fail(s, rc, store_stmt_name(i));
    }
    return 0;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Finalizes and closes without committing (open failures, store_close). */
static void destroy(struct store *s)
{
    store_syncer_stop(s->syncer);
    for (int i = 0; i < ST_COUNT; i++)
        (void)sqlite3_finalize(s->st[i]); /* returns the last step error, already reported */
    int rc = sqlite3_close(s->db);
    assert(rc == SQLITE_OK); /* every statement is finalized, so close cannot be busy */
    (void)rc;
    store_lock_release(s); /* after the close: its last checkpoint is still ours */
    rmq_free(s);
}

/* Creates the file with mode 0600 before SQLite sees it: SQLite would
 * create it 0644 (less the umask), and its -wal/-shm files copy the mode
 * of the database file, so this one open() protects all three. */
static int create_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        int e = errno;
        (void)rmq_fail(err, errlen, RMQ_OK, "open %s: %s", path, strerror(e));
        return -e;
    }
    if (close(fd) != 0 && errno != EINTR) {
        int e = errno;
        (void)rmq_fail(err, errlen, RMQ_OK, "close %s: %s", path, strerror(e));
        return -e;
    }
    return 0;
}

int store_open(const char *path, struct store **out, char *err, size_t errlen)
{
    if (!out || !path) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store_open: %s", rmq_strerror(RMQ_EINVAL));
        return RMQ_EINVAL;
    }
    *out = NULL;
    struct store *s = rmq_calloc(1, sizeof *s);
    if (!s) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store_open: %s", rmq_strerror(RMQ_ENOMEM));
        return RMQ_ENOMEM;
    }
    s->lock_fd = -1;
    /* The lock first: a second daemon must not touch the store at all. */
    int e = store_lock_acquire(s, path, err, errlen);
    if (!e) {
        store_note_empty_file(path);
        e = create_file(path, err, errlen);
    }
    if (e) {
        store_lock_release(s);
        rmq_free(s);
        return e;
    }
    int rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
    if (rc != SQLITE_OK) {
        e = s->db ? store_fail(s, rc, path) : RMQ_ENOMEM;
        if (!s->db)
            snprintf(s->errbuf, sizeof s->errbuf, "%s: %s", path, sqlite3_errstr(rc));
        goto fail;
    }
    if ((rc = sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS)) != SQLITE_OK) {
        e = store_fail(s, rc, "busy_timeout");
        goto fail;
    }
    /* Refuse another application's file or a newer schema before anything
     * (even the WAL switch) writes. */
    int64_t version = 0;
    if ((e = query_int(s, "PRAGMA user_version", &version)) != 0 || (e = check_version(s, version)) != 0 ||
        (e = store_check_ours(s, path, version)) != 0 || (e = configure(s)) != 0 || (e = migrate(s)) != 0 ||
        (e = enable_foreign_keys(s)) != 0 || (e = prepare_all(s)) != 0 || (e = store_bounded_busy(s)) != 0)
        goto fail;
    if ((e = store_exec_st(s, ST_RUN_INSERT, NULL, "Id", wall_ms(), (int)schema_migration_count)) != 0)
        goto fail;
    s->run_id = sqlite3_last_insert_rowid(s->db);
    s->errbuf[0] = 0;
    *out = s;
    return 0;
fail:
    (void)rmq_fail(err, errlen, RMQ_OK, "%s", s->errbuf);
    destroy(s);
    return e;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    /* Nobody is left to hear a failure; a lost batch is what a crash here
     * would have lost too. */
    if (s->in_batch)
        (void)store_commit(s);
    /* Closing the last connection checkpoints and deletes the WAL: that
     * copy must be synced like any other. */
    if (s->syncer)
        (void)exec_sql(s, "PRAGMA synchronous = FULL", "synchronous");
    destroy(s);
}

const char *store_errmsg(const struct store *s)
{
    return s->errbuf;
}

int64_t store_run_id(const struct store *s)
{
    return s->run_id;
}

uint64_t store_write_count(const struct store *s)
{
    return s->writes;
}

void store_soft_writes(struct store *s, bool on)
{
    s->soft = on;
}

bool store_in_batch(const struct store *s)
{
    return s->in_batch;
}

bool store_commit_due(const struct store *s)
{
    return s->in_batch || s->batch_lost;
}

/* With lazy sync on the connection runs at synchronous=OFF (SQLite
 * refuses to change it inside a transaction, and a batch starts before
 * anyone knows whether a reply will depend on it), so a commit that must
 * be durable fsyncs the WAL itself after COMMIT: the same fsync FULL would
 * have run. */
static int sync_wal(struct store *s)
{
    sqlite3_file *wal = NULL;
    int rc = sqlite3_file_control(s->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal);
    if (rc == SQLITE_OK && (!wal || !wal->pMethods))
        rc = SQLITE_IOERR_FSYNC; /* no WAL open: nothing we could vouch for */
    if (rc == SQLITE_OK)
        rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
    if (rc == SQLITE_OK)
        return 0;
    snprintf(s->errbuf, sizeof s->errbuf, "fsync of the WAL after commit: %s (%d)", sqlite3_errstr(rc), rc);
    return RMQ_EIO;
}

static int commit(struct store *s, bool lazy)
{
    bool lost = s->batch_lost;
    s->batch_lost = false;
    if (lost)
        s->resync_needed = true;
    if (!s->in_batch)
        return lost ? RMQ_EIO : 0; /* errbuf still names the failure that lost it */
    if (store_exec_st(s, ST_COMMIT, NULL, "") == 0) {
        s->in_batch = false;
        s->resync_in_batch = false;
        if (!lazy && s->syncer && sync_wal(s) != 0)
            return RMQ_EIO; /* committed, but not known to be on disk: acknowledge nothing */
        return lost ? RMQ_EIO : 0;
    }
    s->resync_needed = true;
    /* The batch is not durable. Undo what is left of it so the connection
     * is clean and the next write starts a fresh batch; keep the COMMIT's
     * message, which says why. */
    char why[sizeof s->errbuf];
    memcpy(why, s->errbuf, sizeof why);
    if (!sqlite3_get_autocommit(s->db))
        (void)store_exec_st(s, ST_ROLLBACK, NULL, "");
    memcpy(s->errbuf, why, sizeof why);
    s->in_batch = !sqlite3_get_autocommit(s->db);
    s->batch_lost = s->in_batch; /* a batch we could not even roll back is still a lost one */
    return RMQ_EIO;
}

int store_commit(struct store *s)
{
    return commit(s, false);
}

int store_commit_lazy(struct store *s)
{
    return commit(s, true);
}

/* Runs on the writer's thread after each commit, with the WAL's size. The
 * writer never checkpoints itself while the syncer runs: at
 * synchronous=OFF it would copy frames into the database without syncing
 * the WAL first. */
static int on_wal_commit(void *ctx, sqlite3 *db, const char *schema, int frames)
{
    (void)db;
    (void)schema;
    struct store *s = ctx;
    if (frames >= STORE_WAL_KICK_FRAMES)
        store_syncer_kick(s->syncer);
    return SQLITE_OK;
}

int store_lazy_sync(struct store *s, int64_t interval_ms)
{
    if (s->syncer || s->in_batch)
        return store_refuse(s, RMQ_ESTATE, "lazy sync");
    const char *path = sqlite3_db_filename(s->db, "main");
    if (!path || !*path)
        return store_refuse(s, RMQ_EINVAL, "lazy sync (no file)");
    /* OFF, not NORMAL: NORMAL still fsyncs the WAL header each time the WAL
     * restarts after a checkpoint, on the loop. Safe here because this
     * connection never writes the database file (only the syncer, at FULL,
     * checkpoints) and durable commits sync the WAL themselves. */
    int err = exec_sql(s, "PRAGMA synchronous = OFF", "synchronous");
    if (!err)
        err = store_syncer_start(path, interval_ms, &s->syncer, s->errbuf, sizeof s->errbuf);
    if (err) {
        (void)exec_sql(s, "PRAGMA synchronous = FULL",
                       "synchronous"); /* back as it was; errbuf keeps the cause */
        return err;
    }
    /* Replaces the automatic checkpoint, which would fsync on the loop. */
    (void)sqlite3_wal_hook(s->db, on_wal_commit, s); /* returns the previous hook's context */
    return 0;
}

bool store_sync_stats(struct store *s, struct store_syncer_stats *out)
{
    if (!s->syncer)
        return false;
    store_syncer_stats(s->syncer, out);
    return true;
}

/* Wipes every table but runs (POST /api/reset), inside the batch; the
 * caller commits. Children go before the rows they reference (foreign keys
 * are on). The events id sequence is kept on purpose: ids only grow, so a
 * poller or event stream holding "since id" sees the events after a reset
 * instead of skipping the first ones. */
int store_reset(struct store *s)
{
    int err = store_write_begin(s);
    if (err)
        return err;
    err = exec_sql(
        s,
        "DELETE FROM members; DELETE FROM subscriptions; DELETE FROM consumer_groups; "
        "DELETE FROM offsets; DELETE FROM topic_brokers; DELETE FROM topics; "
        "DELETE FROM clients; DELETE FROM events; DELETE FROM channels; DELETE FROM subscription_groups;",
        "reset");
    return store_write_end(s, err);
}
