/* sim_body.h — the bodies `rmqcoord sim` sends and reads, shaped like a Java
 * 4.9.x push consumer's: HeartbeatData out, TopicRouteData and the consumer
 * id list in, ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO reply) out, and
 * the sim's own JSON Lines output. The running-info encoder and the names
 * it uses live in sim_rinfo.c.
 *
 * Encoders append compact JSON with keys sorted as fastjson writes them and
 * leave the buffer unchanged on error. Parsers own what they return (free
 * with the matching _clear). Pure: no I/O, no clock; any thread.
 */
#ifndef RMQ_SIM_BODY_H
#define RMQ_SIM_BODY_H

#include "allocate.h"
#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Upper bounds on what a parsed body may hold (the frame cap already limits
 * bytes; these bound the arrays built from them). */
#define SIM_BODY_MAX_IDS 100000
#define SIM_BODY_MAX_ROUTE_ENTRIES 4096
#define SIM_BODY_MAX_DEPTH 64

/* One subscription as the sim reports it ("*" expression, TAG type). */
struct sim_sub {
    const char *topic; /* borrowed */
    int64_t sub_version;
};

/* What goes into one HeartbeatData body. All pointers borrowed. */
struct sim_heartbeat_spec {
    const char *client_id;
    const char *group;
    bool broadcast; /* messageModel BROADCASTING instead of CLUSTERING */
    bool v5_fields; /* 5.x clients add heartbeatFingerprint 0 and withoutSub false */
    const struct sim_sub *subs;
    size_t nsubs;
};

/* Appends one SubscriptionData object for s. 0 or a buf error. */
int sim_sub_encode(const struct sim_sub *s, struct buf *out);

/* Appends the HeartbeatData JSON. 0 or a buf error. */
int sim_heartbeat_encode(const struct sim_heartbeat_spec *hb, struct buf *out);

struct sim_route_broker {
    char *name;   /* owned */
    char *master; /* owned copy of brokerAddrs[0], NULL when absent */
    char **addrs; /* owned: every address, ascending broker id */
    size_t naddrs;
};
struct sim_route_queue {
    char *broker_name; /* owned */
    int read_queue_nums;
    int perm;
};
struct sim_route {
    struct sim_route_broker *brokers; /* owned */
    size_t nbrokers;
    struct sim_route_queue *queues; /* owned */
    size_t nqueues;
};

/* Parses a TopicRouteData body into *out (zero it first). Accepts the bare
 * numeric map keys fastjson writes for old clients (PROTOCOL: docs/protocol.md §3.4) as well
 * as quoted ones. 0, RMQ_EPROTO (reason in err) or RMQ_ENOMEM; on error
 * *out is left cleared. */
int sim_route_parse(const uint8_t *body, size_t len, struct sim_route *out, char *err, size_t errlen);
void sim_route_clear(struct sim_route *r);
/* Same brokers, addresses and queue data (order-sensitive; both come from
 * one name server that writes them in a stable order). */
bool sim_route_equal(const struct sim_route *a, const struct sim_route *b);
/* The address a client uses for brokerName: the master (id 0), else the
 * lowest id present, else NULL. Borrowed from r. */
const char *sim_route_addr_of(const struct sim_route *r, const char *broker_name);

/* Parses {"consumerIdList":[...]} into a new array of new strings (free with
 * sim_ids_free). 0, RMQ_EPROTO or RMQ_ENOMEM. */
int sim_consumer_list_parse(const uint8_t *body, size_t len, char ***ids, size_t *n, char *err,
                            size_t errlen);
void sim_ids_free(char **ids, size_t n);

/* One held queue in a running-info reply. Strings borrowed. */
struct sim_rinfo_queue {
    struct allocate_queue mq;
    int64_t commit_offset;
    int64_t last_pull_ms; /* wall clock */
};

/* Everything a ConsumerRunningInfo body reports. All pointers borrowed. */
struct sim_rinfo {
    const char *group;
    const char *namesrv;
    bool broadcast;
    enum allocate_strategy strategy;
    int version;      /* MQVersion ordinal the client reports */
    int64_t start_ms; /* wall clock */
    const struct sim_rinfo_queue *queues;
    size_t nqueues;
    const struct sim_sub *subs;
    size_t nsubs;
};

/* Appends the ConsumerRunningInfo JSON as fastjson writes it: mqTable keys
 * are inline, unquoted MessageQueue objects (PROTOCOL: docs/protocol.md §3.8), in
 * MessageQueue order; subscriptionSet in SubscriptionData order (topic@sub).
 * 0, RMQ_ENOMEM or a buf error. */
int sim_running_info_encode(const struct sim_rinfo *ri, struct buf *out);

/* The Java class name of a strategy (static string). */
const char *sim_strategy_class(enum allocate_strategy s);
/* "V4_9_8" for ordinal 409 (PROTOCOL: docs/protocol.md §1.7 formula); "V<n>" outside the
 * formula's range. Writes into out. */
void sim_version_name(int ordinal, char *out, size_t outlen);

/* Appends one holdings line (no newline):
 * {"t":..,"clientId":..,"topic":..,"queues":[{"brokerName","queueId"}..],"reason":..} */
int sim_holdings_line_encode(struct buf *out, int64_t t_ms, const char *client_id, const char *topic,
                             const struct allocate_queue *qs, size_t n, const char *reason);

#endif
