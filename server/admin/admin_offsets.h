/* admin_offsets.h — GET /api/groups/{group}/offsets, loop side: per queue
 * the committed offset, its last commit time, the expected owner (the
 * allocation of the live members) and the reported holder (the client
 * long-polling the queue now, else the one that committed it last).
 * Loop thread only. */
#ifndef RMQ_ADMIN_OFFSETS_H
#define RMQ_ADMIN_OFFSETS_H

#include <jansson.h>

struct broker;
struct buf;

/* New reply with *status set; query: topic (optional), strategy and its
 * options as for the allocation route. */
json_t *admin_group_offsets(struct broker *s, const char *group, const json_t *query, int *status);

/* POST /api/groups/{group}/offsets/reset: body {"topic" (required),
 * "timestamp" (default -1), "queueId", "offset", "force" (default true),
 * "dryRun"}; the reset of INVOKE_BROKER_TO_RESET_OFFSET (stored before the
 * reply). New reply with *status set. */
json_t *admin_group_offsets_reset(struct broker *s, const char *group, const json_t *body, int *status);
/* POST /api/groups/{group}/offsets/clone: body {"from" (required), "topic",
 * "dryRun"}: the source group's committed offsets (of topic, or all)
 * committed for group, as mqadmin cloneGroupOffset does. */
json_t *admin_group_offsets_clone(struct broker *s, const char *group, const json_t *body, int *status);

/* The /metrics series rmqcoord_consumer_offset{group,topic,broker,queue}:
 * every committed offset (one sample per broker of the topic), sorted.
 * 0 or an error. */
int admin_offsets_metrics(struct buf *b, struct broker *s);

#endif
