/* replay.h — offline replay of a heartbeat trace: the daemon's membership
 * history plus a model of every client's rebalancing, with the intervals
 * where a queue had two owners (duplicate consumption) or none (stall).
 *
 * Membership runs through server/model/registry.c — the daemon's own registry,
 * which applies common/broker/membership.c — so replay and daemon cannot disagree
 * on what is a change. The engine lives in server/ for that reason; it does
 * no I/O (output accumulates in a buffer the caller drains) and reads no
 * clock: time is the trace's. Events go in file order through replay_feed
 * (replay_feed.h); replay_finish writes the report. Same input and options, same output,
 * byte for byte. One thread.
 */
#ifndef RMQ_REPLAY_H
#define RMQ_REPLAY_H

#include "buf.h"
#include "replay_options.h"

#include <stddef.h>

struct replay;

/* Sets the defaults listed above (AVG). */
void replay_options_init(struct replay_options *opt);

/* New engine (replay_free). 0, RMQ_EINVAL (bad option, err says which) or
 * RMQ_ENOMEM. */
int replay_new(const struct replay_options *opt, struct replay **out, char *err, size_t errlen);
void replay_free(struct replay *rp);

/* Output written so far (borrowed; the caller writes and buf_reset()s it). */
struct buf *replay_output(struct replay *rp);
const struct replay_stats *replay_get_stats(const struct replay *rp);

#endif
