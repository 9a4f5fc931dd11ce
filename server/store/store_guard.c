/* store_guard.c — what keeps the writer's store its own: one daemon per
 * store (a lock file), a refusal of other applications' SQLite files
 * before anything is written to them, the check that the database file is
 * still the one opened, and the writer's bounded wait for a lock another
 * connection holds (store_guard.h).
 *
 * Loop thread only (the writer's connection, store.c).
 */
#include "store_guard.h"

#include "clocks.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "store_exec.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- one daemon per store ------------------------------------------------
 * Two daemons on one store both ran: the second marked the first's live
 * members gone at its start, and each acknowledged offsets the other then
 * overwrote. An exclusive flock on "<store>.lock", held for as long as the
 * store is open (the kernel drops it when the process dies, even by kill
 * -9), makes the second refuse at start. The file keeps the owner's pid so
 * the refusal can name it. SQLite's locking_mode=EXCLUSIVE would do the
 * same for the database file but also lock out the HTTP thread's reader
 * and the sync thread. */

/* A planted symbolic link at the store's path, its WAL, its shared-memory
 * index or its lock file would make the daemon write where the link
 * points (its pid into the lock's target, say). None is followed: the
 * store is given by its real path. */
static int refuse_symlinks(const char *path, char *err, size_t errlen)
{
    static const char *const suffix[] = {"", "-wal", "-shm", ".lock"};
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        char p[4200];
        if (snprintf(p, sizeof p, "%s%s", path, suffix[i]) >= (int)sizeof p) {
            (void)rmq_fail(err, errlen, RMQ_OK, "store path too long: %s", path);
            return RMQ_EINVAL;
        }
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
            (void)rmq_fail(err, errlen, RMQ_OK,
                           "%s is a symbolic link: not followed; give the store's real path", p);
            return -ELOOP;
        }
    }
    return 0;
}

int store_lock_acquire(struct store *s, const char *path, char *err, size_t errlen)
{
    assert(s->lock_fd < 0); /* one lock per store: a second would leak the first */
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) { /* no lock file beside a directory */
        (void)rmq_fail(err, errlen, RMQ_OK, "open %s: %s", path, strerror(EISDIR));
        return -EISDIR;
    }
    int e0 = refuse_symlinks(path, err, errlen);
    if (e0)
        return e0;
    char lock[4200];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store path too long: %s", path);
        return RMQ_EINVAL;
    }
    /* O_NOFOLLOW: a link planted between the check above and here fails too. */
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int e = errno;
        (void)rmq_fail(err, errlen, RMQ_OK, "cannot open the lock file %s: %s", lock, strerror(e));
        return -e;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        (void)close(fd);
        if (e == EWOULDBLOCK) {
            (void)rmq_fail(err, errlen, RMQ_OK,
                           "store %s is in use by another process (pid %s, holding %s); one daemon owns a "
                           "store",
                           path, pid[0] ? pid : "unknown", lock);
            return RMQ_ESTATE;
        }
        (void)rmq_fail(err, errlen, RMQ_OK, "cannot lock %s: %s", lock, strerror(e));
        return -e;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    assert(n > 0 && (size_t)n < sizeof pid);
    /* The pid is only for the message of a refused second daemon: a failure
     * to write it loses nothing but that. */
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) != n)
        log_warn("store: cannot write the pid into %s", lock);
    s->lock_fd = fd;
    return 0;
}

void store_note_file(struct store *s, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        s->file_dev = (uint64_t)st.st_dev;
        s->file_ino = (uint64_t)st.st_ino;
    }
}

bool store_file_moved(struct store *s)
{
    if (!s->file_ino)
        return false; /* never noted (an in-memory store in a test) */
    const char *path = sqlite3_db_filename(s->db, "main");
    struct stat st;
    if (path && *path && stat(path, &st) == 0 && (uint64_t)st.st_dev == s->file_dev &&
        (uint64_t)st.st_ino == s->file_ino)
        return false;
    snprintf(s->errbuf, sizeof s->errbuf,
             "the store file %s was moved or deleted while running: nothing more is acknowledged; restart "
             "the daemon",
             path ? path : "?");
    return true;
}

