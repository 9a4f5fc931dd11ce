/* sim_net.h — the client side of remoting connections for `rmqcoord sim`.
 *
 * A sim_conn is one TCP connection to one "ip:port", keyed by that string as
 * real clients key theirs. It connects lazily on first use (non-blocking),
 * queues encoded frames in a bounded output buffer written before the loop
 * sleeps, matches responses to requests by opaque, expires requests that
 * outlive their timeout, and reconnects with a bounded exponential backoff
 * after the peer closes. It knows frames and opaques, not request codes.
 *
 * Callbacks: a reply callback runs exactly once for every request that was
 * accepted (sim_conn_request returned 0): with the response, or with a
 * negative status (-ETIMEDOUT, -ECONNRESET, RMQ_ESTATE at shutdown). It never
 * runs for a request that was refused. A broken connection is torn down in
 * sim_net_before_sleep, never inside its own event callback.
 *
 * Loop thread only.
 */
#ifndef RMQ_SIM_NET_H
#define RMQ_SIM_NET_H

#include "remoting_cmd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct sim_net;
struct sim_conn;

/* resp is borrowed for the call; NULL when status < 0. */
typedef void (*sim_reply_cb)(void *ctx, int status, const struct rmq_cmd *resp);

/* What a connection's owner hears. on_request: a request the peer sent
 * (borrowed). on_up: the connection is established; reconnected is true
 * when it had been up before and was lost. Either may be NULL. */
struct sim_conn_handler {
    void (*on_request)(void *ctx, struct sim_conn *c, const struct rmq_cmd *req);
    void (*on_up)(void *ctx, struct sim_conn *c, bool reconnected);
    void *ctx;
};

/* Java invokeSync: a timeout also closes the connection (PROTOCOL: docs/protocol.md §10.2
 * clientCloseSocketIfTimeout), which the peer sees as the member leaving. */
#define SIM_REQ_SYNC 0x1u

#define SIM_NET_MAX_OUTPUT ((size_t)8 << 20)
#define SIM_NET_MAX_PENDING 1000000
#define SIM_NET_BACKOFF_MIN_MS 100
#define SIM_NET_BACKOFF_MAX_MS 5000

struct sim_net_stats {
    uint64_t connects;    /* successful connection set-ups */
    uint64_t disconnects; /* connections lost (peer close, error, timeout) */
    uint64_t timeouts;    /* requests that expired */
    uint64_t requests;    /* requests and oneways sent */
    uint64_t responses;   /* responses matched */
};

/* New set on loop l (borrowed; must outlive the set). 0 or RMQ_ENOMEM. */
int sim_net_new(struct loop *l, struct sim_net **out);
/* Closes every connection, failing their pending requests with RMQ_ESTATE,
 * and frees. Accepts NULL. */
void sim_net_free(struct sim_net *n);

/* A new, unconnected connection to addr ("ip:port" or "[v6]:port", numeric
 * only, so nothing ever blocks on DNS). h is copied; opaque is the owner's
 * request counter (borrowed; Java numbers requests per process, shared by
 * all its connections). 0, RMQ_EINVAL (bad address) or RMQ_ENOMEM. */
int sim_net_conn_new(struct sim_net *n, const char *addr, const struct sim_conn_handler *h, int32_t *opaque,
                     struct sim_conn **out);
const char *sim_conn_addr(const struct sim_conn *c);

/* Sends req (borrowed; its opaque is assigned here) and arranges for cb to
 * run once with the outcome. 0; -ENOTCONN while the connection is waiting
 * out its reconnect backoff; RMQ_E2BIG when the output buffer or the
 * pending table is full; another negative code on a socket error. */
int sim_conn_request(struct sim_conn *c, struct rmq_cmd *req, int64_t timeout_ms, unsigned flags,
                     sim_reply_cb cb, void *ctx);
/* Sends req as a oneway request (flag 2, no reply expected). Same returns. */
int sim_conn_oneway(struct sim_conn *c, struct rmq_cmd *req);
/* Queues a response (borrowed). Same returns. */
int sim_conn_reply(struct sim_conn *c, const struct rmq_cmd *resp);

/* Before sleep: tears down broken connections (failing their requests),
 * then writes queued output, arming writability only where the socket is
 * full. */
void sim_net_before_sleep(struct sim_net *n);
/* Periodic: expires requests past their deadline and reconnects lost
 * connections whose backoff has passed. */
void sim_net_tick(struct sim_net *n);
/* Requests still waiting for a reply, over all connections. */
size_t sim_net_pending(const struct sim_net *n);
const struct sim_net_stats *sim_net_stats(const struct sim_net *n);

#endif
