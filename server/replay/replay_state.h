/* replay_state.h — the replay engine's state, shared by the files
 * of the engine (replay*.c), and the primitives every one of them uses on it
 * (replay_state.c): the action heap, the heartbeat order, the lookups. Not an
 * interface: nothing outside server/replay includes it. One thread. */
#ifndef RMQ_REPLAY_STATE_H
#define RMQ_REPLAY_STATE_H

#include "allocate.h"
#include "buf.h"
#include "hashmap.h"
#include "registry.h"
#include "replay_options.h"
#include "trace_fmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_NO_TIME INT64_MIN

/* One broker's member view (a real cluster has one per broker; rmqcoord
 * traces have one, the coordinator "", unless connect lines name brokers). */
struct rp_view {
    struct replay *rp; /* back pointer for the registry hooks */
    char *name;        /* owned */
    struct registry reg;
};

struct rp_client;

/* An interval the recorded holdings show (replay_truth.c): a real overlap or
 * gap, or a disagreement between the model and the clients' answers. */
enum { RP_T_OVERLAP = 1, RP_T_GAP, RP_T_DIS_QUEUE, RP_T_DIS_CLIENT };
struct rp_tiv {
    int kind;
    int64_t start, end;
    char *who;  /* owned: holders (real intervals), or what the model and the clients had */
    char *why;  /* owned: disagreements, the one-line explanation */
    bool model; /* disagreements: the model is wrong (else the client did something the model did not) */
    bool open;
};
struct rp_tivs {
    struct rp_tiv *v;
    size_t n, cap;
    /* The interval in progress: kind 0 when none. */
    struct rp_tiv cur;
    int64_t last; /* the last sample that still showed it */
};

struct rp_conn {
    uint64_t id;
    struct rp_view *view; /* borrowed */
    bool open, deaf;
    /* The previous heartbeat body and its parse, reused when a client sends
     * the same bytes again (nearly every heartbeat). */
    uint8_t *last_body; /* owned */
    size_t last_len;
    uint64_t last_tag; /* trace_event.tag of a line carrying last_body, 0 if none */
    struct rmq_heartbeat hb;
    bool hb_valid, hb_cached;
    uint64_t parse_seq;         /* bumped at every fresh parse */
    struct rp_client **clients; /* borrowed, alive ones */
    size_t nclients, clients_cap;
};

/* The queues a client holds of one topic. */
struct rp_hold {
    char *topic; /* owned */
    struct rp_queue **q;
    size_t nq, cap;
    uint64_t gv, rv; /* group-view and route versions it was computed from */
    bool computed;
    /* Looked up once: routes, group-topics and caches live until the end. */
    struct rp_route *route;
    struct rp_gt *gt;
    struct rp_cache *cache;
};

/* A modeled consumer: one (connection, group) membership, from its join to
 * its leave. Kept after it leaves, for the report. */
struct rp_client {
    uint64_t seq; /* creation order */
    uint64_t conn;
    struct rp_view *view;
    struct rp_gview *gv;     /* borrowed */
    char *group, *client_id; /* owned */
    bool alive, deaf;
    int64_t joined_ms, left_ms, last_hb;
    const char *left_why;                /* static */
    int64_t tick_at;                     /* scheduled timer tick, RP_NO_TIME when none */
    struct rp_client *hb_prev, *hb_next; /* replay.hb_first's list */
    bool in_hb_order;
    uint64_t topics_seq; /* the conn's parse_seq its topics came from */
    char **topics;       /* owned, sorted: its own subscriptions */
    size_t ntopics;
    struct rp_hold *holds;
    size_t nholds, holds_cap;
    uint64_t n_start, n_notify, n_timer, n_changes;
    /* Its behaviour (replay_infer.c rp_client_behaviour): the timer period
     * and where it and deaf came from ("inferred", "override", "flag",
     * "default", "no NOTIFY received"; static strings). */
    int64_t rebalance_ms;
    const char *notify_src, *period_src;
    struct replay_behaviour seen; /* inferred from the trace; notify -1 when nothing tells */
    int64_t changed_ms;           /* the model last changed what it holds */
    struct rp_tivs truth;         /* disagreements with its recorded holdings */
    uint64_t t_round;             /* the holdings round that last flagged it (replay_truth.c) */
    bool t_model;                 /* ... and whether that flag blamed the model */
};

/* A group as one view sees it: version bumps whenever cidAll may differ. */
struct rp_gview {
    struct rp_view *view;
    char *group; /* owned */
    uint64_t version;
    struct rp_client **clients; /* alive */
    size_t n, cap;
};

struct rp_interval {
    int kind; /* RP_Q_OVERLAP or RP_Q_STALL */
    int64_t start, end;
    char *owners; /* owned, "cid[conn],..." (overlaps) */
    bool open;
    const struct rp_client *deaf; /* overlaps: an owner that ignores NOTIFY (the likely cause), or NULL */
};

enum { RP_Q_NONE = 0, RP_Q_OK, RP_Q_OVERLAP, RP_Q_STALL };

