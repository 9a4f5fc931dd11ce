/* lock_body.h — the queue-lock bodies: LockBatchRequestBody /
 * UnlockBatchRequestBody (LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ 42) and
 * LockBatchResponseBody (the reply to 41), each parsed and encoded.
 * Parsed structs own their strings (free with the _clear); encoders append
 * compact JSON in Java's key order and leave the buffer unchanged on error.
 * Pure; one thread.
 */
#ifndef RMQ_LOCK_BODY_H
#define RMQ_LOCK_BODY_H

#include "body_json.h"
#include "buf.h"

#include <stddef.h>
#include <stdint.h>

/* LockBatchRequestBody / UnlockBatchRequestBody:
 * {"clientId","consumerGroup","mqSet":[{"brokerName","queueId","topic"}]} */
struct rmq_lock_body {
    char *client_id;      /* owned */
    char *consumer_group; /* owned */
    struct rmq_mq *mqs;   /* owned array */
    size_t nmqs;
};
/* Parses body into *out (zero it first). 0, RMQ_EPROTO (err names the
 * field) or RMQ_ENOMEM; on failure *out is cleared. */
int rmq_lock_body_parse(const uint8_t *body, size_t len, struct rmq_lock_body *out, char *err, size_t errlen);
void rmq_lock_body_clear(struct rmq_lock_body *b);
/* Appends the request body as a Java client writes it. */
int rmq_lock_body_encode(const struct rmq_lock_body *b, struct buf *out);

/* LockBatchResponseBody: {"lockOKMQSet":[{"brokerName","queueId","topic"},...]} */
int rmq_lock_ok_encode(const struct rmq_mq *mqs, size_t n, struct buf *out);
/* Parses a LockBatchResponseBody into a new array (free with rmq_mqs_free;
 * NULL when empty). 0, RMQ_EPROTO or RMQ_ENOMEM; on failure nothing is
 * returned. */
int rmq_lock_ok_parse(const uint8_t *body, size_t len, struct rmq_mq **mqs, size_t *n, char *err,
                      size_t errlen);

#endif
