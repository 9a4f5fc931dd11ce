/* route_requests.h — the name-server requests a consumer sends:
 * GET_ROUTEINFO_BY_TOPIC (auto-creating topics when configured) and
 * GET_BROKER_CLUSTER_INFO. Loop thread only. */
#ifndef RMQ_ROUTE_REQUESTS_H
#define RMQ_ROUTE_REQUESTS_H

#include "broker.h"

void route_req_get_route(struct broker *s, struct conn *c, struct rmq_cmd *req);
void route_req_cluster_info(struct broker *s, struct conn *c, struct rmq_cmd *req);
void route_req_get_kv_config(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
