/* route_body.h — the TopicRouteData body (GET_ROUTEINFO_BY_TOPIC, 105):
 * the daemon's encoder (borrowed strings in, compact JSON out) and the
 * client side's parser (owned struct rmq_route_info out, with the lookups a
 * client does on it; `rmqcoord sim` uses it today). Pure; any thread.
 */
#ifndef RMQ_ROUTE_BODY_H
#define RMQ_ROUTE_BODY_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- encode (name server side) ----------------------------------------- */

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

/* ---- parse (client side) ----------------------------------------------- */

/* Upper bounds on what a parsed route may hold (the frame cap already
 * limits bytes; these bound the arrays built from them and the nesting the
 * bare-key scanner follows). */
#define RMQ_ROUTE_MAX_ENTRIES 4096
#define RMQ_ROUTE_MAX_DEPTH 64

struct rmq_route_info_broker {
    char *name;   /* owned */
    char *master; /* owned copy of brokerAddrs[0], NULL when absent */
    char **addrs; /* owned: every address, ascending broker id */
    size_t naddrs;
};
struct rmq_route_info_queue {
    char *broker_name; /* owned */
    int read_queue_nums;
    int perm;
};
struct rmq_route_info {
    struct rmq_route_info_broker *brokers; /* owned */
    size_t nbrokers;
    struct rmq_route_info_queue *queues; /* owned */
    size_t nqueues;
};

/* Parses a TopicRouteData body into *out (zero it first). Accepts the bare
 * numeric map keys fastjson writes for old clients (PROTOCOL: docs/protocol.md §3.4) as well
 * as quoted ones. 0, RMQ_EPROTO (reason in err) or RMQ_ENOMEM; on error
 * *out is left cleared. */
int rmq_route_parse(const uint8_t *body, size_t len, struct rmq_route_info *out, char *err, size_t errlen);
void rmq_route_info_clear(struct rmq_route_info *r);
/* Same brokers, addresses and queue data (order-sensitive; both come from
 * one name server that writes them in a stable order). */
bool rmq_route_info_equal(const struct rmq_route_info *a, const struct rmq_route_info *b);
/* The address a client uses for brokerName: the master (id 0), else the
 * lowest id present, else NULL. Borrowed from r. */
const char *rmq_route_info_addr_of(const struct rmq_route_info *r, const char *broker_name);

#endif
