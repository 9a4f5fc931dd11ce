/* store_sync.c — see store_sync.h. */
#include "store_sync.h"

#include "clocks.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* A checkpoint waits for nobody (PASSIVE), but opening the WAL index may
 * briefly need a lock another connection holds. */
#define SYNCER_BUSY_TIMEOUT_MS 2000

/* A WAL file bigger than this is truncated: PASSIVE checkpoints copy its
 * frames but never let it start over while the loop keeps committing (the
 * writer restarts the WAL only when every frame is copied at the moment it
 * begins a transaction, which under steady churn never happens), so it grew
 * by gigabytes. After the PASSIVE pass the syncer runs a TRUNCATE
 * checkpoint: it takes the write lock only to copy the few frames committed
 * since, sync, and cut the file to zero bytes. */
#define SYNCER_WAL_TRUNCATE_BYTES (4 << 20)
/* How long the TRUNCATE checkpoint tries to get the write lock between two
 * of the loop's batches (and for readers to leave) before giving up until
 * the next interval; it polls finely so it wins one of the short gaps. */
#define SYNCER_TRUNCATE_WAIT_US 200000
#define SYNCER_TRUNCATE_POLL_US 100
/* The writer waits this long for a TRUNCATE checkpoint to end before it
 * tries to begin anyway (store_syncer_yield). */
#define SYNCER_YIELD_MAX_MS 100

struct store_syncer {
    sqlite3 *db;    /* the thread's own connection */
    char *wal_path; /* owned: the database path + "-wal" */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* CLOCK_MONOTONIC */
    pthread_cond_t done_cv; /* CLOCK_MONOTONIC; signalled when a TRUNCATE ends */
    atomic_bool truncating; /* a TRUNCATE checkpoint wants or holds the write lock */
    int64_t interval_ms;
    bool stop;                       /* under mu */
    bool kicked;                     /* under mu */
    struct store_syncer_stats stats; /* under mu */
};

/* The busy handler of the TRUNCATE checkpoint: short sleeps, bounded in
 * total, so it gets the write lock in a gap between the loop's batches. */
static int truncate_busy(void *ctx, int n)
{
    (void)ctx;
    if ((int64_t)n * SYNCER_TRUNCATE_POLL_US >= SYNCER_TRUNCATE_WAIT_US)
        return 0;
    struct timespec ts = {0, SYNCER_TRUNCATE_POLL_US * 1000};
    (void)nanosleep(&ts, NULL); /* an early wake-up only retries sooner */
    return 1;
}

static off_t wal_size(const struct store_syncer *y)
{
    struct stat st;
    return stat(y->wal_path, &st) == 0 ? st.st_size : 0;
}

/* Lets the writer begin batches again (store_syncer_yield). */
static void release_writer(struct store_syncer *y)
{
    pthread_mutex_lock(&y->mu);
    atomic_store(&y->truncating, false);
    pthread_cond_broadcast(&y->done_cv);
    pthread_mutex_unlock(&y->mu);
}

/* TRUNCATE when the WAL file passed SYNCER_WAL_TRUNCATE_BYTES; true when
 * the file was cut. */
