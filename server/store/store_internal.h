/* store_internal.h — what the writer's files share (store.c,
 * store_members.c, store_topics.c, store_messages.c...): the prepared statement ids, the writer
 * state, and the helpers that run statements inside the batch. Not a
 * public interface: only the writer's files include it. Loop thread only.
 */
#ifndef RMQ_STORE_INTERNAL_H
#define RMQ_STORE_INTERNAL_H

#include "store.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* clang-format off */
enum stmt_id {
    ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_SAVEPOINT, ST_RELEASE, ST_ROLLBACK_TO, ST_RUN_INSERT,
    ST_TOPIC_UPSERT, ST_TOPIC_BROKERS_CLEAR, ST_TOPIC_BROKER_PUT, ST_TOPIC_DELETE, ST_OFFSET_PUT,
    ST_CLIENT_PUT, ST_CHANNEL_OPEN, ST_CHANNEL_CLOSE, ST_CHANNEL_MEMBERS_LEAVE, ST_GROUP_PUT, ST_MEMBER_JOIN,
    ST_MEMBER_HEARTBEAT, ST_MEMBER_LEAVE, ST_SUBS_CLEAR, ST_SUB_PUT, ST_EVENT_APPEND, ST_RECOVER_EVENTS,
    ST_RECOVER_MEMBERS, ST_RECOVER_CHANNELS, ST_LOAD_TOPICS, ST_LOAD_OFFSETS, ST_PRUNE_MEMBERS,
    ST_PRUNE_CHANNELS, ST_RESYNC_CHANNEL, ST_RESYNC_CLOSE_CHANNELS, ST_RESYNC_END_MEMBERS,
    ST_RESYNC_END_GROUPS, ST_MSG_PUT, ST_MSG_KEY_PUT, ST_MSG_RANGES, ST_MSG_MAX_ID, ST_MSG_READ, ST_MSG_BY_ID,
    ST_MSG_BY_UNIQ, ST_MSG_BY_KEY, ST_MSG_DELETE_BELOW, ST_MSG_OLDEST_IN_QUEUE, ST_MSG_OLDEST, ST_MSG_DELETE_ID,
    ST_COUNT,
};
/* clang-format on */

struct store {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    int64_t run_id;
    bool in_batch;                /* BEGIN has run and COMMIT has not */
    bool batch_lost;              /* SQLite rolled an open batch back; the next store_commit reports it */
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
    char errbuf[256];
};

/* PRAGMA application_id of an rmqcoord store ("RMQC"), set by
 * schema/0003_ownership_seq.sql. */
#define STORE_APPLICATION_ID 0x524D5143

/* store_guard.c: the lock file (0, or RMQ_ESTATE when another process
 * holds it, or -errno; err filled), its release, the check that the file
 * is an rmqcoord store (before anything writes to it), the log line for a
 * 0-byte file, and the writer's bounded busy wait. */
int store_lock_acquire(struct store *s, const char *path, char *err, size_t errlen);
void store_lock_release(struct store *s);
int store_check_ours(struct store *s, const char *path, int64_t version);
void store_note_empty_file(const char *path);
int store_bounded_busy(struct store *s);

/* store_members.c: ends every member and channel of the runs before
 * before_run (reason and event kind: kind), one event per group that had
 * live members; *groups (may be NULL) gets their count. In the batch. */
int store_end_runs_before(struct store *s, int64_t before_run, const char *kind, int64_t now_ms, int *groups);

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

#endif