void store_lock_release(struct store *s)
{
    if (s->lock_fd >= 0)
        (void)close(s->lock_fd); /* closing drops the flock */
    s->lock_fd = -1;
}

/* ---- is the file ours? ---------------------------------------------------
 * Checked before the WAL switch and the migrations, which would otherwise
 * rewrite another application's database before noticing. Ours: an empty
 * database (nothing in sqlite_master), a file carrying our application_id
 * (schema/0003), or one written before 0003 (application_id 0, a
 * user_version this binary knows, and the runs and events tables). */

static int count_of(struct store *s, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    int e = rc == SQLITE_OK ? 0 : store_fail(s, rc, sql);
    (void)sqlite3_finalize(st); /* repeats the step error, handled above */
    return e;
}

/* PRAGMA application_id of an rmqcoord store ("RMQC"), set by
 * schema/0003_ownership_seq.sql. */
#define STORE_APPLICATION_ID 0x524D5143

int store_check_ours(struct store *s, const char *path, int64_t version)
{
    int64_t app = 0, objects = 0, tables = 0;
    int e = count_of(s, "PRAGMA application_id", &app);
    if (!e)
        e = count_of(s, "SELECT count(*) FROM sqlite_master", &objects);
    if (!e)
        e = count_of(s,
                     "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', "
                     "'events')",
                     &tables);
    if (e)
        return e;
    if (app == STORE_APPLICATION_ID || (objects == 0 && app == 0 && version == 0) ||
        (app == 0 && version > 0 && tables == 2))
        return 0;
    snprintf(s->errbuf, sizeof s->errbuf,
             "%s is not an rmqcoord store (application_id %lld, user_version %lld, %lld schema objects); "
             "refusing to change it",
             path, (long long)app, (long long)version, (long long)objects);
    return RMQ_EINVAL;
}

/* A 0-byte file is a valid empty database to SQLite: say that it is
 * treated as a new store (a truncated store would otherwise pass
 * silently). */
void store_note_empty_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        log_warn("store %s is an empty (0-byte) file: starting a new store in it", path);
}

/* ---- the writer's bounded wait -------------------------------------------
 * With SQLite's busy timeout the loop waited up to 5 s for a lock another
 * connection held (an outside sqlite3 holding BEGIN IMMEDIATE froze every
 * client for seconds). The writer now waits at most STORE_BUSY_WAIT_MS, in
 * short polls (a TRUNCATE checkpoint of the sync thread holds the write
 * lock for a few milliseconds); once it gave up, it does not wait at all
 * for STORE_BUSY_QUIET_MS, so a lock held for long costs the loop one short
 * wait per quiet period, not one per write. A write that could not get the
 * lock fails like any storage error: held acknowledgements become
 * SYSTEM_ERROR "not stored". */
#define STORE_BUSY_WAIT_MS 50
#define STORE_BUSY_QUIET_MS 500
#define STORE_BUSY_POLL_US 200

static int writer_busy(void *ctx, int n)
{
    struct store *s = ctx;
    uint64_t now = rmq_mono_us();
    if (n == 0)
        s->busy_since_us = now;
    assert(n >= 0 && s->busy_since_us <= now); /* a wait is timed from its first call */
    if (now < s->busy_quiet_until_us)
        return 0;
    if (now - s->busy_since_us >= STORE_BUSY_WAIT_MS * 1000) {
        s->busy_quiet_until_us = now + STORE_BUSY_QUIET_MS * 1000;
        return 0;
    }
    struct timespec ts = {0, STORE_BUSY_POLL_US * 1000};
    (void)nanosleep(&ts, NULL); /* an early wake-up only retries sooner */
    return 1;
}

int store_bounded_busy(struct store *s)
{
    int rc = sqlite3_busy_handler(s->db, writer_busy, s);
    return rc == SQLITE_OK ? 0 : store_fail(s, rc, "busy handler");
}
