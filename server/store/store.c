/* store.c — the SQLite writer's core: open + migrate, commits, lazy
 * sync, restart recovery, reset, and the accessors of struct store.
 *
 * Owned by the loop thread: one connection opened SQLITE_OPEN_NOMUTEX, never
 * touched by another thread (store_read.c has its own connection).
 *
 * Design:
 * - Group commit: the first write after a commit opens the batch
 *   (store_exec.c), and store_commit() COMMITs. The loop commits once per
 *   iteration, so the fsync cost is paid per iteration, not per write.
 * - Foreign keys are on: a member needs its channel and group rows first.
 *   Natural order: store_open_channel at accept, then per heartbeat
 *   store_put_client, store_put_group, store_member_join, subscriptions.
 *
 * The files of the writer, below this one: store_exec.c (the statement
 * table, struct store, running statements, batch and savepoints),
 * store_guard.c (the lock file, the ownership check, the busy wait), and
 * one file per kind of row, each with its header, which store.h includes:
 * store_members.c (clients, channels, groups, members, subscriptions,
 * events), store_topics.c (topics, offsets and their loading at start),
 * store_groups.c (subscription-group configs, offset deletions),
 * store_maint.c (pruning, resync, the end of a run).
 *
 * Errors: as store_exec.c says, or -errno from creating the file.
 * store_errmsg() says what failed.
 */
#include "store.h"

#include "clocks.h"
#include "err.h"
#include "mem.h"
#include "store_exec.h"
#include "store_guard.h"
#include "store_sync.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
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
    err = store_exec_sql(s, "PRAGMA journal_size_limit = 4194304", "journal_size_limit");
    return err ? err : store_exec_sql(s, "PRAGMA synchronous = FULL", "synchronous");
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
        int err = store_exec_sql(s, "BEGIN IMMEDIATE", "migration begin");
        if (err)
            return err;
        if ((err = query_int(s, "PRAGMA user_version", &v)) != 0 || (err = check_version(s, v)) != 0) {
            (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* keep err's message */
            return err;
        }
        if (v == (int64_t)schema_migration_count)
            return store_exec_sql(s, "COMMIT", "migration end");
        char what[64], bump[64];
        snprintf(what, sizeof what, "migration %04lld", (long long)v + 1);
        snprintf(bump, sizeof bump, "PRAGMA user_version = %lld", (long long)v + 1);
        if ((err = store_exec_sql(s, schema_migrations[v], what)) != 0 ||
            (err = store_exec_sql(s, bump, what)) != 0 || (err = store_exec_sql(s, "COMMIT", what)) != 0) {
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
    int err = store_exec_sql(s, "PRAGMA foreign_keys = ON", "foreign_keys");
    if (!err)
        err = query_int(s, "PRAGMA foreign_keys", &on);
    if (!err && on != 1)
        err = store_refuse(s, RMQ_EIO, "foreign_keys unsupported by this SQLite");
    return err;
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
    store_note_file(s, path);
    int rc = sqlite3_open_v2(
        path, &s->db,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOFOLLOW, NULL);
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
        (e = enable_foreign_keys(s)) != 0 || (e = store_prepare_all(s)) != 0 ||
        (e = store_bounded_busy(s)) != 0)
        goto fail;
    if ((e = store_exec_st(s, ST_RUN_INSERT, NULL, "Id", wall_ms(), (int)schema_migration_count)) != 0)
        goto fail;
    s->run_id = sqlite3_last_insert_rowid(s->db);
    assert(s->run_id > 0 && store_batch_sanity(s)); /* opened outside any batch */
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
    assert(store_batch_sanity(s));
    /* Nobody is left to hear a failure; a lost batch is what a crash here
     * would have lost too. */
    if (s->in_batch)
        (void)store_commit(s);
    /* Closing the last connection checkpoints and deletes the WAL: that
     * copy must be synced like any other. */
    if (s->syncer)
        (void)store_exec_sql(s, "PRAGMA synchronous = FULL", "synchronous");
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
    assert(store_batch_sanity(s));
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
    /* A batch others wait on must reach the file the next start opens: a
     * stat per durable commit (its fsync costs far more); a lazy one looks
     * once a second. */
    uint64_t now_us = rmq_mono_us();
    if (!lazy || now_us - s->moved_checked_us >= 1000000) {
        s->moved_checked_us = now_us;
        if (store_file_moved(s)) {
            s->resync_needed = true;
            char why[sizeof s->errbuf];
            memcpy(why, s->errbuf, sizeof why);
            (void)store_exec_st(s, ST_ROLLBACK, NULL, "");
            memcpy(s->errbuf, why, sizeof why);
            s->in_batch = !sqlite3_get_autocommit(s->db);
            s->batch_lost = s->in_batch;
            return RMQ_EIO;
        }
    }
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

/* WAL frames after which the syncer is asked for an early checkpoint (the
 * writer's own automatic checkpoint is off while the syncer runs). */
#define STORE_WAL_KICK_FRAMES 1000

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
    assert(store_batch_sanity(s));
    if (s->syncer || s->in_batch)
        return store_refuse(s, RMQ_ESTATE, "lazy sync");
    const char *path = sqlite3_db_filename(s->db, "main");
    if (!path || !*path)
        return store_refuse(s, RMQ_EINVAL, "lazy sync (no file)");
    /* OFF, not NORMAL: NORMAL still fsyncs the WAL header each time the WAL
     * restarts after a checkpoint, on the loop. Safe here because this
     * connection never writes the database file (only the syncer, at FULL,
     * checkpoints) and durable commits sync the WAL themselves. */
    int err = store_exec_sql(s, "PRAGMA synchronous = OFF", "synchronous");
    if (!err)
        err = store_syncer_start(path, interval_ms, &s->syncer, s->errbuf, sizeof s->errbuf);
    if (err) {
        (void)store_exec_sql(s, "PRAGMA synchronous = FULL",
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

int store_recover(struct store *s, int64_t now_ms, int *groups_out)
{
    int groups = 0;
    int err = store_end_runs_before(s, s->run_id, "restart", now_ms, &groups);
    if (err != 0 || (err = store_commit(s)) != 0)
        return err;
    if (groups_out)
        *groups_out = groups;
    return 0;
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
    err = store_exec_sql(
        s,
        "DELETE FROM members; DELETE FROM subscriptions; DELETE FROM consumer_groups; "
        "DELETE FROM offsets; DELETE FROM topic_brokers; DELETE FROM topics; "
        "DELETE FROM clients; DELETE FROM events; DELETE FROM channels; DELETE FROM subscription_groups; "
        "DELETE FROM message_keys; DELETE FROM messages; DELETE FROM message_queues;",
        "reset");
    err = store_write_end(s, err);
    assert(store_batch_sanity(s));
    return err;
}
