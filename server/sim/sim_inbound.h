/* sim_inbound.h — requests the brokers send on a group's connection:
 * NOTIFY, GET_CONSUMER_RUNNING_INFO, unknown codes (sim_inbound.c). Loop
 * thread only. */
#ifndef RMQ_SIM_INBOUND_H
#define RMQ_SIM_INBOUND_H

#include "remoting_client.h"

#include <stdbool.h>

/* The rclient_conn_handler of a group's connections (ctx: the group). */
void sim_inbound_request(void *ctx, struct rclient_conn *conn, const struct rmq_cmd *req);
void sim_inbound_up(void *ctx, struct rclient_conn *conn, bool reconnected);

#endif
