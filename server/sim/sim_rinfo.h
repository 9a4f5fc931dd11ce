/* sim_rinfo.h — the ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO reply)
 * a simulated Java push consumer answers with (sim_rinfo.c). Encoders leave
 * the buffer unchanged on error. Pure: no I/O, no clock; any thread. */
#ifndef RMQ_SIM_RINFO_H
#define RMQ_SIM_RINFO_H

#include "sim_body.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Appends the ConsumerRunningInfo JSON (rmq_running_info_encode) with the
 * properties a Java push consumer reports (PROTOCOL: docs/protocol.md §3.8),
 * mqTable in MessageQueue order and subscriptionSet in SubscriptionData
 * order (topic@sub); the caller's arrays are not reordered. 0, RMQ_ENOMEM
 * or a buf error. */
int sim_running_info_encode(const struct sim_rinfo *ri, struct buf *out);

/* The Java class name of a strategy (static string). */
const char *sim_strategy_class(enum allocate_strategy s);
/* "V4_9_8" for ordinal 409 (PROTOCOL: docs/protocol.md §1.7 formula); "V<n>" outside the
 * formula's range. Writes into out. */
void sim_version_name(int ordinal, char *out, size_t outlen);

#endif
