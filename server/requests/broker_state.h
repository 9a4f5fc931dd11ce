/* broker_state.h — the lifecycle of a struct broker: its starting state,
 * the admin API's reset and virtual clock, and its teardown, the same for
 * the daemon (daemon/server.c) and the unit fixture. Loop thread (the
 * daemon's main thread before and after the loop). */
#ifndef RMQ_BROKER_STATE_H
#define RMQ_BROKER_STATE_H

#include "broker.h"

#include <stdint.h>

/* The state every broker starts from, on s (zeroed by the caller): cfg
 * (borrowed; must outlive s), the loop and its clocks, the registry with
 * member_events' hooks, topics, offsets and queue locks; no connections,
 * store or hooks yet. RMQ_OK or loop_new's error. */
int broker_init_state(struct broker *s, const struct config *cfg);

/* Wipes live and stored state for test suites (POST /api/reset): closes
 * every connection, forgets groups, topics, offsets, locks and held pulls.
 * The caller resets the store tables. */
void broker_reset_live(struct broker *s);

/* --clock virtual: moves the daemon's time forward by ms and runs what is
 * due at once (expiry scan, held-pull deadlines). RMQ_ESTATE on a real clock. */
int broker_clock_advance(struct broker *s, int64_t ms);

/* Frees every held pull, then every connection (each closed through the
 * conn_set's on_close); s->conns is NULL after. No-op without connections. */
void broker_close_conns(struct broker *s);

/* After broker_close_conns: commits what the batch still holds, answers
 * the held replies that remain (SYSTEM_ERROR: none may go out unstored),
 * and frees the store, the trace, the ACL, the tables and the loop. The
 * final commit's result (RMQ_OK when none was open; a failure is logged). */
int broker_fini_state(struct broker *s);

#endif
