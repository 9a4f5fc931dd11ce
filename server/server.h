/* server.h — the daemon's state and the glue between its modules.
 *
 * struct server lives on the loop thread and owns every module: listeners,
 * connections, the registry, topics, offsets, locks, held pulls, the store
 * writer, and the mailbox the HTTP thread posts to. Request handlers
 * (h_*.c) receive it with the connection and the decoded request.
 * One iteration: events -> handlers queue replies and store writes ->
 * before sleep: reap closed connections, queue NOTIFYs, commit the store,
 * then write (PROTOCOL: nothing stored is acknowledged before its commit).
 */
#ifndef RMQ_SERVER_H
#define RMQ_SERVER_H

#include "config.h"
#include "hashmap.h"
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
struct outbound_pending;
struct holdings_round;
struct namesrv_table;
struct broker_reg;

struct held_pull {
    struct conn *conn; /* borrowed; holds are dropped when it closes */
    int32_t opaque;
    int32_t version;
    uint8_t serialize_type;
    char *group; /* owned */
    char *topic; /* owned */
    int32_t queue_id;
    int64_t queue_offset;
    int64_t deadline_ms; /* server_now_ms clock (virtual-clock aware) */
};

/* A reply that reports a stored fact, held until the batch that stores it
 * has committed (then sent), or failed (then replaced by SYSTEM_ERROR). */
struct held_ack {
    struct conn *conn; /* borrowed; NULL once it closed */
    struct rmq_cmd resp;
};

struct server {
    const struct config *cfg;
    struct loop *loop;
    struct conn_set *conns;
    int listen_fds[CONFIG_MAX_LISTEN];
    char listen_addrs[CONFIG_MAX_LISTEN][300];
    size_t nlisten;
    char advertise[300];
    struct store *store;
    struct registry reg;
    struct topics topics;
    struct hashmap offsets;   /* "group\0topic\0qid" -> int64_t* (owned) */
    struct hashmap queue_max; /* "topic\0qid" -> int64_t* (owned) */
    struct hashmap locks;     /* "group\0topic\0broker\0qid" -> struct queue_lock* (owned) */
    struct held_pull *pulls;  /* owned */
    size_t npulls, pulls_cap;
    struct held_ack *acks;     /* owned */
    uint64_t writes_at_commit; /* store_write_count at the last commit */
    int64_t last_commit_ms;    /* loop clock of the last commit */
    size_t nacks, acks_cap;
    struct outbound_pending *outbound; /* owned: requests sent to clients awaiting a reply */
    size_t noutbound, outbound_cap;
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
    struct server_stats stats;
    struct namesrv_table *ns; /* owned; --role namesrv only (cluster.h) */
    struct broker_reg *breg;  /* owned; --role broker only */
};

/* Sets up everything from cfg (borrowed; must outlive s): store, topics,
 * listeners, HTTP. 0 or an error (logged). */
int server_init(struct server *s, const struct config *cfg);
/* Runs the loop until SIGTERM/SIGINT. */
int server_run(struct server *s);
/* Closes channels, flushes the store and frees everything. */
void server_fini(struct server *s);

/* Wall-clock milliseconds that never go backwards (wall time at start plus
 * monotonic elapsed): timestamps for members, events and expiry. */
int64_t server_now_ms(const struct server *s);

/* Wipes live and stored state for test suites (POST /api/reset): closes
 * every connection, forgets groups, topics, offsets, locks and held pulls.
 * The caller resets the store tables. */
void server_reset_live(struct server *s);

/* --clock virtual: moves the daemon's time forward by ms and runs what is
 * due at once (expiry scan, held-pull deadlines). RMQ_ESTATE on a real clock. */
int server_clock_advance(struct server *s, int64_t ms);

/* Sends resp as the reply to req unless req is oneway (PROTOCOL: never
 * answer flag&2). Takes resp's contents (resp is left cleared). durable:
 * resp reports a stored fact, so it is held until the store batch commits;
 * if the commit fails the client gets SYSTEM_ERROR instead. */
void server_send_reply(struct server *s, struct conn *c, const struct rmq_cmd *req, struct rmq_cmd *resp,
                       bool durable);
/* Replies SUCCESS with the bytes of body, which the caller built with status
 * built (non-zero = building failed: the connection is closed instead, as
 * a client would time out on a missing reply anyway). Frees body. */
void server_reply_body(struct server *s, struct conn *c, const struct rmq_cmd *req, int built,
                       struct buf *body, bool durable);
/* Replies code with remark and no body. */
void server_reply_code(struct server *s, struct conn *c, const struct rmq_cmd *req, int32_t code,
                       const char *remark);
/* Replies SYSTEM_ERROR "missing or invalid field <name>" when field is absent
 * or not an integer; returns 0 with *out set otherwise. */
int server_require_i64(struct server *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                       int64_t *out);
/* The same for a non-empty string field (borrowed pointer into req). */
int server_require_str(struct server *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                       const char **out);

/* Creates (and persists) topic name with nqueues on the default broker,
 * as a route query with auto-create or a first heartbeat's retry topic does. */
const struct topic *server_create_topic(struct server *s, const char *name, int nqueues);
/* Persists and installs a topic definition; 0 or an error. */
int server_put_topic(struct server *s, const char *name, const struct topic_broker *brokers, size_t n);

/* Offsets (h_offset.c). */
int server_offset_get(const struct server *s, const char *group, const char *topic, int32_t qid,
                      int64_t *out);
int server_offset_commit(struct server *s, const char *group, const char *topic, int32_t qid, int64_t offset);
/* Installs a stored offset at start (no store write). */
int server_offset_load(struct server *s, const char *group, const char *topic, int32_t qid, int64_t offset);
int64_t server_queue_max(const struct server *s, const char *topic, int32_t qid);

/* Held pulls (h_pull.c). */
void pull_release_group(struct server *s, const char *group);
void pull_drop_conn(struct server *s, const struct conn *c);
void pull_on_timer(struct server *s);
void pull_free_all(struct server *s);

/* Locks (h_lock.c). */
void lock_free_all(struct server *s);

/* Notifications (notify.c): sends one NOTIFY per flagged group. */
void notify_flush(struct server *s);

/* Admin requests from the HTTP thread (admin_live.c). */
struct mailbox_msg;
void admin_live_handle(void *ctx, struct mailbox_msg *msg);
/* admin_holdings.c: running-info / consistency / converged. Returns true when
 * the message was deferred (completed later with mailbox_complete); false
 * when msg->status and msg->reply are already set. */
bool admin_holdings_handle(struct server *s, struct mailbox_msg *msg);
/* Shutdown: completes every holdings check still running (503). */
void admin_holdings_abort_all(struct server *s);
/* admin_extra.c: the ops from ADMIN_OP_EXTRA_FIRST on; sets status and
 * reply, or defers (status MAILBOX_DEFERRED). */
void admin_extra_handle(struct server *s, struct mailbox_msg *msg);

/* Request handlers (dispatch.c routes codes to them). */
typedef void (*handler_fn)(struct server *s, struct conn *c, struct rmq_cmd *req);
void dispatch_request(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_heartbeat(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_unregister_client(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_get_consumer_list(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_reply_success(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_get_consumer_connection_list(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_get_route(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_cluster_info(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_query_offset(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_update_offset(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_get_max_offset(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_get_min_offset(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_search_offset(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_earliest_msg_storetime(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_pull(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_lock_batch(struct server *s, struct conn *c, struct rmq_cmd *req);
void h_unlock_batch(struct server *s, struct conn *c, struct rmq_cmd *req);

#endif
