/* registry.h — live consumer-group state owned by the loop thread.
 *
 * Channels (one per TCP connection) and groups (a mship_group each, from
 * common/broker/membership.h). The registry applies heartbeats, unregisters,
 * channel closes and expiry, and reports every membership event through
 * hooks, which the server uses to persist, log and schedule notifications.
 * A group whose last member leaves is removed from the live view (its
 * history stays in the store); group names ever seen stay "known" so their
 * retry topic keeps resolving. Loop thread only.
 */
#ifndef RMQ_REGISTRY_H
#define RMQ_REGISTRY_H

#include "hashmap.h"
#include "membership.h"
#include "rmq_body.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;

struct reg_hb_ref {
    struct reg_group *group; /* borrowed: valid while the registry's groups_epoch is unchanged */
    uint64_t state_version;
};

struct reg_channel {
    uint64_t id;
    struct conn *conn; /* borrowed; NULL once closed */
    char peer[64];
    int64_t opened_ms;
    char *client_id; /* owned: the id of its latest heartbeat */
    int32_t language, version;
    int64_t last_hb_ms;
    int64_t client_stored_ms; /* for the owner: when the client row was last persisted */
    double rate_tokens;       /* for the owner: request-rate budget */
    bool stored;              /* for the owner: its row is in the store */
    /* The last heartbeat applied in full: a byte-identical repeat on this
     * channel, with every group still at the state version it left, would
     * change nothing, so it only refreshes timestamps (registry_heartbeat_repeat). */
    uint64_t hb_hash;
    size_t hb_len;
    int32_t hb_language, hb_version;
    bool hb_sub_change;
    uint64_t hb_epoch;          /* the registry's groups_epoch when hb_refs were taken */
    struct reg_hb_ref *hb_refs; /* owned */
    size_t hb_nrefs;
    int64_t rate_refill_ms;
    char **groups; /* owned names of the consumer groups it is a member of */
    size_t ngroups, groups_cap;
    char **producers; /* owned producer group names of its latest heartbeat */
    size_t nproducers;
};

struct reg_group {
    struct mship_group g;
    /* Membership events stored since the last one with full member lists
     * (the owner's bookkeeping; UINT32_MAX asks for full lists next). */
    uint32_t events_since_full;
    /* No member's last heartbeat is older than this (a lower bound kept by
     * registry_expire; joins and heartbeats only raise the true minimum),
     * so a scan skips the group while it cannot hold an expired member. */
    int64_t expiry_floor_ms;
    bool notify_pending;
    struct reg_group *next_pending;
    int64_t notify_marked_ms; /* when it became pending (registry_mark_notify_at) */
    int64_t notify_sent_ms;   /* when it was last taken to be notified; INT64_MIN: never */
};

/* Why a member left; also the event kind. */
enum reg_leave_reason { REG_LEAVE_CLOSE, REG_LEAVE_UNREGISTER, REG_LEAVE_EXPIRE };
const char *reg_leave_reason_name(enum reg_leave_reason r);

struct registry_hooks {
    void *ctx;
    /* A channel joined g (m is the new member). */
    void (*joined)(void *ctx, struct reg_group *g, const struct mship_member *m);
    /* A member left; m is valid only during the call; index = its old position. */
    void (*left)(void *ctx, struct reg_group *g, const struct mship_member *m, size_t index,
                 enum reg_leave_reason why);
    /* The group's subscription table gained or lost topics (flags from mship). */
    void (*subscriptions_changed)(void *ctx, struct reg_group *g, unsigned flags);
    /* Every accepted heartbeat of a member (store refresh, retry-topic creation). */
    void (*heartbeat)(void *ctx, struct reg_group *g, const struct mship_member *m, unsigned flags);
    /* The group has no member left and is about to be removed from the live view. */
    void (*group_empty)(void *ctx, struct reg_group *g);
};

/* A known group name in the registry's sorted index (a skip list: the
 * admin API pages through names in O(log n + page) without sorting). */
struct reg_name {
    char *name; /* points into this allocation */
    unsigned level;
    struct reg_name *next[]; /* level entries */
};
#define REG_NAME_LEVELS 24

struct registry {
    struct hashmap groups;   /* name -> struct reg_group* (owned) */
    struct hashmap channels; /* uint64 id -> struct reg_channel* (owned) */
    struct hashmap known;    /* group names ever seen -> struct reg_name* (owned, in names) */
    struct reg_name *names_head[REG_NAME_LEVELS]; /* the known names in byte order (strcmp) */
    unsigned names_level;                         /* levels in use */
    uint32_t names_rand;                          /* xorshift state for node levels */
    struct registry_hooks hooks;
    struct reg_group *pending; /* groups with a change to notify */
    uint64_t groups_epoch;     /* bumped whenever a group is freed */
};

void registry_init(struct registry *r, const struct registry_hooks *hooks);
void registry_free(struct registry *r);

/* New channel for a connection. 0 or RMQ_ENOMEM. */
int registry_channel_open(struct registry *r, uint64_t id, struct conn *conn, const char *peer,
                          int64_t now_ms);
