/* admin_topic_requests.h — the topic codes admin tools (RocketMQ's mqadmin)
 * send (tests/mqadmin/FINDINGS.md §3): topic list (206), stats (202),
 * config (351), runtime info (28), create (17), delete (215, 216),
 * DELETE_KV_CONFIG (102). Loop thread only. */
#ifndef RMQ_ADMIN_TOPIC_REQUESTS_H
#define RMQ_ADMIN_TOPIC_REQUESTS_H

#include "broker.h"

#include <stdbool.h>
#include <stdint.h>

void admin_topic_req_list(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_topic_req_stats(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_topic_req_config(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_topic_req_broker_runtime_info(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_topic_req_create(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_topic_req_delete_in_broker(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* 216 in --role both (215 already deleted it) and 102: nothing to do, 0. */
void admin_topic_req_noop(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
