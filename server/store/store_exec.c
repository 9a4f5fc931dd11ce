/* store_exec.c — the writer's statements and the batch they run in: the
 * table of every cached statement, prepared once at open, and the
 * primitives each write calls (run a statement, open the batch, a
 * savepoint around a multi-statement write, the error record).
 *
 * Owned by the loop thread, on the writer's connection (store.c).
 *
 * Design:
 * - Every statement is prepared once at open (the stmt table below) with
 *   SQLITE_PREPARE_PERSISTENT and reused; store_exec_st() binds, steps, and always
 *   resets, so no statement holds a read lock or a borrowed string after the
 *   call returns.
 * - Group commit: the first write after a commit runs BEGIN IMMEDIATE (so a
 *   foreign writer is detected at that write, not at commit time), and
 *   store_commit() (store.c) COMMITs.
 * - A write made of several statements (a topic and its brokers, a
 *   subscription set, a channel close that ends its members, recovery) runs
 *   inside a SAVEPOINT, so a failing call leaves the batch as it was before
 *   the call instead of half-applied.
 * - If SQLite itself rolls the whole batch back (I/O error, disk full), the
 *   store notes it (batch_lost) and the next store_commit returns RMQ_EIO,
 *   so the caller never acknowledges a write that vanished.
 *
 * A writer file with statements of its own adds their ids to enum stmt_id
 * (store_exec.h) and their SQL to the table here.
 *
 * Errors: 0, or RMQ_EIO for SQLite failures, RMQ_EINVAL for a violated
 * constraint (bad argument, missing parent row), RMQ_EEXIST for a duplicate
 * key, RMQ_ENOTFOUND when an update matched no row, RMQ_ENOMEM.
 * store_errmsg() says what failed.
 */
#include "store_exec.h"

#include "err.h"
#include "store_sync.h"

#include <assert.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    [ST_MSG_PUT] =
        {"put message",
         "INSERT INTO messages (physical_id, topic, queue_id, queue_offset, size, born_ms, store_ms, "
         "flag, sys_flag, tags_code, reconsume_times, body_crc, deliver_ms, uniq_key, born_host, "
         "store_host, properties, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
         "?13, ?14, ?15, ?16, ?17, ?18)"},
    [ST_MSG_KEY_PUT] = {"put message key",
                        "INSERT INTO message_keys (key, physical_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING"},
    [ST_MSG_RANGES] =
        {"load queue ranges",
         "SELECT q.topic, q.queue_id, (SELECT min(m.queue_offset) FROM messages m WHERE m.topic = "
         "q.topic AND m.queue_id = q.queue_id), (SELECT max(m.queue_offset) FROM messages m WHERE "
         "m.topic = q.topic AND m.queue_id = q.queue_id), q.messages, q.bytes FROM message_queues q "
         "WHERE q.messages > 0 ORDER BY q.topic, q.queue_id"},
    [ST_MSG_MAX_ID] = {"max physical id",
                       "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)"},
    [ST_MSG_READ] = {"read messages",
                     "SELECT " STORE_MSG_COLS " FROM messages WHERE topic = ?1 AND queue_id = ?2 "
                     "AND queue_offset >= ?3 ORDER BY queue_offset LIMIT ?4"},
    [ST_MSG_BY_ID] = {"message by id", "SELECT " STORE_MSG_COLS " FROM messages WHERE physical_id = ?1"},
    [ST_MSG_BY_UNIQ] = {"messages by unique key",
                        "SELECT " STORE_MSG_COLS " FROM messages WHERE uniq_key = ?1 "
                        "ORDER BY physical_id LIMIT ?2"},
    [ST_MSG_BY_KEY] = {"messages by key",
                       "SELECT " STORE_MSG_COLS
                       " FROM messages WHERE physical_id IN (SELECT physical_id FROM "
                       "message_keys WHERE key = ?1 ORDER BY physical_id LIMIT ?2) ORDER BY physical_id"},
    /* Never the queue's newest message: it keeps the queue's next offset. */
    [ST_MSG_DELETE_BELOW] =
        {"delete messages below",
         "DELETE FROM messages WHERE topic = ?1 AND queue_id = ?2 AND queue_offset < min(?3, "
         "(SELECT max(queue_offset) FROM messages WHERE topic = ?1 AND queue_id = ?2))"},
    [ST_MSG_OLDEST_IN_QUEUE] = {"oldest messages of a queue",
                                "SELECT queue_offset, size FROM messages WHERE topic = ?1 AND queue_id = ?2 "
                                "ORDER BY queue_offset LIMIT ?3"},
    [ST_MSG_OLDEST] =
        {"oldest messages",
         "SELECT m.physical_id, m.topic, m.queue_id, m.queue_offset, m.size FROM messages m WHERE "
         "m.queue_offset < (SELECT max(x.queue_offset) FROM messages x WHERE x.topic = m.topic AND "
         "x.queue_id = m.queue_id) ORDER BY m.physical_id LIMIT ?1"},
    [ST_MSG_DELETE_ID] = {"delete message", "DELETE FROM messages WHERE physical_id = ?1"},
    [ST_MSG_TOTALS] = {"message totals",
                       "SELECT coalesce(sum(messages), 0), coalesce(sum(bytes), 0) FROM message_queues"},
};

