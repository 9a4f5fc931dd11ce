/* broker.h — the loop-owned state of the emulated broker, and the few
 * operations every request family shares (the clock, topic creation, offset
 * commits, expiry, the admin API's reset).
 *
 * struct broker lives on the loop thread: listeners, connections, the
 * registry, topics, offsets, locks, held pulls, the store writer, and the
 * mailbox the HTTP thread posts to. Request handlers (the *_requests.c files)
 * receive it with the connection and the decoded request; the daemon
 * (daemon/server.c) creates it and runs the loop. One iteration: events ->
 * handlers queue replies and store writes -> before sleep: reap closed
 * connections, queue NOTIFYs, commit the store, then write (nothing stored is
 * acknowledged before its commit: docs/protocol.md).
 */
#ifndef RMQ_BROKER_H
#define RMQ_BROKER_H

#include "config.h"
#include "hashmap.h"
#include "held_pulls.h"
#include "log.h"
#include "offsets.h"
#include "pending.h"
#include "queue_locks.h"
#include "registry.h"
#include "remoting_cmd.h"
#include "stats.h"
#include "topics.h"

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct conn_set;
struct loop;
struct store;
struct mailbox;
struct http_admin;
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

struct broker {
    const struct config *cfg;
    struct loop *loop;
    int notify_timer; /* wakes the loop when a postponed NOTIFY falls due */
    struct conn_set *conns;
    int listen_fds[CONFIG_MAX_LISTEN];
    char listen_addrs[CONFIG_MAX_LISTEN][300];
    size_t nlisten;
    char advertise[300];
    struct store *store;
    struct registry reg;
    struct topics topics;
    struct offsets offsets;
    struct queue_locks locks;
    struct held_pulls pulls;
    struct held_ack *acks;     /* owned */
    uint64_t writes_at_commit; /* store_write_count at the last commit */
    int64_t last_commit_ms;    /* loop clock of the last commit */
    uint64_t offsets_at_commit; /* offsets.changes at the last good commit: what a lost batch undoes */
    struct log_limit store_log; /* storage failures, once a second (a full disk fails every turn) */
    size_t nacks, acks_cap;
    struct pending_table outbound; /* requests sent to clients awaiting a reply (outbound.c) */
    struct holdings_round *rounds; /* owned list: admin holdings checks in progress */
    struct mailbox *mailbox;
    struct http_admin *http;
    struct trace_recorder *trace; /* NULL unless --record */
    struct acl *acl;              /* NULL unless --acl */
    uint16_t http_port;
    int signal_fd;
    int64_t run_id;
    uint32_t next_conn_seq;
    int32_t next_opaque;
    int64_t wall_base_ms, mono_base_ms;
    int64_t clock_offset_ms; /* --clock virtual: total advanced so far */
    int64_t started_ms;
    bool stopping;
    bool accept_paused;          /* listeners off after accept ran out of descriptors */
    struct log_limit accept_log; /* accept failures, once a second */
    struct log_limit refuse_log; /* connections refused at a limit, once a second */
    struct server_stats stats;
    struct namesrv_table *ns; /* owned; --role namesrv only (cluster.h) */
    struct broker_reg *breg;  /* owned; --role broker only */
    /* Subscription-group configs set by admin tools (admin_group_requests.c):
     * group name -> config object; owned, NULL until loaded. */
    struct json_t *group_configs;
    int64_t group_configs_version; /* changes since start (201's dataVersion) */
};

/* The state every broker starts from, on s (zeroed by the caller): cfg, the
 * loop and its clocks, the registry with member_events' hooks, topics,
 * offsets and queue locks; no connections, store or listeners yet. RMQ_OK
 * or loop_new's error. */
int broker_init_state(struct broker *s, const struct config *cfg);

/* One round of what the loop does before it sleeps: reaps closed
 * connections, sends the NOTIFYs that fell due, commits the open batch when
 * commit is set (fsynced only when a held reply waits on it), releases the
 * held replies by the commit's fate, and flushes output. The commit's
 * result (RMQ_OK when none). */
int broker_settle_round(struct broker *s, bool commit);

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

/* Commits group's offset of (topic, qid): the in-memory table and a store
 * write in the open batch. 0 or an error. */
int broker_offset_commit(struct broker *s, const char *group, const char *topic, int32_t qid, int64_t offset);
/* After a batch was lost: the in-memory offsets go back to what the store
 * holds (what was acknowledged), keeping each unchanged entry's reporting
 * channel and reset flag. Nothing happens when no offset moved since the
 * last good commit. 0 or the store's error (the table is then unchanged). */
int broker_offsets_reload(struct broker *s);

/* One expiry scan: closes idle connections (--idle-timeout-ms) and channels
 * whose members all expired (docs/protocol.md: an expired channel is closed). */
void broker_expire(struct broker *s);

/* Wipes live and stored state for test suites (POST /api/reset): closes
 * every connection, forgets groups, topics, offsets, locks and held pulls.
 * The caller resets the store tables. */
void broker_reset_live(struct broker *s);

/* --clock virtual: moves the daemon's time forward by ms and runs what is
 * due at once (expiry scan, held-pull deadlines). RMQ_ESTATE on a real clock. */
int broker_clock_advance(struct broker *s, int64_t ms);

#endif
