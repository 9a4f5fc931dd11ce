/* offset_requests.h — QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
 * SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME. Loop thread only. */
#ifndef RMQ_OFFSET_REQUESTS_H
#define RMQ_OFFSET_REQUESTS_H

#include "broker.h"

/* A queue's max offset as rmqcoord answers it: the highest committed offset, or 0 with --queue-end zero. */
int64_t broker_queue_end(const struct broker *s, const char *topic, int32_t qid);
void handle_query_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_update_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_get_max_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_get_min_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_search_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_earliest_msg_storetime(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
