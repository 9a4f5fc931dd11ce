/* rmq_body.h — JSON bodies of the requests and responses rmqcoord handles.
 *
 * Parsers are lenient the way the protocol needs (PROTOCOL (docs/protocol.md §3.1): enums as names or
 * ordinals, longs as numbers or numeric strings, absent arrays empty, unknown
 * keys ignored, trailing newline allowed) and strict about types they cannot
 * interpret: they return RMQ_EPROTO with a one-line reason in err. Every
 * parsed struct owns its strings; free with the matching _clear. Encoders
 * append compact JSON to a buf. Pure; one thread.
 */
#ifndef RMQ_BODY_H
#define RMQ_BODY_H

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
/* Appends the SubscriptionData JSON object (Java key names, sorted). */
int rmq_subscription_encode(const struct rmq_subscription *s, struct buf *out);

/* Parses a HeartbeatData body. Zero-initialise *hb first. */
int rmq_heartbeat_parse(const uint8_t *body, size_t len, struct rmq_heartbeat *hb, char *err, size_t errlen);
void rmq_heartbeat_clear(struct rmq_heartbeat *hb);

/* {"consumerIdList":[...]} */
int rmq_consumer_list_encode(const char *const *ids, size_t n, struct buf *out);

/* TopicRouteData. */
struct rmq_route_queue {
    const char *broker_name; /* borrowed */
    int read_queue_nums, write_queue_nums, perm, topic_sys_flag;
};
struct rmq_route_broker {
    const char *broker_name; /* borrowed */
    const char *cluster;     /* borrowed */
    const char *master_addr; /* borrowed: brokerAddrs {0: addr} */
};
/* Appends the route JSON: brokerDatas, filterServerTable {}, queueDatas,
 * compact, keys sorted. quoted_ids: brokerAddrs keys as "0" (PROTOCOL (docs/protocol.md §3.4):
 * version >= 401 or acceptStandardJsonOnly) else bare 0 like fastjson. */
int rmq_route_encode(const struct rmq_route_broker *brokers, size_t nbrokers,
                     const struct rmq_route_queue *queues, size_t nqueues, bool quoted_ids, struct buf *out);

/* A message queue as it appears in lock bodies and allocation output. */
struct rmq_mq {
    char *topic;       /* owned */
    char *broker_name; /* owned */
    int32_t queue_id;
};

/* LockBatchRequestBody / UnlockBatchRequestBody:
 * {"clientId","consumerGroup","mqSet":[{"brokerName","queueId","topic"}]} */
struct rmq_lock_body {
    char *client_id;      /* owned */
    char *consumer_group; /* owned */
    struct rmq_mq *mqs;   /* owned array */
    size_t nmqs;
};
int rmq_lock_body_parse(const uint8_t *body, size_t len, struct rmq_lock_body *out, char *err, size_t errlen);
void rmq_lock_body_clear(struct rmq_lock_body *b);
/* {"lockOKMQSet":[{"brokerName","queueId","topic"},...]} */
int rmq_lock_ok_encode(const struct rmq_mq *mqs, size_t n, struct buf *out);

/* Parses p[0..len) as one JSON object (trailing whitespace allowed) into *out,
 * a new jansson reference the caller must json_decref. 0, RMQ_EPROTO (err
 * starts with `what`) or RMQ_ENOMEM. Shared by the JSON header codec. */
struct json_t;
int rmq_json_load_object(const uint8_t *p, size_t len, const char *what, struct json_t **out, char *err,
                         size_t errlen);

/* Appends a JSON string literal (quotes and escapes) for s. */
int rmq_json_append_string(struct buf *out, const char *s);

#endif
