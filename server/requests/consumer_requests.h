/* consumer_requests.h — the consumer-group requests: HEART_BEAT,
 * UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, GET_CONSUMER_CONNECTION_LIST,
 * and the requests answered with a bare SUCCESS. Loop thread only. */
#ifndef RMQ_CONSUMER_REQUESTS_H
#define RMQ_CONSUMER_REQUESTS_H

#include "broker.h"

void handle_heartbeat(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_unregister_client(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_get_consumer_list(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_get_consumer_connection_list(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* CHECK_CLIENT_CONFIG, CONSUMER_SEND_MSG_BACK: accepted, nothing to do. */
void handle_check_client_config(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_send_back(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_query_assignment(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_reply_success(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
