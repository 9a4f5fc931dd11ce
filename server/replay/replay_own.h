/* replay_own.h — what each modeled client holds and who owns each
 * queue (replay_own.c). */
#ifndef RMQ_REPLAY_OWN_H
#define RMQ_REPLAY_OWN_H

#include "replay_state.h"

char *rp_owners_string(const struct rp_queue *q);
struct rp_queue *rp_gt_queue(struct rp_gt *gt, const char *broker, int32_t qid);
int rp_rebalance(struct replay *rp, struct rp_client *c, int kind);
/* Whether a rebalance now could change what c holds. */
bool rp_client_stale(struct replay *rp, const struct rp_client *c);
void rp_client_drop_all(struct replay *rp, struct rp_client *c, const char *why);
int rp_client_set_topics(struct replay *rp, struct rp_client *c, const struct rmq_consumer_data *cd);
int rp_route_update(struct replay *rp, const struct trace_event *ev);
void rp_gt_subscribers(struct replay *rp, struct rp_client *c, int delta);
void rp_own_free(struct replay *rp);
void rp_queue_close_all(struct replay *rp, int64_t end);
struct rp_gt *rp_gt_get(struct replay *rp, const char *group, const char *topic);

#endif
