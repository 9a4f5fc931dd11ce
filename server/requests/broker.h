/* broker.h — the loop-owned state of the emulated broker, and the few
 * operations every request family shares (the clock, topic creation, the
 * expiry scan).
 *
 * struct broker lives on the loop thread: connections, the registry, topics,
 * offsets, locks, held pulls, held replies and the store writer. Request
 * handlers (the *_requests.c files) receive it with the connection and the
 * decoded request. Its lifecycle (create, reset, free) is broker_state.h; a
 * loop turn (admission, close, before sleep) is turn.h; the daemon
 * (daemon/server.c) embeds it in struct daemon with the listeners, signals
 * and HTTP side. Nothing stored is acknowledged before its commit
 * (docs/protocol.md).
 */
#ifndef RMQ_BROKER_H
#define RMQ_BROKER_H

#include "config.h"
#include "hashmap.h"
#include "held_pulls.h"
#include "log.h"
#include "message_queues.h"
#include "offsets.h"
#include "pending.h"
#include "queue_locks.h"
#include "registry.h"
#include "remoting_cmd.h"
#include "stats.h"
#include "topics.h"

#include <stdbool.h>
#include <stdint.h>

struct broker;
struct conn;
struct conn_set;
struct loop;
struct store;
struct trace_recorder;
struct acl;
struct holdings_round;
struct namesrv_table;
struct broker_reg;

/* A reply that reports a stored fact, held until the batch that stores it
 * has committed (then sent), or failed (then replaced by SYSTEM_ERROR). */
struct held_ack {
    struct conn *conn; /* borrowed; NULL once it closed */
    struct rmq_cmd resp;
};

/* What the layers above requests/ add to a loop turn (turn.h): the daemon
 * installs cluster/'s, a unit test its own. Each may be NULL. */
struct broker_turn_hooks {
    /* Answers req itself (the --role namesrv and --role broker codes):
     * true when it did, and dispatch_request is skipped. */
    bool (*dispatch)(struct broker *s, struct conn *c, struct rmq_cmd *req);
    /* c is closing: called before its held replies and channel are forgotten. */
    void (*conn_closed)(struct broker *s, const struct conn *c);
    /* Once per settle round, after the round's flush. */
    void (*settle_round)(struct broker *s);
};

struct broker {
    const struct config *cfg;
    struct loop *loop;
    int notify_timer; /* wakes the loop when a postponed NOTIFY falls due; 0 = none */
    struct conn_set *conns;
    char advertise[300];
    struct store *store;
    struct registry reg;
    struct topics topics;
    struct offsets offsets;
    struct queue_locks locks;
    struct held_pulls pulls;
    int64_t retention_next_ms;  /* loop clock: message_retention_run not before */
    struct message_queues mqs;  /* stored messages' queue ranges (send_requests.c) */
    struct held_ack *acks;      /* owned */
    uint64_t writes_at_commit;  /* store_write_count at the last commit */
    int64_t last_commit_ms;     /* loop clock of the last commit */
    uint64_t offsets_at_commit; /* offsets.changes at the last good commit: what a lost batch undoes */
    struct log_limit store_log; /* storage failures, once a second (a full disk fails every turn) */
    size_t nacks, acks_cap;
    struct pending_table outbound; /* requests sent to clients awaiting a reply (outbound.c) */
    struct holdings_round *rounds; /* owned list: admin holdings checks in progress */
    struct trace_recorder *trace;  /* NULL unless --record */
    struct acl *acl;               /* NULL unless --acl */
    struct broker_turn_hooks hooks;
    uint16_t http_port; /* the admin API's port, 0 while HTTP is off (broker registration sends it) */
    int64_t run_id;
    uint32_t next_conn_seq;
    int32_t next_opaque;
    int64_t wall_base_ms, mono_base_ms;
    int64_t clock_offset_ms; /* --clock virtual: total advanced so far */
    int64_t started_ms;
    struct log_limit refuse_log; /* connections refused at a limit, once a second */
    struct server_stats stats;
    struct namesrv_table *ns; /* owned; --role namesrv only (cluster.h) */
    struct broker_reg *breg;  /* owned; --role broker only */
    /* Subscription-group configs set by admin tools (admin_group_requests.c):
     * group name -> config object; owned, NULL until loaded. */
    struct json_t *group_configs;
    int64_t group_configs_version; /* changes since start (201's dataVersion) */
};

/* Wall-clock milliseconds that never go backwards (wall time at start plus
 * monotonic elapsed, or the virtual clock): timestamps for members, events
 * and expiry. */
int64_t broker_now_ms(const struct broker *s);

/* Persists and installs a topic definition; 0 or an error. */
int broker_put_topic(struct broker *s, const char *name, const struct topic_broker *brokers, size_t n);
/* Creates (and persists) topic name with nqueues on the default broker,
 * as a route query with auto-create or a first heartbeat's retry topic does.
 * Borrowed result (owned by s->topics), NULL on failure. */
const struct topic *broker_create_topic(struct broker *s, const char *name, int nqueues);

/* One expiry scan: closes idle connections (--idle-timeout-ms) and channels
 * whose members all expired (docs/protocol.md: an expired channel is closed). */
void broker_expire(struct broker *s);

#endif