static bool truncate_if_big(struct store_syncer *y)
{
    if (wal_size(y) <= SYNCER_WAL_TRUNCATE_BYTES)
        return false;
    /* The writer sees the flag before its next batch and waits for the
     * end (store_syncer_yield), so the lock comes free within one batch
     * instead of the loop winning every race for it. */
    atomic_store(&y->truncating, true);
    (void)sqlite3_busy_handler(y->db, truncate_busy, NULL); /* cannot fail on an open connection */
    int rc = sqlite3_wal_checkpoint_v2(y->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    (void)sqlite3_busy_timeout(y->db, SYNCER_BUSY_TIMEOUT_MS);
    release_writer(y);
    assert(!atomic_load(&y->truncating)); /* the writer never waits past a TRUNCATE's end */
    return rc == SQLITE_OK;
}

static void checkpoint(struct store_syncer *y)
{
    uint64_t t0 = rmq_mono_us();
    int rc = sqlite3_wal_checkpoint_v2(y->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    uint64_t took = rmq_mono_us() - t0;
    bool cut = rc == SQLITE_OK && truncate_if_big(y);
    pthread_mutex_lock(&y->mu);
    y->stats.checkpoints++;
    if (cut)
        y->stats.truncations++;
    /* BUSY: another checkpoint is running (the writer's safety net); the
     * next interval catches up. */
    if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
        y->stats.failures++;
    y->stats.last_us = took;
    if (took > y->stats.max_us)
        y->stats.max_us = took;
    /* Each pass counts once and truncates or fails at most once. */
    assert(y->stats.truncations <= y->stats.checkpoints && y->stats.failures <= y->stats.checkpoints);
    assert(y->stats.last_us <= y->stats.max_us);
    pthread_mutex_unlock(&y->mu);
}

static void *run(void *arg)
{
    struct store_syncer *y = arg;
    assert(y->interval_ms > 0); /* a zero wait would spin */
    pthread_mutex_lock(&y->mu);
    while (!y->stop) {
        struct timespec until = rmq_clock_after_ms(CLOCK_MONOTONIC, y->interval_ms);
        while (!y->stop && !y->kicked) {
            if (pthread_cond_timedwait(&y->cv, &y->mu, &until) == ETIMEDOUT)
                break;
        }
        y->kicked = false;
        pthread_mutex_unlock(&y->mu);
        checkpoint(y);
        pthread_mutex_lock(&y->mu);
    }
    pthread_mutex_unlock(&y->mu);
    return NULL;
}

static int open_db(struct store_syncer *y, const char *path, char *err, size_t errlen)
{
    int rc = sqlite3_open_v2(path, &y->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(y->db, SYNCER_BUSY_TIMEOUT_MS);
    /* FULL: the checkpoint syncs the WAL before and the database after it
     * copies, which is the durability this thread exists for. */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(y->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    (void)rmq_fail(err, errlen, RMQ_OK, "store syncer: %s: %s", path,
                   y->db ? sqlite3_errmsg(y->db) : sqlite3_errstr(rc));
    return rc == SQLITE_NOMEM ? RMQ_ENOMEM : RMQ_EIO;
}

int store_syncer_start(const char *path, int64_t interval_ms, struct store_syncer **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (interval_ms <= 0) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store syncer: interval must be positive");
        return RMQ_EINVAL;
    }
    struct store_syncer *y = rmq_calloc(1, sizeof *y);
    if (!y) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store syncer: %s", rmq_strerror(RMQ_ENOMEM));
        return RMQ_ENOMEM;
    }
    y->interval_ms = interval_ms;
    size_t plen = strlen(path);
    y->wal_path = rmq_malloc(plen + sizeof "-wal");
    if (!y->wal_path) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store syncer: %s", rmq_strerror(RMQ_ENOMEM));
        rmq_free(y);
        return RMQ_ENOMEM;
    }
    memcpy(y->wal_path, path, plen);
    memcpy(y->wal_path + plen, "-wal", sizeof "-wal");
    int e = open_db(y, path, err, errlen);
    if (e) {
        (void)sqlite3_close(y->db);
        rmq_free(y->wal_path);
        rmq_free(y);
        return e;
    }
    pthread_condattr_t ca;
    int prc = pthread_condattr_init(&ca);
    if (prc == 0) {
        prc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (prc == 0 && (prc = pthread_cond_init(&y->cv, &ca)) == 0 &&
            (prc = pthread_cond_init(&y->done_cv, &ca)) != 0)
            (void)pthread_cond_destroy(&y->cv);
        (void)pthread_condattr_destroy(&ca); /* cannot fail for an initialised attr */
    }
    if (prc == 0 && (prc = pthread_mutex_init(&y->mu, NULL)) != 0) {
        (void)pthread_cond_destroy(&y->cv);
        (void)pthread_cond_destroy(&y->done_cv);
    }
    if (prc == 0) {
        /* The thread inherits this mask: with every signal blocked there, a
         * SIGTERM always reaches the loop's signalfd, whichever thread the
         * kernel would have picked. */
        sigset_t all, old;
        (void)sigfillset(&all); /* cannot fail for a valid pointer */
        prc = pthread_sigmask(SIG_SETMASK, &all, &old);
        if (prc == 0) {
            prc = pthread_create(&y->thread, NULL, run, y);
            (void)pthread_sigmask(SIG_SETMASK, &old, NULL); /* restores a mask we just read */
        }
        if (prc != 0) {
            (void)pthread_mutex_destroy(&y->mu);
            (void)pthread_cond_destroy(&y->cv);
            (void)pthread_cond_destroy(&y->done_cv);
        }
    }
    if (prc != 0) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store syncer: thread: %s", strerror(prc));
        (void)sqlite3_close(y->db);
        rmq_free(y->wal_path);
        rmq_free(y);
        return -prc;
    }
    *out = y;
    return 0;
}

void store_syncer_kick(struct store_syncer *y)
{
    pthread_mutex_lock(&y->mu);
    y->kicked = true;
    pthread_cond_signal(&y->cv);
    pthread_mutex_unlock(&y->mu);
}

void store_syncer_stats(struct store_syncer *y, struct store_syncer_stats *out)
{
    pthread_mutex_lock(&y->mu);
    *out = y->stats;
    pthread_mutex_unlock(&y->mu);
}

void store_syncer_stop(struct store_syncer *y)
{
    if (!y)
        return;
    pthread_mutex_lock(&y->mu);
    y->stop = true;
    pthread_cond_signal(&y->cv);
    pthread_mutex_unlock(&y->mu);
    int rc = pthread_join(y->thread, NULL);
    assert(rc == 0); /* joinable and not yet joined: cannot fail */
    assert(!atomic_load(&y->truncating));
    checkpoint(y);
    rc = sqlite3_close(y->db);
    assert(rc == SQLITE_OK); /* no statements are ever prepared on it, so it cannot be busy */
    (void)rc;
    (void)pthread_mutex_destroy(&y->mu);
    (void)pthread_cond_destroy(&y->cv);
    (void)pthread_cond_destroy(&y->done_cv);
    rmq_free(y->wal_path);
    rmq_free(y);
}

void store_syncer_yield(struct store_syncer *y)
{
    if (!y || !atomic_load(&y->truncating))
        return;
    struct timespec until = rmq_clock_after_ms(CLOCK_MONOTONIC, SYNCER_YIELD_MAX_MS);
    pthread_mutex_lock(&y->mu);
    while (atomic_load(&y->truncating))
        if (pthread_cond_timedwait(&y->done_cv, &y->mu, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&y->mu);
}
