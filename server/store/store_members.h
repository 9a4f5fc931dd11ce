/* store_members.h — the writer's membership rows (store_members.c):
 * clients, channels, consumer groups, members, subscriptions, the event
 * history, and the ending of what earlier runs left live. Included by
 * store.h; strings are borrowed; 0 or a negative RMQ_E* code (store.h).
 */
#ifndef RMQ_STORE_MEMBERS_H
#define RMQ_STORE_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

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

/* Batched writes. */
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

/* Ends every member and channel of the runs before before_run (reason and
 * event kind: kind), one event per group that had live members; *groups
 * (may be NULL) gets their count. In the batch (store_recover at start,
 * store_end_run at a clean stop). */
int store_end_runs_before(struct store *s, int64_t before_run, const char *kind, int64_t now_ms, int *groups);

#endif
