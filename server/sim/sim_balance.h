/* sim_balance.h — a simulated client's rebalance rounds
 * (sim_balance.c). Loop thread only. */
#ifndef RMQ_SIM_BALANCE_H
#define RMQ_SIM_BALANCE_H

#include "sim_state.h"

/* The name of a reason in holdings lines and logs (static string). */
const char *sim_reason_name(enum sim_reason r);
void sim_balance_start(struct sim_client *c, enum sim_reason why);

#endif
