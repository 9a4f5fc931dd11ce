/* replay_out.h — the replay's timeline as it happens: changes,
 * notifications, allocation changes (replay_out.c), and the formatting the
 * report shares. */
#ifndef RMQ_REPLAY_OUT_H
#define RMQ_REPLAY_OUT_H

#include "replay_state.h"

void rp_out_iso(struct replay *rp, struct buf *o, int64_t ts);
void rp_out_change(struct replay *rp, const struct rp_view *v, const char *group, const char *kind,
                   const char *cid, uint64_t conn, const struct mship_group *g);
void rp_out_notify(struct replay *rp, const struct rp_view *v, const char *group, size_t delivered,
                   size_t deaf);
void rp_out_alloc(struct replay *rp, const struct rp_client *c, const struct rp_hold *h, const char *reason,
                  struct rp_queue *const *added, size_t nadded, struct rp_queue *const *removed,
                  size_t nremoved);
void rp_out_explain(struct replay *rp, const struct rp_client *c, const struct rp_queue *q, bool took,
                    const char *reason, const struct allocate_result *res);
void rp_out_header(struct replay *rp);
const char *rp_reason_name(int kind);

/* Helpers of the report (replay_report.c) and the timeline alike. */
bool rp_out_json(const struct replay *rp);
/* ms after the trace start. */
long long rp_out_rel(const struct replay *rp, int64_t ts);
/* "ISO (+rel)". */
void rp_out_when(struct replay *rp, struct buf *o, int64_t ts);
/* Queues as "broker-a:0-3,broker-b:1" (sorted input), or a JSON array of "broker:q". */
void rp_out_queues(struct buf *o, struct rp_queue *const *q, size_t n, bool as_json);

#endif
