/* consumer_requests.h — the consumer-group requests: HEART_BEAT,
 * UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, GET_CONSUMER_CONNECTION_LIST,
 * and the requests answered with a bare SUCCESS. Loop thread only. */
#ifndef RMQ_CONSUMER_REQUESTS_H
#define RMQ_CONSUMER_REQUESTS_H

#include "broker.h"

void consumer_req_heartbeat(struct broker *s, struct conn *c, struct rmq_cmd *req);
void consumer_req_unregister_client(struct broker *s, struct conn *c, struct rmq_cmd *req);
void consumer_req_get_list(struct broker *s, struct conn *c, struct rmq_cmd *req);
void consumer_req_get_connection_list(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* CHECK_CLIENT_CONFIG, CONSUMER_SEND_MSG_BACK: accepted, nothing to do. */
void consumer_req_check_client_config(struct broker *s, struct conn *c, struct rmq_cmd *req);
void consumer_req_query_assignment(struct broker *s, struct conn *c, struct rmq_cmd *req);
void consumer_req_reply_success(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
