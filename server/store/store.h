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
 */
#ifndef RMQ_STORE_H
#define RMQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

struct store_topic_broker {
    const char *broker_name;
    int read_queue_nums;
    int write_queue_nums;
    int perm;
};

struct store_subscription {
    const char *topic;
    const char *sub_string;
    const char *expression_type;
    const char *tags_json; /* JSON array text of tags, e.g. ["a","b"] */
    int64_t sub_version;
};

struct store_event {
    int64_t ts_ms;
    const char *group;
    const char *kind; /* "join", "leave", "close", "unregister", "expire", "subscription", "restart", "stop",
                         "resync" */
    const char *client_id;   /* may be NULL */
    int64_t channel_id;      /* 0 when not about one channel */
    const char *before_json; /* member list before, JSON array text */
    const char *after_json;  /* member list after, JSON array text */
    /* Instead of the two lists: only how the list changed (schema
     * 0002_event_deltas.sql). delta_index: the position client_id went in
     * at (join) or came out of (a leave); -1 for an unchanged list. */
    bool delta;
    int64_t delta_index;
};

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

typedef int (*store_topic_cb)(void *ctx, const char *topic, const struct store_topic_broker *brokers,
                              size_t n);
typedef int (*store_offset_cb)(void *ctx, const char *group, const char *topic, int queue_id, int64_t offset);
/* Calls cb for each stored topic / offset; a non-zero cb return stops and is returned. */
int store_load_topics(struct store *s, store_topic_cb cb, void *ctx);
int store_load_offsets(struct store *s, store_offset_cb cb, void *ctx);

/* Batched writes. */
int store_put_topic(struct store *s, const char *topic, const struct store_topic_broker *brokers, size_t n,
                    int64_t now_ms);
int store_delete_topic(struct store *s, const char *topic);
int store_put_offset(struct store *s, const char *group, const char *topic, int queue_id, int64_t offset,
                     int64_t now_ms);
int store_put_client(struct store *s, const char *client_id, const char *language, int version,
                     int64_t now_ms);
int store_open_channel(struct store *s, int64_t channel_id, const char *remote_addr, int64_t now_ms);
int store_close_channel(struct store *s, int64_t channel_id, const char *reason, int64_t now_ms);
int store_put_group(struct store *s, const char *group, const char *consume_type, const char *message_model,
                    const char *consume_from_where, int64_t now_ms);
int store_member_join(struct store *s, const char *group, int64_t channel_id, const char *client_id,
                      int64_t now_ms);
int store_member_heartbeat(struct store *s, const char *group, int64_t channel_id, int64_t now_ms);
int store_member_leave(struct store *s, const char *group, int64_t channel_id, const char *reason,
                       int64_t now_ms);
/* Replaces the group's whole subscription set. */
int store_put_subscriptions(struct store *s, const char *group, const struct store_subscription *subs,
                            size_t n, int64_t now_ms);
/* Appends an event; *id_out (may be NULL) receives its id. */
int store_append_event(struct store *s, const struct store_event *ev, int64_t *id_out);

/* ---- upkeep (store_maint.c) ---- */

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

/* ---- subscription-group configs and offset deletions (store_groups.c) ---- */

/* Replaces group's config (a JSON object's text, kept as given). In the batch. */
int store_put_group_config(struct store *s, const char *group, const char *config_json, int64_t now_ms);
/* Deletes group's config (no row is not an error). In the batch. */
int store_delete_group_config(struct store *s, const char *group);
/* Deletes the committed offsets of group and/or topic (NULL = any). In the batch. */
int store_delete_offsets(struct store *s, const char *group, const char *topic);
typedef int (*store_group_config_cb)(void *ctx, const char *group, const char *config_json);
/* Calls cb per stored config, by group name; a non-zero cb return stops and is returned. */
int store_load_group_configs(struct store *s, store_group_config_cb cb, void *ctx);
typedef int (*store_offset_time_cb)(void *ctx, const char *group, const char *topic, int queue_id,
                                    int64_t updated_ms);
/* Calls cb with each stored offset's last commit time. */
int store_load_offset_times(struct store *s, store_offset_time_cb cb, void *ctx);

#endif