struct rp_gt;
struct rp_queue {
    struct rp_gt *gt;
    char *broker; /* owned */
    int32_t qid;
    struct rp_client **owners;
    size_t nowners, owners_cap;
    bool in_route;
    int state;
    int64_t since;
    char *snapshot;               /* owners when the current overlap began */
    const struct rp_client *deaf; /* a deaf owner when it began */
    struct rp_interval *iv;
    size_t niv, iv_cap;
    uint64_t mark;
    int64_t owners_ms; /* the owners last changed */
    /* Recorded holdings (replay_truth.c): who held it in round t_round. */
    uint64_t t_round;
    uint32_t t_n;
    char t_who[120];
    struct rp_client *t_cl[8]; /* the first holders that are modeled clients */
    char *t_model;             /* owned: model owners when the round began */
    bool t_subscribed;         /* in the route with a subscriber when the round began */
    struct rp_tivs real, dis;
};

/* A group's view of one topic: ownership is per group, across views. */
struct rp_gt {
    char *group, *topic;      /* owned */
    size_t nsubs;             /* alive clients subscribing the topic */
    struct rp_queue **queues; /* owned, in creation order */
    size_t nq, cap;
    struct hashmap qindex; /* "broker\0" + qid (4 bytes) -> queues[i]: a holdings line of 65,536
                              queues finds each in O(1), not by a scan */
    uint64_t route_version;
    struct rp_queue **by_route; /* route index -> queue */
    size_t nby_route;
};

struct rp_route {
    char *topic;                   /* owned */
    struct allocate_queue *queues; /* owned array, sorted; strings owned by names */
    size_t n;
    char **names;
    size_t nnames;
    uint64_t version;
};

/* allocate_group result shared by a (view, group, topic) until a version moves. */
struct rp_cache {
    uint64_t gv, rv;
    struct allocate_result *res;
    const char **cids; /* owned array, strings borrowed from the registry */
    int rc;
};

enum rp_act { RP_ACT_START = 0, RP_ACT_NOTIFY, RP_ACT_TIMER };

struct rp_action {
    int64_t at;
    uint64_t seq;
    int kind;
    struct rp_client *c;
};

struct replay {
    struct replay_options opt;
    struct buf out, explain;
    struct replay_stats st;
    struct rp_view **views;
    size_t nviews, views_cap;
    struct hashmap conns, clients, gviews, gts, routes, caches, notified;
    struct hashmap obs;   /* (conn, group) -> struct rp_obs: recorded NOTIFYs and queries (replay_infer.c) */
    struct hashmap truth; /* group -> struct rp_tround: the holdings round in progress (replay_truth.c) */
    uint64_t truth_seq;   /* holdings rounds seen */
    int64_t obs_end;      /* the latest ts noted */
    /* In front of conns (whose entries live until replay_free): the last
     * connection seen in each slot, by id, so most events skip the hash. */
    struct rp_conn *conn_front[1024];
    struct rp_client **all; /* every client ever, creation order */
    size_t nall, all_cap;
    struct rp_action *heap;
    size_t nheap, heap_cap;
    /* Clients by last heartbeat, earliest first (rp_next_scan). */
    struct rp_client *hb_first, *hb_last;
    uint64_t seq, route_version, mark;
    int64_t now, start_ms, scan_base, from_abs, to_abs, end_ms;
    bool started, any_recorded_notify, restarting, finished;
    /* replay_out.c put_iso: the last second formatted. */
    int64_t iso_sec;
    bool iso_valid;
    char iso[32];
};

/* The action heap: client actions by (at, seq). 0 or RMQ_ENOMEM. */
int rp_push_action(struct replay *rp, int64_t at, int kind, struct rp_client *c);
/* The earliest action; the heap must not be empty. */
struct rp_action rp_pop_action(struct replay *rp);
/* c heartbeats now: last_hb, and its place in the heartbeat order. */
void rp_heartbeat_seen(struct replay *rp, struct rp_client *c);
/* The first expiry-scan tick that will remove someone, or INT64_MAX. */
int64_t rp_next_scan(struct replay *rp);
/* The key of rp->clients and rp->obs for (conn, group) into key (8 + strlen(group) bytes); its length. */
size_t rp_client_key(char *key, uint64_t conn, const char *group);
/* The alive client of (conn, group), or NULL. Borrowed. */
struct rp_client *rp_find_client(struct replay *rp, uint64_t conn, const char *group);
struct rp_conn *rp_find_conn(struct replay *rp, uint64_t id);
/* A pointer array (elements borrowed): append (0 or RMQ_ENOMEM), remove the first p. */
int rp_ptr_push(void ***arr, size_t *n, size_t *cap, void *p);
void rp_ptr_remove(void **arr, size_t *n, const void *p);
/* c's inputs may have moved: schedules its next timer tick if none is due. */
void rp_mark_stale(struct replay *rp, struct rp_client *c);
/* Whether ts is inside the report window (--from, --to). */
bool rp_in_window(const struct replay *rp, int64_t ts);

#endif
