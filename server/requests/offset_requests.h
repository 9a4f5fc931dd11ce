/* offset_requests.h — QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
 * SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME. Loop thread only. */
#ifndef RMQ_OFFSET_REQUESTS_H
#define RMQ_OFFSET_REQUESTS_H

#include "broker.h"

void offset_req_query(struct broker *s, struct conn *c, struct rmq_cmd *req);
void offset_req_update(struct broker *s, struct conn *c, struct rmq_cmd *req);
void offset_req_get_max(struct broker *s, struct conn *c, struct rmq_cmd *req);
void offset_req_get_min(struct broker *s, struct conn *c, struct rmq_cmd *req);
void offset_req_search(struct broker *s, struct conn *c, struct rmq_cmd *req);
void offset_req_earliest_msg_storetime(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
