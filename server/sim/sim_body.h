/* sim_body.h — what `rmqcoord sim` puts into the bodies it sends, shaped
 * like a Java 4.9.x push consumer's: the HeartbeatData it sends, and the
 * sim's own JSON Lines output. The wire formats themselves, and the parsers
 * of the TopicRouteData and consumer list it reads, are common/proto's
 * (heartbeat_body.h, running_info_body.h, route_body.h,
 * consumer_list_body.h, included here for the sim's files). The
 * ConsumerRunningInfo the sim answers with is sim_rinfo.h.
 *
 * Encoders leave the buffer unchanged on error. Pure: no I/O, no clock; any
 * thread.
 */
#ifndef RMQ_SIM_BODY_H
#define RMQ_SIM_BODY_H

#include "allocate.h"
#include "buf.h"
#include "consumer_list_body.h"
#include "heartbeat_body.h"
#include "route_body.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One subscription as the sim reports it ("*" expression, TAG type). */
struct sim_sub {
    const char *topic; /* borrowed */
    int64_t sub_version;
};

/* The SubscriptionData a sim subscription is (PROTOCOL: docs/protocol.md §3.1
 * a Java "*" subscription: empty tagsSet and codeSet). Strings borrowed
 * from s. */
struct rmq_subscription sim_sub_data(const struct sim_sub *s);

/* What goes into one HeartbeatData body. All pointers borrowed. */
struct sim_heartbeat_spec {
    const char *client_id;
    const char *group;
    bool broadcast; /* messageModel BROADCASTING instead of CLUSTERING */
    bool v5_fields; /* 5.x clients add heartbeatFingerprint 0 and withoutSub false */
    const struct sim_sub *subs;
    size_t nsubs;
};

/* Appends the HeartbeatData a Java 4.9.x push consumer sends (one consumer
 * group consuming from the last offset, the client's inner producer) through
 * rmq_heartbeat_encode. 0, RMQ_ENOMEM or a buf error. */
int sim_heartbeat_encode(const struct sim_heartbeat_spec *hb, struct buf *out);

/* Appends one holdings line (no newline):
 * {"t":..,"clientId":..,"topic":..,"queues":[{"brokerName","queueId"}..],"reason":..} */
int sim_holdings_line_encode(struct buf *out, int64_t t_ms, const char *client_id, const char *topic,
                             const struct allocate_queue *qs, size_t n, const char *reason);

#endif