struct reg_channel *registry_channel(const struct registry *r, uint64_t id);
/* The channel closed: removes it from every group (each a change) and frees it. */
void registry_channel_close(struct registry *r, uint64_t id);

struct reg_group *registry_group(const struct registry *r, const char *name);
bool registry_group_known(const struct registry *r, const char *name);
/* Marks a name as known (e.g. loaded from the store at start). */
int registry_mark_known(struct registry *r, const char *name);
/* The first known name sorting (strcmp) after `after`, or the first of all
 * when after is NULL; NULL past the end. O(log n). Walk on with ->next[0].
 * Valid until the registry is freed (known names are never dropped). */
const struct reg_name *registry_known_after(const struct registry *r, const char *after);

struct registry_hb_result {
    bool sub_change; /* IS_SUB_CHANGE for the reply */
};
/* What one heartbeat may carry (the daemon's --max-* flags; replay uses the
 * defaults, REGISTRY_LIMITS_DEFAULT). */
struct registry_limits {
    int64_t max_client_id_bytes;
    int64_t max_groups_per_client;
    int64_t max_subscriptions;
    int64_t max_heartbeat_subscriptions; /* over all groups of one heartbeat */
};
#define REGISTRY_LIMITS_DEFAULT                                                                              \
    {                                                                                                        \
        255, 256, 256, 4096                                                                                  \
    }
/* Whether hb may be applied: within lim, and with group and topic names the
 * store and routes can carry. 0, or RMQ_E2BIG / RMQ_EINVAL with a remark
 * naming the limit in why. */
int registry_heartbeat_check(const struct rmq_heartbeat *hb, const struct registry_limits *lim, char *why,
                             size_t len);

/* Applies a parsed heartbeat arriving on channel id. body/len (may be NULL)
 * are its raw bytes, remembered for registry_heartbeat_repeat. 0 or
 * RMQ_ENOMEM. */
int registry_heartbeat(struct registry *r, uint64_t id, int32_t language, int32_t version,
                       const struct rmq_heartbeat *hb, const uint8_t *body, size_t len, int64_t now_ms,
                       struct registry_hb_result *res);
/* The cheap path for the steady state: when body is byte-identical to the
 * channel's last fully applied heartbeat and nothing group-wide changed
 * since, refreshes the members' heartbeat times (heartbeat hook included)
 * and returns true; otherwise returns false and the caller parses and calls
 * registry_heartbeat. */
bool registry_heartbeat_repeat(struct registry *r, uint64_t id, int32_t language, int32_t version,
                               const uint8_t *body, size_t len, int64_t now_ms,
                               struct registry_hb_result *res);
/* UNREGISTER_CLIENT for one consumer group on channel id. Returns 1 if a
 * member was removed, 0 if the channel was not in the group. */
int registry_unregister(struct registry *r, uint64_t id, const char *group);
/* Removes (group, channel) memberships older than expiry_ms; the ids of
 * channels that lost a membership go to ids (duplicates removed). Returns
 * how many. The caller closes those connections. A membership is removed
 * only when its channel fits in ids: when the result is max, call again
 * (the same now_ms) until it is less, or some expired channels stay open. */
/* How many consumer groups channel id would be a member of after hb (its
 * groups so far plus the new ones hb names): the limit on groups per
 * connection holds across heartbeats, not only within one. */
size_t registry_channel_groups_after(const struct registry *r, uint64_t id, const struct rmq_heartbeat *hb);
size_t registry_expire(struct registry *r, int64_t now_ms, int64_t expiry_ms, uint64_t *ids, size_t max);

/* Flags g for a NOTIFY before the loop sleeps (coalesced per group). */
void registry_mark_notify(struct registry *r, struct reg_group *g);
/* Pops the list of groups flagged for notify (their flags cleared). */
struct reg_group *registry_take_pending(struct registry *r);
/* registry_mark_notify, remembering now_ms as when the change came
 * (unless g was already pending: its NOTIFY is owed since then). */
void registry_mark_notify_at(struct registry *r, struct reg_group *g, int64_t now_ms);
/* Pops the pending groups whose NOTIFY is due at now_ms
 * (notify_policy_due_ms; their flags cleared, their sent time set to
 * now_ms); the others stay pending and *next_due_ms gets the earliest time
 * one of them falls due (INT64_MAX: none). */
struct reg_group *registry_take_due(struct registry *r, int64_t now_ms, int64_t coalesce_ms, bool backlogged,
                                    int64_t *next_due_ms);
/* When the earliest pending group falls due (INT64_MAX: none pending). */
int64_t registry_next_due(const struct registry *r, int64_t coalesce_ms, bool backlogged);

/* Asserts (debug builds) every invariant of the registry: each membership
 * listed by both its channel and its group, counts matching, the pending
 * list exactly the flagged groups, remembered heartbeats pointing at live
 * groups, the name index sorted and complete. True when they hold. O(all
 * the state): for tests, and for the operations that walk it anyway. */
bool registry_sanity(const struct registry *r);

#endif
