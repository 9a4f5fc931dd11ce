/* outbound.h — requests the daemon itself sends to a client over the
 * client's own channel (GET_CONSUMER_RUNNING_INFO), matched to their replies
 * by opaque. The loop never waits for them: each has a timeout, and its
 * callback runs exactly once — with the reply, or with NULL on timeout or
 * when the connection closes (PROTOCOL (docs/protocol.md §3.8): many clients never answer, e.g.
 * ali-ons). Loop thread only.
 */
#ifndef RMQ_OUTBOUND_H
#define RMQ_OUTBOUND_H

#include "pending.h"
#include "remoting_cmd.h"

#include <stdbool.h>
#include <stdint.h>

struct broker;
struct conn;

/* owner is the struct broker; resp is borrowed for the call, NULL = no
 * reply (timeout, closed, shutdown). */
typedef pending_cb outbound_cb;

/* Requests waiting on one client connection at most (SYSTEM_BUSY-like
 * refusal past it, counted as a limit hit): a member that reads but never
 * answers cannot park an unbounded number of forwarded asks. */
#define OUTBOUND_MAX_PER_CONN 1024

/* Sets up s->outbound (empty). 0 or RMQ_ENOMEM. */
int outbound_init(struct broker *s);
/* Requests waiting for an answer. */
size_t outbound_count(const struct broker *s);

/* Sends req (code, extFields, body set by the caller; opaque, flag and
 * serialize type set here: a JSON request) on c; the deadline is on the
 * loop clock (clients answer in real time even with a virtual clock). 0, or
 * an error after which cb is never called: RMQ_E2BIG when c already has
 * OUTBOUND_MAX_PER_CONN requests waiting. */
int outbound_send(struct broker *s, struct conn *c, struct rmq_cmd *req, int64_t timeout_ms, outbound_cb cb,
                  void *ctx);
/* A response frame arrived on c: runs the matching callback. Returns false
 * when nothing was waiting for that opaque (logged and dropped). */
bool outbound_on_response(struct broker *s, struct conn *c, const struct rmq_cmd *resp);
/* Times out what is due. */
void outbound_on_timer(struct broker *s);
/* c is closing: its pending requests get their callback with NULL. */
void outbound_drop_conn(struct broker *s, const struct conn *c);
/* Shutdown: every pending request gets its callback with NULL. */
void outbound_free_all(struct broker *s);

#endif
