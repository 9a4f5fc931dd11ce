/* remoting_client.h — the client side of remoting connections, used by
 * `rmqcoord sim`, broker registration (--role broker) and live replay
 * (`rmqcoord replay --target`).
 *
 * A rclient_conn is one TCP connection to one "ip:port": every
 * rclient_conn_new is a connection of its own, so an owner may hold several
 * to the same address (live replay, one per recorded channel) or key them by
 * address as real clients do (sim). It connects lazily on first use, or at
 * once with rclient_conn_connect (non-blocking), queues encoded frames in a
 * bounded output buffer written before the loop sleeps, matches responses
 * to requests by opaque, expires requests that outlive their timeout, and
 * reconnects with a bounded exponential backoff after the peer closes,
 * unless its owner closes it (rclient_conn_close). It knows frames and
 * opaques, not request codes. The sockets are core's dialed conns (conn.h:
 * the same decoder, output queue, flush and reap as accepted ones), the
 * requests waiting for a reply a core pending table (pending.h).
 *
 * Callbacks: a reply callback runs exactly once for every request that was
 * accepted (rclient_conn_request returned 0): with the response, or with a
 * negative status (-ETIMEDOUT, -ECONNRESET, -ECANCELED after the owner
 * closed the connection, RMQ_ESTATE at shutdown). It never runs for a
 * request that was refused. A broken connection is torn down in
 * rclient_before_sleep, never inside its own event callback.
 *
 * Loop thread only.
 */
#ifndef RMQ_REMOTING_CLIENT_H
#define RMQ_REMOTING_CLIENT_H

#include "remoting_cmd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct rclient;
struct rclient_conn;

/* resp is borrowed for the call; NULL when status < 0. */
typedef void (*rclient_reply_cb)(void *ctx, int status, const struct rmq_cmd *resp);

/* What a connection's owner hears. on_request: a request the peer sent
 * (borrowed). on_up: the connection is established; reconnected is true
 * when it had been up before and was lost. on_down: the connection was
 * lost (was_up) or could not be made (!was_up), after its pending requests
 * failed; why is borrowed. It reconnects after the backoff unless the owner
 * closes it, which it may do here. Without on_down the loss is logged at
 * info; with it, the owner reports it. Any may be NULL. None runs after
 * rclient_conn_close. */
struct rclient_conn_handler {
    void (*on_request)(void *ctx, struct rclient_conn *c, const struct rmq_cmd *req);
    void (*on_up)(void *ctx, struct rclient_conn *c, bool reconnected);
    void *ctx;
    void (*on_down)(void *ctx, struct rclient_conn *c, bool was_up, const char *why);
};

/* Java invokeSync: a timeout also closes the connection (PROTOCOL: docs/protocol.md §10.2
 * clientCloseSocketIfTimeout), which the peer sees as the member leaving. */
#define SIM_REQ_SYNC 0x1u

#define RCLIENT_MAX_OUTPUT ((size_t)8 << 20)
#define RCLIENT_MAX_PENDING 1000000
#define RCLIENT_BACKOFF_MIN_MS 100
#define RCLIENT_BACKOFF_MAX_MS 5000

struct rclient_stats {
    uint64_t connects;    /* successful connection set-ups */
    uint64_t disconnects; /* connections lost (peer close, error, timeout) */
    uint64_t timeouts;    /* requests that expired */
    uint64_t requests;    /* requests and oneways sent */
    uint64_t responses;   /* responses matched */
};

/* New set on loop l (borrowed; must outlive the set). 0 or RMQ_ENOMEM. */
int rclient_new(struct loop *l, struct rclient **out);
/* Closes every connection, failing their pending requests with RMQ_ESTATE,
 * and frees. Accepts NULL. */
void rclient_free(struct rclient *n);

/* A new, unconnected connection to addr ("ip:port" or "[v6]:port", numeric
 * only, so nothing ever blocks on DNS). h is copied; opaque is the owner's
 * request counter (borrowed; Java numbers requests per process, shared by
 * all its connections). 0, RMQ_EINVAL (bad address) or RMQ_ENOMEM. */
int rclient_conn_new(struct rclient *n, const char *addr, const struct rclient_conn_handler *h,
                     int32_t *opaque, struct rclient_conn **out);
const char *rclient_conn_addr(const struct rclient_conn *c);
/* Connects now rather than at the first send, so the peer sees the
 * connection before any request. 0 (connecting or up), -ENOTCONN while
 * waiting out a backoff or after rclient_conn_close, or -errno (the connect
 * failed at once; it is retried after the backoff). */
int rclient_conn_connect(struct rclient_conn *c);
/* The owner is done with c: before the loop sleeps, what the socket takes
 * of its queued output is written (as of a connect the kernel has already
 * completed), the socket is closed, pending requests fail with -ECANCELED
 * and c is freed. No handler callback runs after this call and c must not
 * be used again. Safe from c's own callbacks. */
void rclient_conn_close(struct rclient_conn *c);

/* Sends req (borrowed; its opaque is assigned here) and arranges for cb to
 * run once with the outcome. 0; -ENOTCONN while the connection is waiting
 * out its reconnect backoff; RMQ_E2BIG when the output buffer or the
 * pending table is full; another negative code on a socket error. */
int rclient_conn_request(struct rclient_conn *c, struct rmq_cmd *req, int64_t timeout_ms, unsigned flags,
                         rclient_reply_cb cb, void *ctx);
/* Sends req as a oneway request (flag 2, no reply expected). Same returns. */
int rclient_conn_oneway(struct rclient_conn *c, struct rmq_cmd *req);
/* Queues a response (borrowed). Same returns. */
int rclient_conn_reply(struct rclient_conn *c, const struct rmq_cmd *resp);

/* Before sleep: tears down broken connections (failing their requests),
 * then writes queued output, arming writability only where the socket is
 * full. */
void rclient_before_sleep(struct rclient *n);
/* Periodic: expires requests past their deadline and reconnects lost
 * connections whose backoff has passed. */
void rclient_tick(struct rclient *n);
/* Requests still waiting for a reply, over all connections. */
size_t rclient_pending(const struct rclient *n);
const struct rclient_stats *rclient_stats(const struct rclient *n);

#endif
