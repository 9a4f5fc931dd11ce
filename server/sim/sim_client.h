/* sim_client.h — one simulated push consumer: its subscriptions, the
 * start sequence, route refresh and the work its timer does (sim_client.c).
 * Loop thread only. */
#ifndef RMQ_SIM_CLIENT_H
#define RMQ_SIM_CLIENT_H

#include "sim_state.h"

int sim_client_init(struct sim_client *c, struct sim *sim, struct sim_group *grp, const char *id);
void sim_client_fini(struct sim_client *c);
int sim_client_start(struct sim_client *c);

#endif
