/* send_requests.h — SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and
 * SEND_BATCH_MESSAGE (320): messages into the store, answered once their
 * batch commits (docs/protocol.md §13). Loop thread only. */
#ifndef RMQ_SEND_REQUESTS_H
#define RMQ_SEND_REQUESTS_H

#include "broker.h"

void send_req_message(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* Loads the stored queues' offset ranges into s->mqs (start-up, after
 * store_open): 0 or the store's error. */
int send_load_queues(struct broker *s);

#endif
