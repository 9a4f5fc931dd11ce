/* allocate_plan.h — a strategy's plan over one (mqAll, cidAll) pair, shared
 * by allocate_one() and allocate_group() (allocate_plan.c).
 *
 * Every Java strategy call first derives something from the whole of mqAll
 * and cidAll (the consumer's index, the filtered queue list, the room
 * grouping, the hash ring and each queue's owner) and then picks the current
 * consumer's slice. A plan is that derived part, built once over the lists in
 * the order given; allocate_plan_emit() is the slice. allocate_one() builds a
 * plan per call, as the client does; allocate_group() builds one for all.
 * Pure; any thread. */
#ifndef RMQ_ALLOCATE_PLAN_H
#define RMQ_ALLOCATE_PLAN_H

#include "allocate_types.h"

#include <stddef.h>

/* Derived state of one strategy over one (mqAll, cidAll) pair, not CONFIG.
 * Indexes refer to positions in the lists the plan was built over. */
struct allocate_plan {
    enum allocate_strategy strategy;
    enum allocate_strategy inner; /* NEARBY */
    size_t n_queues;
    size_t n_consumers;
    const size_t *first; /* CONSISTENT_HASH: per consumer, its first occurrence */
    size_t *first_own;   /* first, when the plan computed it */
    /* MACHINE_ROOM: indexes of the kept queues. NEARBY: queue indexes
     * grouped by room (list order kept within a room). CONSISTENT_HASH:
     * queue indexes grouped by owner. */
    size_t *list;
    size_t n_list;
    /* NEARBY: group g of list is [group_start[g], group_start[g + 1]) per
     * room; CONSISTENT_HASH: per consumer index. */
    size_t *group_start;
    /* NEARBY only. */
    size_t n_rooms;
    size_t *c_room;         /* per consumer: room id */
    size_t *pos_in_room;    /* per consumer: position among its room's consumers */
    size_t *room_consumers; /* per room: consumer count */
    size_t *orphans;        /* rooms with queues and no consumers, sorted */
    size_t n_orphans;
};

/* Builds the plan for opt (already checked) over in (already checked,
 * non-empty lists). first, if not NULL, is each consumer's first-occurrence
 * index, already known to the caller (borrowed; otherwise computed when the
 * strategy needs it). Returns 0, RMQ_EINVAL (missing room), RMQ_E2BIG (ring
 * too large) or RMQ_ENOMEM, err set; on error the plan needs no free. */
int allocate_plan_init(struct allocate_plan *plan, const struct allocate_options *opt,
                       const struct allocate_input *in, const size_t *first, char *err, size_t err_len);

/* Writes the queue indexes the consumer at first-occurrence index idx gets,
 * in the strategy's order, into out (room for plan->n_queues). Returns how
 * many. */
size_t allocate_plan_emit(const struct allocate_plan *plan, size_t idx, size_t *out);

/* Frees what the plan owns; a zeroed plan is fine. */
void allocate_plan_free(struct allocate_plan *plan);

#endif
