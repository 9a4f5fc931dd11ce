/* sim_pull.h — a simulated client's process queues: offsets, pulls,
 * persist (sim_pull.c). Loop thread only. */
#ifndef RMQ_SIM_PULL_H
#define RMQ_SIM_PULL_H

#include "sim_state.h"

struct sim_pq *sim_pq_new(struct sim_client *c, struct sim_topic *t, const char *broker, int32_t queue_id);
void sim_pq_unref(struct sim_pq *pq);
/* Starts the offset lookup and then pulling for a new queue. */
void sim_pq_begin(struct sim_pq *pq);
/* Drops a queue: persists its offset (oneway) and stops pulling. */
void sim_pq_drop(struct sim_pq *pq);
/* Runs offset lookups / pulls whose delay has passed. */
void sim_pq_run_due(struct sim_client *c, int64_t now);
/* Oneway UPDATE_CONSUMER_OFFSET for every held queue (persist timer). */
void sim_pq_persist_all(struct sim_client *c);

#endif
