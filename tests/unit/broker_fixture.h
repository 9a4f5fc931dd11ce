/* broker_fixture.h — a minimal struct broker for unit tests of the daemon
 * core (server/requests, server/model, server/cluster, server/admin), built
 * the way daemon/server.c's server_init builds it but without listeners,
 * HTTP, signals or timers: a real loop, a real conn_set whose connections
 * are one end of a socketpair (the test reads the other end and decodes the
 * frames a client would receive), a real SQLite store in a temporary
 * directory, the registry with member_events' hooks, topics and offsets.
 *
 * Tests call handlers directly (consumer_req_heartbeat(&fx->b, fx_conn(fx, i),
 * &req)), then fx_iterate runs the daemon's own turn (broker_before_sleep,
 * committing every open batch), then fx_recv reads what the peer got. What
 * cluster/ adds to a turn a test installs in fx->b.hooks, as the daemon does. The clock is virtual
 * (fx_advance) so expiry and deadlines are deterministic.
 */
#ifndef RMQ_BROKER_FIXTURE_H
#define RMQ_BROKER_FIXTURE_H

#include "broker.h"
#include "config.h"
#include "remoting_frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FX_MAX_PEERS 512

struct fx_peer {
    struct conn *c; /* the broker's end; NULL once reaped (closed) */
    int fd;         /* the client's end, read by the test */
    struct rmq_frame_decoder dec;
    bool eof; /* the broker's end closed and everything was read */
};

struct fx {
    struct config cfg;
    struct broker b;
    char dir[3800];
    char db[3900];
    struct fx_peer peers[FX_MAX_PEERS];
    size_t npeers;
    int last_commit_rc; /* of the last commit fx_iterate made */
};

/* The daemon's defaults (config.c), made deterministic for tests: virtual
 * clock, no HTTP, no idle timeout, no rate limit, fsync on every commit. */
void fx_config_defaults(struct config *cfg);
/* New fixture with cfg (NULL = fx_config_defaults); asserts on failure. */
struct fx *fx_new(const struct config *cfg);
/* Frees the broker as server_fini does (broker_close_conns,
 * broker_fini_state, whose final commit must succeed), then the temporary
 * directory. */
void fx_free(struct fx *fx);

/* A new connection as on_accept makes it (conn, broker_conn_opened) with
 * its store channel row already written (broker_store_channel); returns its
 * peer index. */
size_t fx_connect(struct fx *fx);
/* The same without the channel row: what accept leaves before the first
 * request (broker_on_frame writes the row). */
size_t fx_connect_bare(struct fx *fx);
struct conn *fx_conn(struct fx *fx, size_t i);
/* One before_sleep of the daemon (broker_before_sleep, committing any open
 * batch): store upkeep, reap, NOTIFY, commit (its result in
 * fx->last_commit_rc), held replies (SYSTEM_ERROR if it failed), flush. */
void fx_iterate(struct fx *fx);
/* Moves the virtual clock forward (no expiry scan: call broker_expire). */
void fx_advance(struct fx *fx, int64_t ms);

/* Next frame the peer received: 0 with *out filled (caller clears), or
 * RMQ_EAGAIN when nothing (more) is there. */
int fx_recv(struct fx *fx, size_t i, struct rmq_cmd *out);
/* Frames waiting at peer i (all read and discarded). */
size_t fx_drain(struct fx *fx, size_t i);
/* Reads peer i's next frame, which must exist and be a response to opaque;
 * returns its code (the frame in *out, caller clears). */
int32_t fx_reply(struct fx *fx, size_t i, int32_t opaque, struct rmq_cmd *out);
/* How many NOTIFY_CONSUMER_IDS_CHANGED frames for group peer i has waiting
 * (every frame read; any other frame fails the test). */
size_t fx_notifies(struct fx *fx, size_t i, const char *group);

/* A request as a client sends it (JSON header, flag 0 or RMQ_FLAG_ONEWAY). */
void fx_request(struct rmq_cmd *req, int32_t code, int32_t opaque, int32_t flag);
/* A HEART_BEAT request of client_id for group with the topics (tags "*"),
 * messageModel CLUSTERING or BROADCASTING. */
void fx_heartbeat_req(struct rmq_cmd *req, int32_t opaque, const char *client_id, const char *group,
                      const char *const *topics, size_t ntopics, bool broadcast);
/* Sends fx_heartbeat_req on peer i through consumer_req_heartbeat. */
void fx_heartbeat(struct fx *fx, size_t i, const char *client_id, const char *group, const char *topic);

/* cmocka setup/teardown: *state is fx_new(NULL), freed after the test. */
int fx_setup(void **state);
int fx_teardown(void **state);
/* A test run on a fixture of its own (fx_setup, fx_teardown). */
#define FX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

/* A request handler of server/requests (consumer_req_heartbeat, pull_req_message...). */
typedef void (*fx_handler)(struct broker *b, struct conn *c, struct rmq_cmd *req);
/* Runs handler on peer i with req, clears req, then runs one fx_iterate. */
void fx_handle(struct fx *fx, size_t i, fx_handler handler, struct rmq_cmd *req);
/* fx_request of code/opaque with body (a C string) through handler. */
void fx_handle_body(struct fx *fx, size_t i, fx_handler handler, int32_t code, int32_t opaque,
                    const char *body);
/* fx_heartbeat_req through consumer_req_heartbeat and fx_iterate. */
void fx_send_heartbeat(struct fx *fx, size_t i, int32_t opaque, const char *client_id, const char *group,
                       const char *const *topics, size_t ntopics, bool broadcast);
/* UNREGISTER_CLIENT of group (and client_id unless NULL) on peer i through
 * consumer_req_unregister_client and fx_iterate; the reply is left unread. */
void fx_unregister(struct fx *fx, size_t i, int32_t opaque, const char *group, const char *client_id);
/* Reads the reply to opaque at peer i: its code must be code and, unless
 * remark is NULL, its remark exactly remark (the frame is cleared). */
void fx_expect_reply(struct fx *fx, size_t i, int32_t opaque, int32_t code, const char *remark);
/* The same with a remark that must start with prefix. */
void fx_expect_reply_prefix(struct fx *fx, size_t i, int32_t opaque, int32_t code, const char *prefix);
/* The live group name, which must have nmembers members. */
const struct reg_group *fx_group(struct fx *fx, const char *name, size_t nmembers);
/* Peer i's client_id joins group on topic T: heartbeat, an iteration, and
 * every frame at peer i read. */
void fx_join(struct fx *fx, size_t i, const char *client_id, const char *group);
/* A new connection whose client_id joined group (fx_join); its index. */
size_t fx_member(struct fx *fx, const char *client_id, const char *group);
/* Two connections whose clients cA and cB joined group g on topic T; the
 * heartbeat replies and the NOTIFYs are read. */
void fx_two_members(struct fx *fx, size_t *a, size_t *b);

/* First column of the first row of sql on the store file, through a
 * separate read-only connection (what another process sees). -1 on no row. */
int64_t fx_sql_int(struct fx *fx, const char *sql);

#endif
