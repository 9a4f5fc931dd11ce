/* send_back_requests.h — CONSUMER_SEND_MSG_BACK (36): a failed message to
 * its group's retry or dead-letter topic (docs/protocol.md §13.6). Loop
 * thread only. */
#ifndef RMQ_SEND_BACK_REQUESTS_H
#define RMQ_SEND_BACK_REQUESTS_H

#include "broker.h"

void send_back_req(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
