/* lock_requests.h — LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: per-group queue locks
 * of orderly consumers, leased for --lock-expiry-ms. Loop thread only. */
#ifndef RMQ_LOCK_REQUESTS_H
#define RMQ_LOCK_REQUESTS_H

#include "broker.h"

void lock_req_lock_batch(struct broker *s, struct conn *c, struct rmq_cmd *req);
void lock_req_unlock_batch(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
