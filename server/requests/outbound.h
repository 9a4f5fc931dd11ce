/* outbound.h — requests the daemon itself sends to a client over the
 * client's own channel (GET_CONSUMER_RUNNING_INFO), matched to their replies
 * by opaque. The loop never waits for them: each has a timeout, and its
 * callback runs exactly once — with the reply, or with NULL on timeout or
 * when the connection closes (PROTOCOL (docs/protocol.md §3.8): many clients never answer, e.g.
 * ali-ons). Loop thread only.
 */
#ifndef RMQ_OUTBOUND_H
#define RMQ_OUTBOUND_H

#include "remoting_cmd.h"

#include <stdbool.h>
#include <stdint.h>

struct broker;
struct conn;

/* resp is borrowed for the call; NULL = no reply (timeout, closed, shutdown). */
typedef void (*outbound_cb)(struct broker *s, void *ctx, const struct rmq_cmd *resp);

struct outbound_pending {
    struct conn *conn; /* borrowed; cleared when it closes */
    int32_t opaque;
    int64_t deadline_ms; /* loop clock: clients answer in real time even with a virtual clock */
    outbound_cb cb;
    void *ctx;
};

/* Sends req (code, extFields, body set by the caller; opaque, flag and
 * serialize type set here: a JSON request) on c. 0, or an error after which
 * cb is never called. */
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
