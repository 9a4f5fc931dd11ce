/* topics.h — the topic model: brokers and queue counts per topic, routes.
 *
 * A topic spans one or more named brokers (e.g. "broker-a",
 * "roomA@broker-b"); every broker name points at the daemon's advertised
 * address, so one process can serve multi-broker and machine-room layouts.
 * Loop thread only (the HTTP thread asks through the mailbox).
 */
#ifndef RMQ_TOPICS_H
#define RMQ_TOPICS_H

#include "buf.h"
#include "hashmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOPIC_PERM_READ 4
#define TOPIC_PERM_WRITE 2
#define TOPIC_PERM_RW 6
#define TOPIC_MAX_BROKERS 64
#define TOPIC_MAX_QUEUES 1024

struct topic_broker {
    char *broker_name; /* owned */
    int read_queue_nums;
    int write_queue_nums;
    int perm;
};

struct topic {
    char *name;                   /* owned */
    struct topic_broker *brokers; /* owned, sorted by broker name */
    size_t nbrokers;
    /* Encoded routes (bare and quoted broker ids), built on first use: a
     * route query then costs a copy, not an encode. A topic is replaced
     * whole on change, so the cache never goes stale. */
    char *route_json[2]; /* owned */
    size_t route_len[2];
};

struct topics {
    struct hashmap map;  /* name -> struct topic* (owned) */
    uint64_t generation; /* bumped by every put and delete (cluster mode re-registers on change) */
};

void topics_init(struct topics *t);
void topics_free(struct topics *t);
const struct topic *topics_get(const struct topics *t, const char *name);
/* Creates or replaces a topic with copies of brokers (n >= 1). 0, RMQ_EINVAL
 * (bad name, counts or duplicate broker names) or RMQ_ENOMEM. */
int topics_put(struct topics *t, const char *name, const struct topic_broker *brokers, size_t n);
/* 0, or RMQ_ENOTFOUND. */
int topics_delete(struct topics *t, const char *name);
size_t topics_count(const struct topics *t);

/* Whether name is acceptable as a topic or group name (1..255 bytes, no
 * control characters). */
bool topics_name_ok(const char *name);

/* Appends the TopicRouteData JSON of topic (all brokers at addr). cluster
 * and addr must be the same on every call for a topic (they are cached). */
int topics_route_encode(const struct topic *tp, const char *cluster, const char *addr, bool quoted_ids,
                        struct buf *out);

#endif
