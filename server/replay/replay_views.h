/* replay_views.h — the broker views of a replay: the daemon's
 * registry hooks, replayed, and the NOTIFY fan-out (replay_views.c). */
#ifndef RMQ_REPLAY_VIEWS_H
#define RMQ_REPLAY_VIEWS_H

#include "replay_state.h"

/* The view of broker name (a new one on first use: its registry and hooks). NULL on OOM. Borrowed. */
struct rp_view *rp_get_view(struct replay *rp, const char *name);
/* Sends the NOTIFYs the last event marked, group by group in name order. */
void rp_flush_notifies(struct replay *rp);

#endif
