/* heartbeat_body.h — the HeartbeatData body (HEART_BEAT, 34) and the
 * SubscriptionData objects inside it: parse and encode.
 *
 * The parser is lenient the way the protocol needs (PROTOCOL (docs/protocol.md
 * §3.1): enums as names or ordinals, longs as numbers or numeric strings,
 * absent arrays empty, unknown keys ignored, trailing newline allowed) and
 * strict about types it cannot interpret: RMQ_EPROTO with a one-line reason
 * in err. Every parsed struct owns its strings; free with the matching
 * _clear. Encoders append compact JSON in Java's sorted key order and leave
 * the buffer unchanged on error. Pure; one thread.
 */
#ifndef RMQ_HEARTBEAT_BODY_H
#define RMQ_HEARTBEAT_BODY_H

#include "body_json.h"
#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rmq_consume_type { RMQ_CONSUME_ACTIVELY = 0, RMQ_CONSUME_PASSIVELY = 1 };
enum rmq_message_model { RMQ_MODEL_BROADCASTING = 0, RMQ_MODEL_CLUSTERING = 1 };

/* Static Java enum names: "CONSUME_ACTIVELY"/"CONSUME_PASSIVELY",
 * "BROADCASTING"/"CLUSTERING", "CONSUME_FROM_LAST_OFFSET"... */
const char *rmq_consume_type_name(int v);
const char *rmq_message_model_name(int v);
const char *rmq_consume_from_where_name(int v);

struct rmq_subscription {
    char *topic;           /* owned, non-empty */
    char *sub_string;      /* owned; "*" when absent or empty */
    char *expression_type; /* owned; "TAG" when absent */
    int64_t sub_version;
    bool class_filter_mode;
    char **tags; /* owned array of owned strings */
    size_t ntags;
    int32_t *codes; /* owned */
    size_t ncodes;
};

struct rmq_consumer_data {
    char *group;            /* owned, non-empty */
    int consume_type;       /* enum rmq_consume_type */
    int message_model;      /* enum rmq_message_model */
    int consume_from_where; /* ordinal 0..5 */
    bool unit_mode;
    struct rmq_subscription *subs; /* owned array */
    size_t nsubs;
};

struct rmq_heartbeat {
    char *client_id;                     /* owned, non-empty ("clientID") */
    struct rmq_consumer_data *consumers; /* owned array */
    size_t nconsumers;
    char **producer_groups; /* owned */
    size_t nproducers;
    int32_t fingerprint; /* heartbeatFingerprint, 0 when absent */
    bool without_sub;    /* withoutSub, false when absent */
};

void rmq_subscription_clear(struct rmq_subscription *s);
/* Deep copy of src into *dst. 0 or RMQ_ENOMEM (dst is then cleared). */
int rmq_subscription_copy(struct rmq_subscription *dst, const struct rmq_subscription *src);
/* Appends the SubscriptionData JSON object (Java key names, sorted). NULL
 * sub_string and expression_type are written as "*" and "TAG". */
int rmq_subscription_encode(const struct rmq_subscription *s, struct buf *out);

/* Parses a HeartbeatData body. Zero-initialise *hb first. */
int rmq_heartbeat_parse(const uint8_t *body, size_t len, struct rmq_heartbeat *hb, char *err, size_t errlen);
void rmq_heartbeat_clear(struct rmq_heartbeat *hb);
/* Appends the HeartbeatData JSON as a Java client writes it: clientID,
 * consumerDataSet (enums by name), producerDataSet ([{"groupName":..}]);
 * with v5_fields also heartbeatFingerprint and withoutSub, which 5.x
 * clients add. Strings of hb are only read. 0 or a buf error. */
int rmq_heartbeat_encode(const struct rmq_heartbeat *hb, bool v5_fields, struct buf *out);

#endif
