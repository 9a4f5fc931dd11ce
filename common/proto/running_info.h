/* running_info.h — the queues a client says it holds, from its
 * GET_CONSUMER_RUNNING_INFO (307) reply body (ConsumerRunningInfo).
 *
 * Java writes the body with fastjson, whose map keys may be objects written
 * inline: "mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{...},...}
 * (PROTOCOL: docs/protocol.md §3.8). This parser walks that non-standard JSON; it also
 * accepts keys that are quoted JSON strings of the object (fastjson's
 * browser-compatible form). A queue whose ProcessQueueInfo says
 * "droped":true is not counted as held. Pure; jansson for the pieces that
 * are standard JSON.
 */
#ifndef RMQ_RUNNING_INFO_H
#define RMQ_RUNNING_INFO_H

#include "rmq_body.h"

#include <stddef.h>
#include <stdint.h>

struct rmq_running_info {
    struct rmq_mq *mqs; /* owned, in the order written */
    size_t nmqs;
    char *strategy;       /* owned: properties.allocateMessageQueueStrategy, or NULL */
    char *client_version; /* owned: properties.PROP_CLIENT_VERSION, or NULL */
};

/* Parses body into *out (zero-initialise first). 0, RMQ_EPROTO (err says
 * where) or RMQ_ENOMEM; on error *out is cleared. */
int rmq_running_info_parse(const uint8_t *body, size_t len, struct rmq_running_info *out, char *err,
                           size_t errlen);
void rmq_running_info_clear(struct rmq_running_info *ri);

#endif
