/* namesrv_table.h — --role namesrv: the brokers that registered with
 * REGISTER_BROKER and their topic configs; routes and cluster info are built
 * from them. Loop thread only. */
#ifndef RMQ_NAMESRV_TABLE_H
#define RMQ_NAMESRV_TABLE_H

#include "broker.h"

#include <jansson.h>
#include <stdint.h>

struct namesrv_table;
/* 0 with *out a new, empty table, or RMQ_ENOMEM. */
int namesrv_table_new(struct namesrv_table **out);
/* Accepts NULL. */
void namesrv_table_free(struct namesrv_table *t);
/* REGISTER_BROKER (103). */
void namesrv_register(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* UNREGISTER_BROKER (104). */
void namesrv_unregister(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* GET_ROUTEINFO_BY_TOPIC (105) from the registered brokers. */
void namesrv_get_route(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* Drops brokers not registered for --broker-expiry-ms. */
void namesrv_expire(struct broker *s);
/* The registering connection closed: its brokers are dropped at once. */
void namesrv_forget_conn(struct broker *s, uint64_t conn_id);
/* The live brokers for GET /api/cluster, a page at a time: query (borrowed,
 * may be NULL) may hold brokersAfter (a broker name: start after it),
 * limit (1..256, default 100) and topicsOf (a broker name: that broker's
 * entry lists all its topics; the others their first 16, and topicCount). New
 * reference {brokers, brokerCount, topicCount[, nextBrokersAfter]} with
 * *status 200, an error object with *status 400, or NULL (out of memory). */
json_t *namesrv_admin_json(struct broker *s, const json_t *query, int *status);
/* GET_BROKER_CLUSTER_INFO (106) on a name server: its live brokers. */
void namesrv_cluster_info(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every topic a live broker registered. */
void namesrv_topic_list(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* DELETE_TOPIC_IN_NAMESRV (216): drops the topic from the brokers of
 * clusterName (every broker without it) until they register it again. */
void namesrv_delete_topic(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
