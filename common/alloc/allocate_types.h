/* allocate_types.h — the types of the allocation engine (allocate.h):
 * strategies, queues, options, inputs and a group's result, with the
 * result's inline accessors. Types only; every string is borrowed (see
 * allocate.h). */
#ifndef RMQ_ALLOCATE_TYPES_H
#define RMQ_ALLOCATE_TYPES_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The engine's files call the project's one formatter (err.h) by this name;
 * a macro, so there is no second copy of it to drift. */
#define allocate_fail rmq_fail

/* A message queue (Java MessageQueue). Strings borrowed. */
struct allocate_queue {
    const char *topic;
    const char *broker_name;
    int32_t queue_id;
};

enum allocate_strategy {
    ALLOCATE_AVG = 0,             /* AllocateMessageQueueAveragely */
    ALLOCATE_AVG_BY_CIRCLE,       /* ...AveragelyByCircle */
    ALLOCATE_CONFIG,              /* ...ByConfig: the configured list, no checks */
    ALLOCATE_MACHINE_ROOM,        /* ...ByMachineRoom: broker names "room@name" */
    ALLOCATE_MACHINE_ROOM_NEARBY, /* AllocateMachineRoomNearby over AVG or AVG_BY_CIRCLE */
    ALLOCATE_CONSISTENT_HASH,     /* ...ConsistentHash (MD5 ring) */
};
#define ALLOCATE_STRATEGY_COUNT 6

#define ALLOCATE_DEFAULT_VIRTUAL_NODES 10
/* Upper bound on the entries of one allocate_group result (CONFIG hands the
 * whole list to every consumer, so its size is n_config * n_consumers). */
#define ALLOCATE_MAX_ASSIGNED ((size_t)1 << 25)
/* allocate_assignment.queue_index of a queue that is not in the queue list. */
#define ALLOCATE_NO_INDEX SIZE_MAX

/* One entry of a name -> machine room map. Strings borrowed. */
struct allocate_room {
    const char *name; /* broker name, or client id */
    const char *room;
};

/* What a strategy is configured with. Start from allocate_options_init(),
 * then set the fields of the chosen strategy; the others are ignored. All
 * pointers are borrowed. */
struct allocate_options {
    enum allocate_strategy strategy;

    /* CONSISTENT_HASH: virtual nodes per consumer (default 10). Negative is an
     * error (Java throws); 0 gives an empty ring, so nobody gets anything. */
    long virtual_nodes;

    /* CONFIG: the list every consumer returns as-is. */
    const struct allocate_queue *config;
    size_t n_config;

    /* MACHINE_ROOM: the consumer's room set ("consumeridcs"). */
    const char *const *idcs;
    size_t n_idcs;

    /* MACHINE_ROOM_NEARBY: inner strategy, ALLOCATE_AVG or
     * ALLOCATE_AVG_BY_CIRCLE (default AVG). */
    enum allocate_strategy inner;
    /* MACHINE_ROOM_NEARBY rooms. With rooms_by_rule set, every room comes from
     * allocate_room_by_rule() and the maps are ignored. Otherwise a queue's
     * room is broker_rooms[brokerName] and a consumer's is
     * consumer_rooms[clientId] (the last entry wins for a repeated name).
     * A missing or empty room is an error, like the Java resolver's
     * IllegalArgumentException. */
    int rooms_by_rule;
    const struct allocate_room *broker_rooms;
    size_t n_broker_rooms;
    const struct allocate_room *consumer_rooms;
    size_t n_consumer_rooms;
};

/* The group's lists (mqAll, cidAll). Borrowed. Duplicated consumer ids are
 * kept, as the client keeps them: each copy's index is the first
 * occurrence's. */
struct allocate_input {
    const struct allocate_queue *queues;
    size_t n_queues;
    const char *const *consumers;
    size_t n_consumers;
};

/* One queue handed to a consumer in an allocate_group result. */
struct allocate_assignment {
    struct allocate_queue queue; /* strings borrowed from the input or opt->config */
    size_t queue_index;          /* index into result->queues, or ALLOCATE_NO_INDEX */
};

/* Every consumer's allocation plus the group check. Owned by the caller
 * (allocate_result_free, the only way to free any of its arrays); all arrays
 * belong to the result, all strings are borrowed from the input and options
 * given to allocate_group(). */
struct allocate_result {
    enum allocate_strategy strategy;
    /* The client's sorted mqAll and cidAll. */
    struct allocate_queue *queues;
    size_t n_queues;
    const char **consumers;
    size_t n_consumers;
    /* consumer_first[i]: index of the first occurrence of consumers[i]; a
     * duplicated id computes (and so holds) the same queues as its first. */
    size_t *consumer_first;
    /* Consumer i's queues in the strategy's own order:
     * assigned[assigned_start[i] .. assigned_start[i + 1]). */
    size_t *assigned_start; /* n_consumers + 1 entries */
    struct allocate_assignment *assigned;
    size_t n_assigned;
    /* Owners view: queues[q] is held by consumers
     * owners[owner_start[q] .. owner_start[q + 1]) (consumer indexes,
     * ascending). Each position of a duplicated id counts as an owner, since
     * each of those processes pulls the queue. */
    size_t *owner_start; /* n_queues + 1 entries */
    size_t *owners;
    /* Queue indexes with no owner, and with two or more, ascending. */
    size_t *unassigned;
    size_t n_unassigned;
    size_t *overlapping;
    size_t n_overlapping;
    /* Assignments of queues that are not in the queue list (CONFIG only). */
    size_t n_foreign;
    /* Private to allocate_group.c: most arrays above share one block, so they are
     * freed only by allocate_result_free(), never one by one. */
    void *mem_;
    size_t mem_len_;
    size_t assigned_cap_;
};

/* Consumer i's queues (borrowed from r) and how many. */
static inline const struct allocate_assignment *allocate_result_queues_of(const struct allocate_result *r,
                                                                          size_t i)
{
    return r->assigned + r->assigned_start[i];
}
static inline size_t allocate_result_count_of(const struct allocate_result *r, size_t i)
{
    return r->assigned_start[i + 1] - r->assigned_start[i];
}
/* Number of owners of queue q. */
static inline size_t allocate_result_owner_count(const struct allocate_result *r, size_t q)
{
    return r->owner_start[q + 1] - r->owner_start[q];
}

#endif
