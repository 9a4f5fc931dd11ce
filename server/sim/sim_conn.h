/* sim_conn.h — a group's connections and the requests the sim sends
 * on them (sim_conn.c). Loop thread only. */
#ifndef RMQ_SIM_CONN_H
#define RMQ_SIM_CONN_H

#include "sim_state.h"

/* The group's connection to addr (found or made); NULL on a bad address. */
struct rclient_conn *sim_group_conn(struct sim_group *g, const char *addr);
/* A request carrying the configured version and language. */
void sim_request_init(const struct sim *sim, struct rmq_cmd *cmd, int32_t code);

#endif
