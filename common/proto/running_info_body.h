/* running_info_body.h — the ConsumerRunningInfo body (the reply to
 * GET_CONSUMER_RUNNING_INFO, 307): the parser the daemon uses for the queues
 * a client says it holds, and the encoder a simulated client answers with.
 *
 * Java writes the body with fastjson, whose map keys may be objects written
 * inline: "mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{...},...}
 * (PROTOCOL: docs/protocol.md §3.8). This parser walks that non-standard JSON; it also
 * accepts keys that are quoted JSON strings of the object (fastjson's
 * browser-compatible form); the encoder writes the inline form. A queue
 * whose ProcessQueueInfo says "droped":true is not counted as held. Pure;
 * jansson for the pieces that are standard JSON.
 */
#ifndef RMQ_RUNNING_INFO_BODY_H
#define RMQ_RUNNING_INFO_BODY_H

#include "body_json.h"
#include "buf.h"
#include "heartbeat_body.h"

#include <stddef.h>
#include <stdint.h>

struct rmq_running_info {
    struct rmq_mq *mqs; /* owned, in the order written */
    size_t nmqs;
    char *strategy;       /* owned: properties.allocateMessageQueueStrategy, or NULL */
    char *client_version; /* owned: properties.PROP_CLIENT_VERSION, or NULL */
};

/* What one reply may carry. A Java consumer holding 1,000 queues writes
 * about 380 KB (a ProcessQueueInfo is ~330 bytes); the bounds leave room
 * for far larger consumers while keeping one parse short (docs/reliability.md). */
#define RMQ_RUNNING_INFO_MAX_BYTES (4 * 1024 * 1024)
#define RMQ_RUNNING_INFO_MAX_QUEUES 16384

/* Parses body into *out (zero-initialise first). 0, RMQ_EPROTO (err says
 * where), RMQ_E2BIG (over a bound above: the body is not scanned past it)
 * or RMQ_ENOMEM; on error *out is cleared. */
int rmq_running_info_parse(const uint8_t *body, size_t len, struct rmq_running_info *out, char *err,
                           size_t errlen);
void rmq_running_info_clear(struct rmq_running_info *ri);

/* One held queue of a body to encode. Strings borrowed. */
struct rmq_running_info_queue {
    const char *topic;
    const char *broker_name;
    int32_t queue_id;
    int64_t commit_offset;
    int64_t last_pull_ms; /* wall clock */
};
/* One properties entry. Strings borrowed. */
struct rmq_running_info_prop {
    const char *key;
    const char *value;
};
/* Everything a ConsumerRunningInfo body to encode reports. Borrowed. */
struct rmq_running_info_spec {
    const struct rmq_running_info_prop *props;
    size_t nprops;
    const struct rmq_running_info_queue *queues;
    size_t nqueues;
    const struct rmq_subscription *subs; /* statusTable keys are their topics */
    size_t nsubs;
};
/* Appends {"mqTable":..,"properties":..,"statusTable":..,"subscriptionSet":..}
 * as fastjson writes it: mqTable keys are inline, unquoted MessageQueue
 * objects (PROTOCOL: docs/protocol.md §3.8) with a ProcessQueueInfo of a
 * consumer that caches nothing; statusTable has zero ConsumeStatus values.
 * Every table is written in the order given: Java's are TreeMaps, so pass
 * queues in MessageQueue order and subs in SubscriptionData order
 * (properties is a Hashtable: any order). 0 or a buf error (out unchanged). */
int rmq_running_info_encode(const struct rmq_running_info_spec *ri, struct buf *out);

#endif
