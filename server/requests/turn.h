/* turn.h — one turn of the loop as the broker sees it, the same for the
 * daemon (daemon/server.c wires these to its conn_set and loop) and the
 * unit fixture (tests/unit/broker_fixture.c): a connection adopted, a frame
 * admitted (rate limit, ACL, channel row, trace, dispatch, output hold), a
 * connection closed, and the work before the loop sleeps (store upkeep,
 * settle rounds of reap -> NOTIFY -> commit -> release -> flush, the NOTIFY
 * timer). What cluster/ adds comes through s->hooks (broker.h).
 * Loop thread only. */
#ifndef RMQ_TURN_H
#define RMQ_TURN_H

#include "broker.h"

#include <stdint.h>

/* The channel id of the next connection adopted: the store's run id in the
 * high half, so ids never repeat across restarts. */
uint64_t broker_next_conn_id(struct broker *s);

/* Bookkeeping for c, just adopted into s->conns: its registry channel, the
 * accept counter, the trace. RMQ_OK, or an error after which c is marked
 * closing (conn_close_async) and nothing else was recorded. */
int broker_conn_opened(struct broker *s, struct conn *c);

/* Writes c's channel row unless it has one: a channel row is written at
 * its first accepted request, not at accept, so bare connect/close churn
 * leaves no row. RMQ_OK (also when c has no channel) or the store's error
 * (logged). */
int broker_store_channel(struct broker *s, const struct conn *c);

/* conn_set's on_frame with ctx = the struct broker: a response goes to
 * outbound.c; a request passes the rate limit and the ACL, then runs
 * (s->hooks.dispatch, else dispatch_request) and holds c's output when it
 * wrote to the store. cmd is borrowed for the call. */
void broker_on_frame(void *broker, struct conn *c, struct rmq_cmd *cmd);

/* conn_set's on_close with ctx = the struct broker: c's held pulls,
 * outbound requests and held replies are forgotten, its channel closed in
 * the registry (a membership change) and in the store. */
void broker_on_close(void *broker, struct conn *c);

/* When the open store batch is committed before the loop sleeps. */
enum broker_commit {
    /* When something waits on it (a held reply, a write other than a
     * soft one) or soft writes have waited 10 ms: the daemon. */
    BROKER_COMMIT_WHEN_DUE,
    /* Whenever a batch is open: unit tests see every write committed at
     * the turn that made it. */
    BROKER_COMMIT_EVERY_TURN,
};

/* What the loop does before it sleeps: membership re-written after lost
 * writes, closed channels pruned (each at most once a second), up to four
 * settle rounds (reap, NOTIFYs due, commit per when, held replies released
 * by the commit's fate, flush, s->hooks.settle_round), a final reap, and
 * the NOTIFY timer moved to when a postponed NOTIFY falls due. Returns the
 * last failed commit's error, RMQ_OK when every commit succeeded or none ran. */
int broker_before_sleep(struct broker *s, enum broker_commit when);

#endif