const char *store_stmt_name(enum stmt_id id)
{
    assert(id >= 0 && id < ST_COUNT);
    return stmt_def[id].name;
}

bool store_batch_sanity(const struct store *s)
{
    assert(s->db);
    assert(s->in_batch == !sqlite3_get_autocommit(s->db));
    assert(s->savepoints == 0); /* each multi-statement write released or undid its own */
    return s->in_batch == !sqlite3_get_autocommit(s->db) && s->savepoints == 0;
}

#ifndef NDEBUG
/* What statement id may run in the batch's state: BEGIN only outside a
 * transaction, a savepoint only inside the batch and never nested (no
 * write runs inside another), RELEASE and ROLLBACK TO only inside one,
 * COMMIT only with every write's savepoint closed (a half-done write must
 * not commit: store_write_end's undo either released it or ended the
 * batch). */
static int stmt_precondition(const struct store *s, enum stmt_id id)
{
    switch (id) {
    case ST_BEGIN: assert(!s->in_batch && sqlite3_get_autocommit(s->db)); break;
    case ST_SAVEPOINT: assert(s->in_batch && s->savepoints == 0); break;
    case ST_RELEASE:
    case ST_ROLLBACK_TO: assert(s->in_batch && s->savepoints == 1); break;
    case ST_COMMIT: assert(s->in_batch && s->savepoints == 0); break;
    default: break; /* ROLLBACK may run defensively after SQLite rolled back on its own */
    }
    return 1;
}
#endif

/* Follows the savepoint depth as statement id finishes (err its result). */
static void count_savepoints(struct store *s, enum stmt_id id, int err)
{
    if (err) {
        if (sqlite3_get_autocommit(s->db))
            s->savepoints = 0; /* SQLite rolled the whole transaction back */
        return;
    }
    switch (id) {
    case ST_SAVEPOINT: s->savepoints++; break;
    case ST_RELEASE: s->savepoints--; break;
    case ST_COMMIT:
    case ST_ROLLBACK: s->savepoints = 0; break;
    default: break;
    }
    assert(s->savepoints >= 0 && s->savepoints <= 1);
    /* Any other statement leaves the transaction as it found it. */
    assert(id == ST_BEGIN || id == ST_COMMIT || id == ST_ROLLBACK ||
           s->in_batch == !sqlite3_get_autocommit(s->db));
}

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
            rc =
                n > INT_MAX ? SQLITE_TOOBIG : sqlite3_bind_blob(st, i + 1, v ? v : "", (int)n, SQLITE_STATIC);
            break;
        }
        case 't': {
            const char *v = va_arg(ap, const char *);
            size_t n = va_arg(ap, size_t);
            rc =
                n > INT_MAX ? SQLITE_TOOBIG : sqlite3_bind_text(st, i + 1, v ? v : "", (int)n, SQLITE_STATIC);
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
    assert(stmt_precondition(s, id));
    sqlite3_stmt *st = s->st[id];
    assert(st && sqlite3_bind_parameter_count(st) == (int)strlen(fmt)); /* one fmt char per parameter */
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
    count_savepoints(s, id, err);
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
    assert(store_batch_sanity(s));
    return err;
}

/* Runs SQL text that may hold several statements (migrations, pragmas). */
int store_exec_sql(struct store *s, const char *sql, const char *what)
{
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return 0;
    snprintf(s->errbuf, sizeof s->errbuf, "%s: %s (%d)", what, msg ? msg : sqlite3_errstr(rc), rc);
    sqlite3_free(msg);
    return map_rc(rc);
}

int store_prepare_all(struct store *s)
{
    for (int i = 0; i < ST_COUNT; i++) {
        int rc = sqlite3_prepare_v3(s->db, stmt_def[i].sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
        if (rc != SQLITE_OK)
            return store_fail(s, rc, store_stmt_name(i));
    }
    return 0;
}
