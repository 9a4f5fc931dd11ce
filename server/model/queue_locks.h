/* queue_locks.h — per-group queue locks of orderly consumers
 * (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, docs/protocol.md §7): a lock is granted
 * when the queue is free, already held by the same client id, or its
 * holder's lease has run out; it is released only by its holder. In memory
 * only, like the broker's. Loop thread only. */
#ifndef RMQ_QUEUE_LOCKS_H
#define RMQ_QUEUE_LOCKS_H

#include "hashmap.h"
#include "rmq_body.h"

#include <stdbool.h>
#include <stdint.h>

struct queue_locks {
    struct hashmap map; /* "group\0topic\0broker\0qid" -> struct queue_lock* (owned) */
};

void queue_locks_init(struct queue_locks *q);
/* Frees every lock; q may be reused after queue_locks_init. */
void queue_locks_free(struct queue_locks *q);
/* Takes or renews the lock of mq in group for client at now_ms; true when
 * client holds it afterwards (false also when out of memory). A lock not
 * renewed for more than lease_ms may be taken by another client. */
bool queue_locks_acquire(struct queue_locks *q, const char *group, const char *client,
                         const struct rmq_mq *mq, int64_t now_ms, int64_t lease_ms);
/* Releases the lock of mq in group if client holds it; otherwise nothing. */
void queue_locks_release(struct queue_locks *q, const char *group, const char *client,
                         const struct rmq_mq *mq);
/* The holder of mq's lock in group (borrowed), or NULL when none. */
const char *queue_locks_holder(const struct queue_locks *q, const char *group, const struct rmq_mq *mq);

#endif
