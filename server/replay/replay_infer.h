/* replay_infer.h — what the recorded NOTIFYs and consumer-list
 * queries say about each client (replay_infer.c): the notes of the first
 * pass over a trace, and each modeled client's behaviour from them. */
#ifndef RMQ_REPLAY_INFER_H
#define RMQ_REPLAY_INFER_H

#include "replay_options.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct replay;
struct rp_client;

/* Infers a behaviour from one client's recorded NOTIFY times and query
 * times (any order; sorted in place). end_ms: the last time the trace
 * covers (a NOTIFY whose window runs past it tells nothing). Pure. */
void replay_infer_behaviour(int64_t *notifies, size_t nn, int64_t *queries, size_t nq, int64_t end_ms,
                            struct replay_behaviour *out);

/* Before the first replay_feed (a first pass over the file): conn received a
 * recorded NOTIFY. Feeds REPLAY_NOTIFY_AUTO's notion of a deaf client. */
int replay_note_recorded_notify(struct replay *rp, uint64_t conn);

/* Before the first replay_feed, with the notify pre-pass: a recorded NOTIFY
 * for group to conn at ts (also does replay_note_recorded_notify), and a
 * recorded GET_CONSUMER_LIST_BY_GROUP for group on conn at ts. They feed the
 * inferred behaviour. 0 or RMQ_ENOMEM. */
int replay_note_notify(struct replay *rp, uint64_t conn, const char *group, int64_t ts);
int replay_note_query(struct replay *rp, uint64_t conn, const char *group, int64_t ts);

/* Sets c's deaf, rebalance_ms and their sources: --client, then the global
 * flags, then what the trace shows, then the defaults. */
void rp_client_behaviour(struct replay *rp, struct rp_client *c, bool conn_deaf);
void rp_obs_free(struct replay *rp);

#endif
