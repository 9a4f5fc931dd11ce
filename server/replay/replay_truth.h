/* replay_truth.h — the recorded holdings of the clients against the
 * model (replay_truth.c). */
#ifndef RMQ_REPLAY_TRUTH_H
#define RMQ_REPLAY_TRUTH_H

#include "replay_state.h"

/* A holdings line: the client's answer, compared with the model now. */
int rp_truth_feed(struct replay *rp, const struct trace_event *ev);
/* End of the trace: closes every round and interval. */
void rp_truth_finish(struct replay *rp);
int rp_truth_report(struct replay *rp);
void rp_truth_free(struct replay *rp);

#endif
