/* offsets.h — committed consumer offsets held in memory, and each queue's
 * highest committed offset (rmqcoord stores no messages, so that is the
 * queue's max offset). The store keeps them across restarts; this table
 * answers. Loop thread only. */
#ifndef RMQ_OFFSETS_H
#define RMQ_OFFSETS_H

#include "hashmap.h"

#include <stdint.h>

struct offsets {
    struct hashmap committed; /* "group\0topic\0qid" -> int64_t* (owned) */
    struct hashmap queue_max; /* "topic\0qid" -> int64_t* (owned) */
};

void offsets_init(struct offsets *o);
/* Frees every entry; o may be reused after offsets_init. */
void offsets_free(struct offsets *o);
/* Sets group's offset of (topic, qid) and raises the queue's max; 0 or
 * RMQ_ENOMEM (the table is then unchanged for that key). */
int offsets_put(struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t offset);
/* 0 with *out set, or RMQ_ENOTFOUND when group never committed (topic, qid). */
int offsets_get(const struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t *out);
/* The highest offset any group committed for (topic, qid); 0 when none. */
int64_t offsets_queue_max(const struct offsets *o, const char *topic, int32_t qid);

#endif
