/* sim_timer.h — a simulated client's one timer: its earliest deadline,
 * and the wakeup that asks for a rebalance round (sim_timer.c). Loop thread
 * only. */
#ifndef RMQ_SIM_TIMER_H
#define RMQ_SIM_TIMER_H

#include "sim_state.h"

/* Re-arms the client's timer to its earliest deadline. */
void sim_client_arm(struct sim_client *c);
/* Request a rebalance round now (coalesced with one in progress). */
void sim_client_wake(struct sim_client *c, enum sim_reason why);

#endif
