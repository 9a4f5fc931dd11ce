/* sim_state.h — `rmqcoord sim`: N simulated Java push consumers; the state
 * every file of the sim shares (types only).
 *
 * Design. One thread runs a loop.c reactor. Each simulated client is a
 * small state machine modelled on DefaultMQPushConsumer 4.9.x: route lookup
 * (105) for each topic and the retry topic, HEART_BEAT (34) to every broker
 * address, then rebalance rounds (38 per topic, allocate_one, 14/30 for new
 * queues, one long-polling PULL (11) per held queue, oneway 15 for dropped
 * and, on a timer, held queues). Nothing ever waits for a reply: every
 * request carries a callback (remoting_client.h). Clients are grouped K to a
 * "group" that owns one connection per address string (several clients'
 * traffic on one connection when K > 1), as a Java process keys its
 * connections by address.
 *
 * Files: sim_opts.c (flags), sim_client.c (start, routes, the timer's
 * work), sim_timer.c (the timer's deadline, wakeups), sim_heartbeat.c
 * (heartbeats), sim_conn.c (a group's connections, requests),
 * sim_balance.c (rebalance rounds, holdings lines), sim_pull.c (process
 * queues: offsets, pulls, persist), sim_inbound.c (NOTIFY, 307, unknown
 * codes), cmd_sim.c (process: loop, signals, output, shutdown); pure parts
 * in sim_body.c, sim_rinfo.c, sim_rebalance.c; connections in
 * server/client/remoting_client.c.
 *
 * Ownership: struct sim owns the groups and clients, which live until
 * exit; a client owns its topics and process queues. Loop thread only.
 */
#ifndef RMQ_SIM_STATE_H
#define RMQ_SIM_STATE_H

#include "allocate.h"
#include "buf.h"
#include "remoting_client.h"
#include "sim_body.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_TOPICS 64
#define SIM_MAX_CLIENTS 100000
#define SIM_MAX_CONNS_PER_GROUP 32

/* Java client timeouts (PROTOCOL: docs/protocol.md §10.2). */
#define SIM_TIMEOUT_API_MS 3000
#define SIM_TIMEOUT_OFFSET_MS 5000
#define SIM_TIMEOUT_ADMIN_MS 6000
#define SIM_TIMEOUT_PULL_MS 30000
#define SIM_TIMEOUT_UNREGISTER_MS 1000
/* Pull retry delays (PROTOCOL: docs/protocol.md §6). */
#define SIM_PULL_DELAY_EXCEPTION_MS 3000
#define SIM_PULL_DELAY_FLOW_MS 20
#define SIM_PULL_DELAY_MOVED_MS 10000
#define SIM_PULL_SUSPEND_MS 15000

struct sim_config {
    char namesrv[128];
    char group[256];
    const char *topics[SIM_MAX_TOPICS]; /* borrowed from argv */
    size_t ntopics;
    long clients;
    const char *client_prefix; /* NULL: 127.0.0.1@sim<i> */
    const char *client_id;     /* one client with this id */
    long per_conn;
    struct allocate_options alloc; /* arrays below are owned */
    struct allocate_queue *config_queues;
    const char **idcs;
    struct allocate_room *broker_rooms, *consumer_rooms;
    char *owned[8]; /* copies of list flags the arrays point into */
    size_t nowned;
    int64_t heartbeat_ms, rebalance_ms, route_ms, persist_ms, duration_ms;
    int64_t connect_timeout_ms; /* exit 3 when the name server was not reached by then */
    int version;
    int language;
    bool broadcast, no_notify, quiet;
    int log_level;
};

enum sim_reason { SIM_REASON_START, SIM_REASON_NOTIFY, SIM_REASON_TIMER };

struct sim_client;

/* A held message queue (Java ProcessQueue). Lives while the client holds
 * it or a request about it is outstanding (refs). */
struct sim_pq {
    struct sim_client *client;
    struct sim_topic *topic;
    char *broker_name; /* owned */
    int32_t queue_id;
    int64_t offset; /* next offset to pull; -1 until known */
    bool dropped;
    bool busy;        /* an offset query or a pull is outstanding */
    int64_t retry_at; /* monotonic: next offset query / pull; 0 none due */
    int64_t last_pull_wall;
    int refs;
};

struct sim_topic {
    struct sim_client *client;
    char *name; /* owned */
    bool retry; /* %RETRY%<group> */
    int64_t sub_version;
    struct rmq_route_info route; /* owned */
    bool has_route;
    struct allocate_queue *mq_all; /* owned array: the route's sorted subscribe set */
    size_t nmq_all;
    bool allocated;       /* reported at least once */
    struct sim_pq **held; /* owned references, allocation order */
    size_t nheld;
};

struct sim_group;

struct sim_client {
    struct sim *sim;
    struct sim_group *grp;
    char *id; /* owned */
    struct sim_topic topics[SIM_MAX_TOPICS];
    size_t ntopics;
    bool running;      /* start sequence done */
    int start_waiting; /* replies the start sequence still waits for */
    int timer_id;
    int64_t due_heartbeat, due_route, due_persist, due_rebalance; /* monotonic */
    enum sim_reason due_reason;
    /* The rebalance round in progress (one topic at a time, like the
     * RebalanceService thread) and a wakeup that arrived during it. */
    bool rb_running, rb_again;
    enum sim_reason rb_reason, rb_again_reason;
    size_t rb_cursor;
    int64_t start_wall;
};

struct sim_group {
    struct sim *sim;
    struct sim_client **members; /* borrowed */
    size_t nmembers;
    struct rclient_conn *conns[SIM_MAX_CONNS_PER_GROUP];
    size_t nconns;
    int32_t next_opaque; /* Java: one counter per process, from 0 */
};

struct sim_stats {
    uint64_t rebalances, changes, notifies, heartbeats, pulls, running_info, unregistered;
};

struct sim {
    const struct sim_config *cfg;
    struct loop *loop;
    struct rclient *net;
    struct sim_client *clients;
    size_t nclients;
    struct sim_group *groups;
    size_t ngroups;
    bool stopping;
    bool unreachable; /* the name server was not reached in time (exit 3) */
    int unregister_waiting;
    /* The handler of every group connection (sim_inbound.c, set by cmd_sim.c);
     * sim_group_conn sets ctx to the group. */
    struct rclient_conn_handler inbound;
    struct buf line; /* output scratch */
    struct sim_stats stats;
};

#endif
