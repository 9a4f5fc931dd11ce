/* sim_heartbeat.h — HEART_BEAT from a simulated client to every broker
 * of its routes (sim_heartbeat.c). Loop thread only. */
#ifndef RMQ_SIM_HEARTBEAT_H
#define RMQ_SIM_HEARTBEAT_H

#include "remoting_client.h"
#include "sim_state.h"

/* Whether addr is a broker address in one of the client's routes. */
bool sim_client_is_broker(const struct sim_client *c, const char *addr);
/* Heartbeats every broker address the client knows. */
void sim_client_heartbeat_all(struct sim_client *c);
/* Sends HEART_BEAT to every broker address, cb(c) for each reply; returns
 * how many callbacks follow. */
int sim_heartbeat_send(struct sim_client *c, rclient_reply_cb cb);

#endif
