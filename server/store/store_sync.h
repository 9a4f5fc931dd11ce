/* store_sync.h — a background thread that makes lazily committed batches
 * durable.
 *
 * The loop commits most batches (heartbeat times, membership history)
 * without an fsync (its connection runs at synchronous=OFF): the commit
 * reaches the WAL file in the page cache, safe from a process crash, and the
 * loop never waits on the disk for facts nobody has been promised. This thread, on its own SQLite connection,
 * runs a PASSIVE checkpoint every interval (and sooner when the writer reports a large WAL). A checkpoint
 * fsyncs the WAL before copying it into the database and fsyncs the database after, so a lazily committed
 * batch is durable within one interval. When the WAL file has grown past 4 MiB
 * (PASSIVE checkpoints never let it start over while the loop keeps
 * committing), a TRUNCATE checkpoint follows the PASSIVE one and cuts it to
 * zero bytes; it holds the write lock only for the frames committed since
 * the PASSIVE pass. Batches that back an acknowledgement are still fsynced by the loop
 * before the reply (store_commit syncs the WAL after COMMIT).
 *
 * Channel with the loop thread: store_syncer_kick() (a mutex and condition
 * variable, never blocks on I/O) and the counters read by
 * store_syncer_stats(). The thread touches nothing but its own connection.
 */
#ifndef RMQ_STORE_SYNC_H
#define RMQ_STORE_SYNC_H

#include <stddef.h>
#include <stdint.h>

struct store_syncer;

struct store_syncer_stats {
    uint64_t checkpoints; /* PASSIVE checkpoints run (each syncs the WAL) */
    uint64_t failures;    /* checkpoints that returned an error other than BUSY */
    uint64_t truncations; /* TRUNCATE checkpoints that cut a WAL grown past 4 MiB */
    uint64_t last_us;     /* duration of the last checkpoint */
    uint64_t max_us;      /* longest checkpoint so far */
};

/* Opens its own connection to path (which must exist, in WAL mode) and
 * starts the thread. *out is owned by the caller (store_syncer_stop).
 * err gets a reason on failure. */
int store_syncer_start(const char *path, int64_t interval_ms, struct store_syncer **out, char *err,
                       size_t errlen);
/* Asks for a checkpoint now (the WAL grew); returns at once. */
void store_syncer_kick(struct store_syncer *y);
/* Called by the writer before it begins a batch: while a TRUNCATE
 * checkpoint wants or holds the write lock, waits for its end (at most
 * 100 ms, a few milliseconds in practice). Returns at once otherwise (one
 * atomic load). Accepts NULL. */
void store_syncer_yield(struct store_syncer *y);
/* Runs a last checkpoint, joins the thread and frees it. Accepts NULL. */
void store_syncer_stop(struct store_syncer *y);
void store_syncer_stats(struct store_syncer *y, struct store_syncer_stats *out);

#endif
