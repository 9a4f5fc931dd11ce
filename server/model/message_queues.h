/* message_queues.h — what the loop knows of the stored messages without
 * reading them: per (topic, queue) its lowest offset and its next offset
 * (one past the highest stored), and the next physical id to hand out.
 * Loaded at start from store_load_queue_ranges, advanced by each put.
 * Loop thread only.
 */
#ifndef RMQ_MESSAGE_QUEUES_H
#define RMQ_MESSAGE_QUEUES_H

#include "hashmap.h"

#include <stdbool.h>
#include <stdint.h>

struct message_queues {
    struct hashmap map;       /* "topic\0qid" -> struct mq_range* (owned) */
    int64_t next_physical_id; /* > 0 */
};

/* One queue: offsets in [min_offset, next_offset) are stored (retention
 * may raise min_offset); an empty queue has min == next. */
struct mq_range {
    int64_t min_offset;
    int64_t next_offset;
};

void message_queues_init(struct message_queues *q);
void message_queues_free(struct message_queues *q);
/* The queue's range, or NULL when it never held a message (borrowed). */
const struct mq_range *message_queues_get(const struct message_queues *q, const char *topic, int32_t qid);
/* Records a stored range (start-up load): 0 or RMQ_ENOMEM. */
int message_queues_load(struct message_queues *q, const char *topic, int32_t qid, int64_t min_offset,
                        int64_t max_offset);
/* Reserves n consecutive offsets of the queue and n physical ids: *offset
 * and *physical_id get the first of each. 0 or RMQ_ENOMEM (nothing
 * reserved). The caller stores them or calls message_queues_unreserve. */
int message_queues_reserve(struct message_queues *q, const char *topic, int32_t qid, int n, int64_t *offset,
                           int64_t *physical_id);
/* Gives back the last reservation of n (a put failed before anything was
 * stored). */
void message_queues_unreserve(struct message_queues *q, const char *topic, int32_t qid, int n);

#endif
