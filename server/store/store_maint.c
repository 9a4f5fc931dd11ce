/* store_maint.c — the writer's upkeep: pruning closed channel rows,
 * re-writing membership after writes were lost, and ending the run's
 * members at a clean stop (store_maint.h).
 *
 * Owned by the loop thread, on the writer's connection (store.c); every
 * call joins the open batch like any other write.
 */
#include "store_maint.h"

#include "err.h"
#include "store_exec.h"
#include "store_members.h"

#include <assert.h>
#include <sqlite3.h>

/* How often store_prune runs: once a second, or at once again while a full
 * batch was pruned (the table is behind its bound). */
#define PRUNE_EVERY_MS 1000
#define PRUNE_BEHIND_MS 100
/* How often store_resync_due lets a re-write be tried while the store
 * keeps failing (a full disk): each attempt is a batch of every member. */
#define RESYNC_RETRY_MS 1000

int store_prune(struct store *s, int64_t now_ms, int *pruned)
{
    if (pruned)
        *pruned = 0;
    if (now_ms < s->prune_next_ms)
        return 0;
    s->prune_next_ms = now_ms + PRUNE_EVERY_MS;
    int n = 0;
    int64_t before = now_ms - STORE_KEEP_CLOSED_MS;
    int err = store_write_begin(s);
    if (err)
        return err;
    err = store_exec_st(s, ST_PRUNE_MEMBERS, NULL, "IId", (int64_t)STORE_KEEP_CLOSED_CHANNELS, before,
                        STORE_PRUNE_BATCH);
    if (!err)
        err = store_exec_st(s, ST_PRUNE_CHANNELS, &n, "IId", (int64_t)STORE_KEEP_CLOSED_CHANNELS, before,
                            STORE_PRUNE_BATCH);
    err = store_write_end(s, err);
    assert(store_batch_sanity(s) && n <= STORE_PRUNE_BATCH);
    if (!err && n == STORE_PRUNE_BATCH)
        s->prune_next_ms = now_ms + PRUNE_BEHIND_MS;
    if (!err && pruned)
        *pruned = n;
    return err;
}

/* ---- re-writing membership after lost writes -----------------------------
 * store_fail and a failed commit set resync_needed: a join, leave, close or
 * event of that batch (or write) is not in the store, and the history would
 * say the wrong thing until the client's next change (a member live in the
 * store after it left, a close without its join). The loop answers by
 * re-writing what it knows (store.h). */

bool store_resync_due(struct store *s, int64_t now_ms)
{
    if (!s->resync_needed || now_ms < s->resync_next_ms)
        return false;
    s->resync_next_ms = now_ms + RESYNC_RETRY_MS;
    s->resync_needed = false; /* set again by any failure of the re-write or its commit */
    s->resync_in_batch = true;
    return true;
}

bool store_resync_pending(const struct store *s)
{
    return s->resync_needed || s->resync_in_batch;
}

int store_resync_channel(struct store *s, int64_t channel_id, const char *remote_addr, int64_t opened_ms)
{
    return store_write_one(s, NULL, ST_RESYNC_CHANNEL, "IIsI", channel_id, s->run_id, remote_addr, opened_ms);
}

int store_resync_group(struct store *s, const char *group, const char *live_channels_json, int64_t now_ms)
{
    return store_write_one(s, NULL, ST_RESYNC_END_MEMBERS, "ssI", group, live_channels_json, now_ms);
}

int store_resync_finish(struct store *s, const char *live_groups_json, const char *live_channels_json,
                        int64_t now_ms)
{
    int err = store_write_begin(s);
    if (err)
        return err;
    err = store_exec_st(s, ST_RESYNC_END_GROUPS, NULL, "sI", live_groups_json, now_ms);
    if (!err)
        err = store_exec_st(s, ST_RESYNC_CLOSE_CHANNELS, NULL, "sI", live_channels_json, now_ms);
    err = store_write_end(s, err);
    assert(store_batch_sanity(s));
    return err;
}

int store_end_run(struct store *s, int64_t now_ms, int *groups)
{
    if (groups)
        *groups = 0;
    return store_end_runs_before(s, s->run_id + 1, "stop", now_ms, groups);
}
