/* sim_rebalance.h — the pure steps of one simulated client's rebalance of
 * one topic: the subscribe set from a route, the client's own allocation
 * (sorted inputs, then allocate_one, as RebalanceImpl does), and the diff
 * against what it holds.
 *
 * Strings in results are borrowed from the inputs. Pure; any thread.
 */
#ifndef RMQ_SIM_REBALANCE_H
#define RMQ_SIM_REBALANCE_H

#include "allocate.h"
#include "sim_body.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The subscribe set (mqAll) of topic from route r: readQueueNums queues of
 * every queueData with the read permission (PROTOCOL: docs/protocol.md §8.2), sorted as the
 * client sorts it (PROTOCOL: docs/protocol.md §11.1), so a caller can keep it per route.
 * *out is new (rmq_free; non-NULL even when empty); strings borrowed from
 * topic and r. 0, RMQ_E2BIG (over SIM_REBALANCE_MAX_QUEUES) or RMQ_ENOMEM. */
#define SIM_REBALANCE_MAX_QUEUES 65536
int sim_rebalance_mq_all(const struct rmq_route_info *r, const char *topic, struct allocate_queue **out,
                         size_t *n);

/* The queues client self gets for topic: mq must be sorted (as
 * sim_rebalance_mq_all returns it); a copy of cids is sorted (PROTOCOL: docs/protocol.md §11.1
 * the client sorts both), then the strategy runs. With
 * CONFIG only the configured queues of this topic are kept (Java hands the
 * whole list to every topic's rebalance; the union is the same). *out is new
 * (rmq_free). 0, or allocate_one's errors with err filled. */
int sim_rebalance_allocate(const struct allocate_options *opt, const char *topic,
                           const struct allocate_queue *mq, size_t nmq, const char *const *cids, size_t ncids,
                           const char *self, struct allocate_queue **out, size_t *nout, char *err,
                           size_t errlen);

/* Which held queues are gone and which new ones are added. Indexes point
 * into the old and new arrays; both lists ascend. */
struct sim_diff {
    size_t *removed; /* indexes into old; owns the block added and old_of_new point into */
    size_t nremoved;
    size_t *added; /* indexes into new */
    size_t nadded;
    /* nnew entries: the old index of a kept queue, SIM_DIFF_ADDED for a new
     * one, SIM_DIFF_DUP for a repeat of an earlier entry of the new list. */
    size_t *old_of_new;
};
#define SIM_DIFF_ADDED SIZE_MAX
#define SIM_DIFF_DUP (SIZE_MAX - 1)

/* Compares the sets old[0..nold) and nw[0..nnew) (duplicates count once).
 * O((n+m) log(n+m)). 0 (d new; sim_diff_clear) or RMQ_ENOMEM. */
int sim_diff_compute(const struct allocate_queue *old, size_t nold, const struct allocate_queue *nw,
                     size_t nnew, struct sim_diff *d);
void sim_diff_clear(struct sim_diff *d);
static inline bool sim_diff_changed(const struct sim_diff *d)
{
    return d->nremoved > 0 || d->nadded > 0;
}

#endif
