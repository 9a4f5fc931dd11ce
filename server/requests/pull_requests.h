/* pull_requests.h — PULL_MESSAGE / LITE_PULL_MESSAGE, held until their
 * deadline or until the group changes (rmqcoord stores no messages).
 * Loop thread only. */
#ifndef RMQ_PULL_REQUESTS_H
#define RMQ_PULL_REQUESTS_H

#include "broker.h"

void pull_req_message(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* Answers every pull held for group now (its membership changed). */
void pull_release_group(struct broker *s, const char *group);
/* Forgets the pulls held on c (closing): nothing is sent. */
void pull_drop_conn(struct broker *s, const struct conn *c);
/* Answers the held pulls whose deadline passed. */
void pull_on_timer(struct broker *s);
/* Frees every held pull without answering (shutdown, reset). */
void pull_free_all(struct broker *s);

#endif
