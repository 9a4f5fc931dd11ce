/* store_maint.h — the writer's upkeep (store_maint.c): pruning closed
 * channel rows, re-writing membership after writes were lost, and ending
 * the run's members at a clean stop. Included by store.h; strings are
 * borrowed; 0 or a negative RMQ_E* code (store.h).
 */
#ifndef RMQ_STORE_MAINT_H
#define RMQ_STORE_MAINT_H

#include <stdbool.h>
#include <stdint.h>

struct store;

/* Closed channel rows kept: the newest STORE_KEEP_CLOSED_CHANNELS closed
 * ones, and none closed more than STORE_KEEP_CLOSED_MS ago. Beyond that
 * they are deleted with their member rows; the events table keeps the
 * whole history. */
#define STORE_KEEP_CLOSED_CHANNELS 5000
#define STORE_KEEP_CLOSED_MS (24LL * 3600 * 1000)
#define STORE_PRUNE_BATCH 1000
/* At most once a second (every 100 ms while a full batch was deleted),
 * deletes up to STORE_PRUNE_BATCH closed channel rows beyond the bound,
 * with their member rows, as part of the batch; *pruned (may be NULL) gets
 * how many channels went. A no-op (0) when not due. */
int store_prune(struct store *s, int64_t now_ms, int *pruned);

/* A write or a commit failed (a full disk, a lock held elsewhere): joins,
 * leaves and events of the lost batch are missing from the store. When
 * this says true (at most once a second while it is pending), the caller
 * re-writes the membership it knows in the open batch: every live stored
 * channel (store_resync_channel), every live group's row, members,
 * subscriptions and an event with its full list, then
 * store_resync_group per group and store_resync_finish, which end every
 * member and channel the store still has live and the caller does not.
 * Done when a commit of that batch succeeds; any failure asks again. */
bool store_resync_due(struct store *s, int64_t now_ms);
bool store_resync_pending(const struct store *s);
/* The channel's row, added if it is missing. */
int store_resync_channel(struct store *s, int64_t channel_id, const char *remote_addr, int64_t opened_ms);
/* Ends the group's live member rows whose channel is not in
 * live_channels_json (a JSON array of channel ids). */
int store_resync_group(struct store *s, const char *group, const char *live_channels_json, int64_t now_ms);
/* Ends the live member rows of every group not in live_groups_json (a JSON
 * array of names) and closes every open channel not in live_channels_json. */
int store_resync_finish(struct store *s, const char *live_groups_json, const char *live_channels_json,
                        int64_t now_ms);
/* At a clean stop, after the last connection closed: every member and
 * channel the store still has live is ended (reason "stop"), with one
 * "stop" event per group that had such members (*groups, may be NULL).
 * In the batch; the caller commits. */
int store_end_run(struct store *s, int64_t now_ms, int *groups);

#endif
