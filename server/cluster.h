/* cluster.h — several rmqcoord processes forming one RocketMQ cluster
 * (docs/cluster.md).
 *
 * --role namesrv: namesrv_table.c keeps the brokers that registered with
 * REGISTER_BROKER (103) and their topic configs, expires the silent ones and
 * answers GET_ROUTEINFO_BY_TOPIC from them. --role broker: broker_reg.c
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

struct server;
struct conn;
struct buf;

/* Custom REGISTER_BROKER extField naming the broker's HTTP admin address
 * (host:port), so a name server can compare brokers' views of a group. */
#define CLUSTER_EXT_HTTP "rmqcoordHttp"

/* Starts what the configured role needs (name-server table and its expiry
 * timer, or the registration client). 0 or an error. */
int cluster_start(struct server *s);
/* Frees it; a broker first unregisters from its name servers (blocking,
 * bounded, on the main thread after the loop stopped). Accepts a server
 * where cluster_start never ran. */
void cluster_stop(struct server *s);

/* Before dispatching a request: handles what the role changes (broker
 * registration on a name server, routes from registrations, refusals of
 * broker codes on a pure name server). true when req was answered here. */
bool cluster_dispatch(struct server *s, struct conn *c, struct rmq_cmd *req);
/* c is closing (a name server forgets the brokers registered over it). */
void cluster_conn_closed(struct server *s, const struct conn *c);
/* Before sleep: writes the broker's queued registration traffic. */
void cluster_before_sleep(struct server *s);

/* GET /api/cluster, loop side: the role, and the name server's live brokers
 * or the broker's registration status per name server. group (borrowed, may
 * be NULL) is echoed for the HTTP side, which fetches each broker's view.
 * New reference or NULL. */
json_t *cluster_admin_json(struct server *s, const char *group, int *status);

/* ---- namesrv_table.c ---- */
struct namesrv_table;
int namesrv_table_new(struct namesrv_table **out);
void namesrv_table_free(struct namesrv_table *t);
void namesrv_register(struct server *s, struct conn *c, struct rmq_cmd *req);
void namesrv_unregister(struct server *s, struct conn *c, struct rmq_cmd *req);
void namesrv_get_route(struct server *s, struct conn *c, struct rmq_cmd *req);
void namesrv_expire(struct server *s);
void namesrv_forget_conn(struct server *s, uint64_t conn_id);
json_t *namesrv_admin_json(struct server *s);
/* GET_BROKER_CLUSTER_INFO (106) on a name server: its live brokers. */
void namesrv_cluster_info(struct server *s, struct conn *c, struct rmq_cmd *req);

/* One broker of a ClusterInfo body (strings borrowed). */
struct cluster_info_broker {
    const char *broker_name;
    const char *cluster;
    const char *addr; /* master, brokerId 0 */
};
/* Appends ClusterInfo JSON: {"brokerAddrTable":{name:BrokerData},
 * "clusterAddrTable":{cluster:[names]}}, brokerAddrs keys bare as the
 * RocketMQ name server writes them (PROTOCOL: §2.4.7). brokers sorted by name. */
int cluster_info_encode(const struct cluster_info_broker *brokers, size_t n, struct buf *out);

/* ---- broker_reg.c ---- */
struct broker_reg;
int broker_reg_start(struct server *s);
void broker_reg_stop(struct server *s);
void broker_reg_before_sleep(struct server *s);
json_t *broker_reg_admin_json(struct server *s);
/* Appends the RegisterBrokerBody JSON of the daemon's own topics. */
int broker_reg_body(struct server *s, int64_t dv_counter, int64_t dv_timestamp, struct buf *out);

/* CRC32 (IEEE, as java.util.zip.CRC32) masked with 0x7fffffff, as RocketMQ's
 * UtilAll.crc32 reports it in bodyCrc32. */
int32_t cluster_body_crc32(const uint8_t *p, size_t n);

/* ---- api_cluster.c (HTTP thread) ---- */
/* Adds to a namesrv's /api/cluster?group=G reply each live broker's member
 * list (HTTP GET of its /api/groups/G, 1 s bound, loopback only) and the
 * differences. Takes reply; returns the (same or new) reply or NULL. */
json_t *api_cluster_augment(json_t *reply);

#endif
