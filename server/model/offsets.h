/* offsets.h — committed consumer offsets held in memory, and each queue's
 * highest committed offset (rmqcoord stores no messages, so that is the
 * queue's max offset). The store keeps them across restarts; this table
 * answers. Loop thread only. */
#ifndef RMQ_OFFSETS_H
#define RMQ_OFFSETS_H

#include "hashmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One group's committed offset of one queue. */
struct offset_entry {
    int64_t offset;
    int64_t updated_ms; /* broker clock of the last commit; 0 when unknown (loaded at start) */
    /* An admin reset moved the offset (INVOKE_BROKER_TO_RESET_OFFSET): the
     * clients' own commits for the queue are ignored until their next pull
     * of it is answered PULL_OFFSET_MOVED. */
    bool reset_pending;
    uint64_t channel_id; /* the channel of the last commit by a client (0: none or unknown) */
};

struct offsets {
    struct hashmap committed; /* "group\0topic\0qid" -> struct offset_entry* (owned) */
    struct hashmap queue_max; /* "topic\0qid" -> int64_t* (owned) */
    uint64_t changes;         /* counts every put and delete: a caller tells whether anything moved */
};

void offsets_init(struct offsets *o);
/* Frees every entry; o may be reused after offsets_init. */
void offsets_free(struct offsets *o);
/* Sets group's offset of (topic, qid) and raises the queue's max; 0 or
 * RMQ_ENOMEM (the table is then unchanged for that key). */
int offsets_put(struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t offset);
/* The same, recording the commit time now_ms. */
int offsets_put_at(struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t offset,
                   int64_t now_ms);
/* The entry (changeable: reset_pending), or NULL when group never committed (topic, qid). */
struct offset_entry *offsets_find(const struct offsets *o, const char *group, const char *topic, int32_t qid);
typedef void (*offsets_visit)(void *ctx, const char *group, const char *topic, int32_t qid,
                              struct offset_entry *e);
/* Calls visit for every committed entry, in no order; visit must not add or remove entries. */
void offsets_each(const struct offsets *o, offsets_visit visit, void *ctx);
/* Forgets every group's offsets of topic, and the topic's queue maxima
 * (DELETE_TOPIC_IN_BROKER); returns how many committed entries went. */
size_t offsets_delete_topic(struct offsets *o, const char *topic);
/* Forgets every offset group committed (DELETE_SUBSCRIPTIONGROUP with cleanOffset). */
size_t offsets_delete_group(struct offsets *o, const char *group);
/* 0 with *out set, or RMQ_ENOTFOUND when group never committed (topic, qid). */
int offsets_get(const struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t *out);
/* The highest offset any group committed for (topic, qid); 0 when none. */
int64_t offsets_queue_max(const struct offsets *o, const char *topic, int32_t qid);

#endif
