/* store_exec.h — the writer's state and statements (store_exec.c): the
 * prepared statement ids, struct store, and the primitives that run
 * statements inside the batch. Not a public interface: only the writer's
 * files include it (it needs sqlite3.h). Loop thread only.
 */
#ifndef RMQ_STORE_EXEC_H
#define RMQ_STORE_EXEC_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store_syncer;

/* clang-format off */
enum stmt_id {
    ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_SAVEPOINT, ST_RELEASE, ST_ROLLBACK_TO, ST_RUN_INSERT,
    ST_TOPIC_UPSERT, ST_TOPIC_BROKERS_CLEAR, ST_TOPIC_BROKER_PUT, ST_TOPIC_DELETE, ST_OFFSET_PUT,
    ST_CLIENT_PUT, ST_CHANNEL_OPEN, ST_CHANNEL_CLOSE, ST_CHANNEL_MEMBERS_LEAVE, ST_GROUP_PUT, ST_MEMBER_JOIN,
    ST_MEMBER_HEARTBEAT, ST_MEMBER_LEAVE, ST_SUBS_CLEAR, ST_SUB_PUT, ST_EVENT_APPEND, ST_RECOVER_EVENTS,
    ST_RECOVER_MEMBERS, ST_RECOVER_CHANNELS, ST_LOAD_TOPICS, ST_LOAD_OFFSETS, ST_PRUNE_MEMBERS,
    ST_PRUNE_CHANNELS, ST_RESYNC_CHANNEL, ST_RESYNC_CLOSE_CHANNELS, ST_RESYNC_END_MEMBERS,
    ST_RESYNC_END_GROUPS, ST_MSG_PUT, ST_MSG_KEY_PUT, ST_MSG_RANGES, ST_MSG_MAX_ID, ST_MSG_READ, ST_MSG_BY_ID,
    ST_MSG_BY_UNIQ, ST_MSG_BY_KEY, ST_MSG_DELETE_BELOW, ST_MSG_OLDEST_IN_QUEUE, ST_MSG_OLDEST, ST_MSG_DELETE_ID, ST_MSG_TOTALS,
    ST_COUNT,
};
/* clang-format on */

struct store {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    int64_t run_id;
    bool in_batch;                /* BEGIN has run and COMMIT has not */
    bool batch_lost;              /* SQLite rolled an open batch back; the next store_commit reports it */
    int savepoints;               /* open savepoints of the batch, as the statements run (exec_st_va) */
    uint64_t writes;              /* write calls so far, soft ones excepted (store_write_count) */
    bool soft;                    /* store_soft_writes: writes do not count */
    struct store_syncer *syncer;  /* lazy commits on: the thread that fsyncs them; owned */
    int lock_fd;                  /* the flock on "<path>.lock" (store_guard.c); -1 when none */
    uint64_t busy_since_us;       /* writer_busy: when the current wait began */
    uint64_t busy_quiet_until_us; /* writer_busy: no waiting before this */
    bool resync_needed;           /* a write or commit failed: membership facts may be missing */
    bool resync_in_batch;         /* the open batch re-writes them (store_resync_due) */
    int64_t resync_next_ms;       /* store_resync_due: not before */
    int64_t prune_next_ms;        /* store_prune: not before */
    uint64_t file_dev, file_ino;  /* the database file opened (store_guard.c store_file_moved) */
    uint64_t moved_checked_us;    /* store_file_moved: last look, for lazy commits */
    char errbuf[256];
};

/* Asserts (debug builds) that the batch state between two calls is
 * SQLite's: in_batch exactly when a transaction is open, and no write's
 * savepoint left open. True when it is. */
bool store_batch_sanity(const struct store *s);

/* The statement's name, for error messages. */
const char *store_stmt_name(enum stmt_id id);

/* Records a failed SQLite call (rc) in errbuf and returns its RMQ_E* code;
 * notices a batch SQLite rolled back on its own (batch_lost). */
int store_fail(struct store *s, int rc, const char *what);

/* Records a caller error that never reached SQLite; returns code. */
int store_refuse(struct store *s, int code, const char *what);

/* Runs cached statement id to completion, binding the arguments fmt
 * describes, one character per parameter: 's' const char * (NULL binds SQL
 * NULL), 'd' int, 'I' int64_t, 'N' int64_t where 0 binds SQL NULL, 'n' an
 * int64_t that is skipped and binds SQL NULL, 'b' a const void * and a
 * size_t (a blob; NULL with 0 binds an empty one), 't' a const char * and
 * a size_t (text of that length). *changes (may be NULL) gets
 * the rows changed. Always resets the statement. Returns 0 or an RMQ_E*
 * code with errbuf set. */
int store_exec_st(struct store *s, enum stmt_id id, int *changes, const char *fmt, ...);

/* A multi-statement write: the batch, then a savepoint inside it;
 * store_write_end keeps the changes when err is 0 and undoes them
 * otherwise, returning err (or the savepoint's own failure). */
int store_write_begin(struct store *s);
int store_write_end(struct store *s, int err);

/* A single-statement write in the batch (atomic on its own: no savepoint). */
int store_write_one(struct store *s, int *changes, enum stmt_id id, const char *fmt, ...);

/* Runs SQL text that may hold several statements (migrations, pragmas)
 * outside the statement table. Returns 0 or an RMQ_E* code with errbuf set. */
int store_exec_sql(struct store *s, const char *sql, const char *what);

/* Prepares every statement of the table into s->st (at open, after the
 * migrations). Returns 0 or an RMQ_E* code with errbuf set. */
int store_prepare_all(struct store *s);

#endif
