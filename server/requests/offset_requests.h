/* offset_requests.h — QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
 * SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME. Loop thread only. */
#ifndef RMQ_OFFSET_REQUESTS_H
#define RMQ_OFFSET_REQUESTS_H

#include "broker.h"

void handle_query_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_update_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_get_max_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_get_min_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_search_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_earliest_msg_storetime(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
