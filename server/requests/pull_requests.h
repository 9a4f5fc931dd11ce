/* pull_requests.h — PULL_MESSAGE / LITE_PULL_MESSAGE: the stored
 * messages, or held until their deadline, a commit of a message for their
 * queue, or a change of their group. Loop thread only. */
#ifndef RMQ_PULL_REQUESTS_H
#define RMQ_PULL_REQUESTS_H

#include "broker.h"

#include <stdbool.h>

void pull_req_message(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* The open batch committed (stored) or failed: its messages become
 * visible, and the pulls held at their queues are answered; or their
 * offsets are given back. */
void pull_on_commit(struct broker *s, bool stored);
/* Answers every pull held for group now (its membership changed). */
void pull_release_group(struct broker *s, const char *group);
/* Forgets the pulls held on c (closing): nothing is sent. */
void pull_drop_conn(struct broker *s, const struct conn *c);
/* Answers the held pulls whose deadline passed. */
void pull_on_timer(struct broker *s);
/* Frees every held pull without answering (shutdown, reset). */
void pull_free_all(struct broker *s);

#endif
