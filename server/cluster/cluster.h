/* cluster.h — several rmqcoord processes forming one RocketMQ cluster
 * (docs/cluster.md).
 *
 * --role namesrv: namesrv_table.c keeps the brokers that registered with
 * REGISTER_BROKER (103) and their topic configs, expires the silent ones and
 * answers GET_ROUTEINFO_BY_TOPIC from them. --role broker: broker_registration.c
 * registers the daemon's own topics with every --namesrv, re-registers on a
 * timer and after each topic change, and unregisters at clean shutdown.
 * --role both (the default) uses neither: one process is both, as before.
 *
 * Loop thread only, except cluster_unregister_blocking (main thread, after
 * the loop ended).
 */
#ifndef RMQ_CLUSTER_H
#define RMQ_CLUSTER_H

#include "remoting_cmd.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct broker;
struct conn;
struct buf;

/* Starts what the configured role needs (name-server table and its expiry
 * timer, or the registration client). 0 or an error. */
int cluster_start(struct broker *s);
/* Frees it; a broker first unregisters from its name servers (blocking,
 * bounded, on the main thread after the loop stopped). Accepts a server
 * where cluster_start never ran. */
void cluster_stop(struct broker *s);

/* Before dispatching a request: handles what the role changes (broker
 * registration on a name server, routes from registrations, refusals of
 * broker codes on a pure name server). true when req was answered here. */
bool cluster_dispatch(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* c is closing (a name server forgets the brokers registered over it). */
void cluster_conn_closed(struct broker *s, const struct conn *c);
/* Before sleep: writes the broker's queued registration traffic. */
void cluster_before_sleep(struct broker *s);

/* GET /api/cluster, loop side: the role, and the name server's live brokers
 * (a page: namesrv_table.h) or the broker's registration status per name
 * server. query (borrowed, the request's decoded query parameters, may be
 * NULL): its group is echoed for the HTTP side, which fetches each broker's
 * view. New reference (an error object when *status is not 200) or NULL. */
json_t *cluster_admin_json(struct broker *s, const json_t *query, int *status);

#endif
