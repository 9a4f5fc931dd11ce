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

/* One queue: offsets in [min_offset, end_offset) are stored and committed
 * (what a pull may see), [end_offset, next_offset) are in the open batch. */
struct mq_range {
    char *topic; /* owned */
    int32_t queue_id;
    int64_t min_offset;
    int64_t end_offset;
    int64_t next_offset;
    bool dirty; /* in the dirty list: reserved since the last commit */
};

struct message_queues {
    struct hashmap map;            /* "topic\0qid" -> struct mq_range* (owned) */
    int64_t next_physical_id;      /* > 0 */
    int64_t committed_physical_id; /* next_physical_id at the last good commit */
    struct mq_range **dirty;       /* owned array of borrowed ranges */
    size_t ndirty, dirty_cap;
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
/* Gives back the last n reserved offsets and ids of the queue (the puts
 * that failed; n may be 0). */
void message_queues_unreserve(struct message_queues *q, const char *topic, int32_t qid, int n);

/* Retention removed the queue's messages below offset: the queue's min
 * offset rises to it (never past its committed end, nor down). */
void message_queues_raise_min(struct message_queues *q, const char *topic, int32_t qid, int64_t offset);

/* Called per queue whose reserved offsets just became visible. */
typedef void (*mq_committed_cb)(void *ctx, const struct mq_range *r);
/* The open batch's fate: stored makes every reservation since the last
 * call visible (cb, may be NULL, hears of each queue); not stored gives
 * them back (the rows went with the batch). */
void message_queues_commit(struct message_queues *q, bool stored, mq_committed_cb cb, void *ctx);

#endif
