/* consumer_list_body.h — the ConsumerListBody (GET_CONSUMER_LIST_BY_GROUP,
 * 38 reply): {"consumerIdList":[...]}. The daemon encodes it; the client
 * side (`rmqcoord sim`, hence the sim_ names) parses it. Pure; any thread.
 */
#ifndef RMQ_CONSUMER_LIST_BODY_H
#define RMQ_CONSUMER_LIST_BODY_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

/* Most ids a parsed list may hold. */
#define RMQ_CONSUMER_LIST_MAX_IDS 100000

/* Appends {"consumerIdList":[...]}. 0 or a buf error (out unchanged). */
int rmq_consumer_list_encode(const char *const *ids, size_t n, struct buf *out);

/* Parses {"consumerIdList":[...]} into a new array of new strings (free with
 * sim_ids_free); duplicates are kept. 0, RMQ_EPROTO or RMQ_ENOMEM. */
int sim_consumer_list_parse(const uint8_t *body, size_t len, char ***ids, size_t *n, char *err,
                            size_t errlen);
void sim_ids_free(char **ids, size_t n);

#endif
