/* membership.h — pure consumer-group change detection, as the broker does it.
 *
 * A group's live view: its members (one per channel, i.e. per TCP
 * connection, each with the client id it last reported) and ONE subscription
 * table for the whole group (PROTOCOL: docs/protocol.md §4.1, the table is per group, not per
 * client). mship_apply_heartbeat applies one ConsumerData of a heartbeat
 * arriving on a channel and reports what changed:
 *   - a channel new to the group is a change (JOINED);
 *   - a topic added to or removed from the group's table is a change;
 *   - a higher subVersion for a topic already present replaces the stored
 *     subscription but is NOT a change (PROTOCOL: docs/protocol.md §4.2 step 4);
 *   - a known channel reporting another client id replaces it, not a change;
 *   - heartbeat v2 with withoutSub leaves the subscriptions alone.
 * Removal (close, unregister, expiry) is mship_remove_channel. The daemon and
 * the trace replayer both use this file, so one set of rules serves both.
 * No I/O, no clock (now_ms comes in), no globals. One thread.
 */
#ifndef RMQ_MEMBERSHIP_H
#define RMQ_MEMBERSHIP_H

#include "rmq_body.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mship_member {
    uint64_t channel_id;
    char *client_id; /* owned */
    int32_t language;
    int32_t version;
    int64_t joined_ms;
    int64_t last_hb_ms;
    int64_t stored_hb_ms; /* for the owner: when last_hb_ms was last persisted */
    uint32_t join_seq;    /* increasing in join order within the group (the index's value) */
};

struct mship_group {
    char *name;       /* owned */
    int consume_type; /* of the latest heartbeat (PROTOCOL (docs/protocol.md §4.1): overwritten by every
                         heartbeat) */
    int message_model;
    int consume_from_where;
    struct mship_member *members; /* owned, in join order */
    size_t nmembers, members_cap;
    struct rmq_subscription *subs; /* owned, in insertion order */
    size_t nsubs, subs_cap;
    int32_t fingerprint; /* heartbeat v2 fingerprint of the last full heartbeat */
    bool has_fingerprint;
    /* Bumped whenever a heartbeat changes anything group-wide (the
     * subscription table, consume type, model, from-where): a repeat of a
     * heartbeat applied at the same version would change nothing. */
    uint64_t state_version;
    /* channel id -> the member's join_seq: open addressing, linear
     * probing, at most half full (a slot costs 12 bytes). Members stay in
     * join order, so the seq finds the position by binary search; storing
     * the position itself made every removal rewrite the slots of all the
     * members after it (O(n^2) for a mass disconnect). */
    uint64_t *idx_keys;     /* owned */
    uint32_t *idx_vals;     /* owned: join_seq, 0 = empty slot */
    size_t idx_cap;         /* power of two, or 0 */
    uint32_t next_join_seq; /* the last seq handed out (0 = none yet) */
};

enum mship_flags {
    MSHIP_JOINED = 1u << 0,
    MSHIP_SUB_ADDED = 1u << 1,
    MSHIP_SUB_REMOVED = 1u << 2,
    MSHIP_SUB_REPLACED = 1u << 3,      /* newer subVersion: stored, not a change */
    MSHIP_CLIENT_ID_CHANGED = 1u << 4, /* channel reported a new id: not a change */
};
#define MSHIP_CHANGE_MASK (MSHIP_JOINED | MSHIP_SUB_ADDED | MSHIP_SUB_REMOVED)

struct mship_heartbeat_in {
    uint64_t channel_id;
    const char *client_id;
    int32_t language;
    int32_t version;
    const struct rmq_consumer_data *cd;
    int32_t fingerprint; /* 0 = heartbeat v1 */
    bool without_sub;
    int64_t now_ms;
};

struct mship_outcome {
    unsigned flags;      /* enum mship_flags */
    bool changed;        /* flags & MSHIP_CHANGE_MASK */
    bool sub_change;     /* IS_SUB_CHANGE for the v2 reply: the client should send its full subscriptions */
    size_t member_index; /* index of the heartbeating member after the call */
};

/* Initialises an empty group named name (copied). 0 or RMQ_ENOMEM. */
int mship_group_init(struct mship_group *g, const char *name);
void mship_group_clear(struct mship_group *g);

/* Applies one ConsumerData (in->cd->group must equal g->name). 0 or
 * RMQ_ENOMEM; on RMQ_ENOMEM the group is left consistent (the heartbeat may
 * be partly applied, never half-inserted). */
int mship_apply_heartbeat(struct mship_group *g, const struct mship_heartbeat_in *in,
                          struct mship_outcome *out);

/* Index of the first member reporting client_id, or -1. */
long mship_find_client(const struct mship_group *g, const char *client_id);
/* Index of the member on channel_id, or -1. */
long mship_find(const struct mship_group *g, uint64_t channel_id);
/* Removes the member on channel_id: returns 1 and moves it into *removed
 * (caller frees removed->client_id with rmq_free; may be NULL to discard),
 * *index_out its old index; 0 when absent. */
int mship_remove_channel(struct mship_group *g, uint64_t channel_id, struct mship_member *removed,
                         size_t *index_out);

/* Channel ids of members whose last heartbeat is more than expiry_ms before
 * now_ms, up to max, in member order. Returns how many. */
size_t mship_collect_expired(const struct mship_group *g, int64_t now_ms, int64_t expiry_ms, uint64_t *ids,
                             size_t max);

/* Whether a change to g is notified (PROTOCOL (docs/protocol.md §4.4): broadcast groups are not). */
bool mship_notifies(const struct mship_group *g);

/* Subscription of topic, or NULL. */
const struct rmq_subscription *mship_find_sub(const struct mship_group *g, const char *topic);

#endif
