/* store.h — the SQLite writer: schema migrations, batched writes, recovery.
 *
 * Owned by the loop thread. Every write call appends to one open batch
 * transaction (opened on the first write after a commit); store_commit
 * commits it, and the loop calls it once per iteration before it sends any
 * reply that reports a stored fact (PROTOCOL (README, "Acknowledged means stored"): persist before
 * acknowledging). The database is in WAL mode so store_read connections on other threads see consistent
 * snapshots. Schema: schema/NNNN_*.sql applied in order at open, the applied count kept in PRAGMA
 * user_version. All functions return 0 or a negative RMQ_E* code (RMQ_EIO on SQLite failure, with
 * store_errmsg() describing it). Strings are borrowed.
 *
 * This header declares store.c's functions (open, close, commits, lazy
 * sync, recovery, reset, the batch's state) and includes the writes, one
 * header per file: store_members.h, store_topics.h, store_groups.h,
 * store_maint.h. Callers include this one.
 */
#ifndef RMQ_STORE_H
#define RMQ_STORE_H

#include "store_groups.h"
#include "store_maint.h"
#include "store_members.h"
#include "store_messages.h"
#include "store_topics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* Opens (creating if needed, file mode 0600) and migrates the database; new
 * *out owned by the caller (store_close). err gets a reason on failure. */
int store_open(const char *path, struct store **out, char *err, size_t errlen);
/* Commits any open batch and closes. Accepts NULL. */
void store_close(struct store *s);
/* Text of the last SQLite error (borrowed, valid until the next call). */
const char *store_errmsg(const struct store *s);
/* A number unique to this open of the database (increments per open); the
 * loop builds channel ids from it so ids never repeat across restarts. */
int64_t store_run_id(const struct store *s);

/* Startup recovery: every member and channel left open by a previous run is
 * marked gone (reason "restart"), with one "restart" event per group that
 * had live members. *groups_out (may be NULL) receives that group count.
 * Commits before returning. */
int store_recover(struct store *s, int64_t now_ms, int *groups_out);

/* Deletes every topic, offset, client, channel, group, member, subscription
 * and event (the admin API's reset), as part of the batch. */
int store_reset(struct store *s);

/* Commits the open batch (no-op when none is open), fsynced before it
 * returns: what an acknowledgement may rely on. */
int store_commit(struct store *s);
/* Commits the open batch without waiting for the disk when store_lazy_sync
 * is on (otherwise exactly store_commit): visible to readers at once and
 * safe from a process crash, durable against power loss within the lazy
 * sync interval. For batches no reply depends on. */
int store_commit_lazy(struct store *s);
/* Turns lazy commits on: starts the background checkpoint thread
 * (store_sync.h) that fsyncs them every interval_ms. Call between batches.
 * RMQ_ESTATE if already on or a batch is open. */
int store_lazy_sync(struct store *s, int64_t interval_ms);
struct store_syncer_stats;
/* Copies the checkpoint thread's counters; false when lazy sync is off. */
bool store_sync_stats(struct store *s, struct store_syncer_stats *out);
bool store_in_batch(const struct store *s);
/* Whether store_commit has something to report: an open batch, or one
 * SQLite rolled back by itself (a full disk, an I/O error) since the last
 * commit. Callers that decide whether to commit ask this, not
 * store_in_batch: a batch lost with nothing written after it is still a
 * batch whose held replies must fail. */
bool store_commit_due(const struct store *s);
/* Counts write calls (each joins the open batch): a caller compares two
 * readings to learn whether something it did is waiting for a commit. */
uint64_t store_write_count(const struct store *s);
/* While on, writes are soft: refreshed times nobody waits for, left out of
 * store_write_count so the loop may answer at once and commit them later. */
void store_soft_writes(struct store *s, bool on);

#endif
