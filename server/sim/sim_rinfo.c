/* sim_rinfo.c — what a simulated Java push consumer reports in its
 * ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO, 307): the properties with
 * their defaults, the strategy and version names, the TreeMap order; the
 * body itself is written by rmq_running_info_encode (running_info_body.c).
 * See sim_rinfo.h. Pure (the caller passes every time); any thread. */
#include "sim_rinfo.h"

#include "err.h"
#include "mem.h"
#include "running_info_body.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *sim_strategy_class(enum allocate_strategy s)
{
    switch (s) {
    case ALLOCATE_AVG: return "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely";
    case ALLOCATE_AVG_BY_CIRCLE:
        return "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle";
    case ALLOCATE_CONFIG: return "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig";
    case ALLOCATE_MACHINE_ROOM:
        return "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom";
    case ALLOCATE_MACHINE_ROOM_NEARBY:
        return "org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby";
    case ALLOCATE_CONSISTENT_HASH:
        return "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash";
    default: return "?";
    }
}

void sim_version_name(int ordinal, char *out, size_t outlen)
{
    /* PROTOCOL: docs/protocol.md §1.7 ordinal(Vmaj_min_pat) = 213 + 200(maj-4) + 20 min + 2 pat;
     * the SNAPSHOT of each release sits one below it. */
    if (ordinal < 212) {
        snprintf(out, outlen, "V%d", ordinal);
        return;
    }
    int e = ordinal - 212, maj = 4 + e / 200, r = e % 200, s = r % 20;
    snprintf(out, outlen, "V%d_%d_%d%s", maj, r / 20, s / 2, s % 2 ? "" : "_SNAPSHOT");
}

struct prop {
    const char *key;
    char val[160];
};

static int prop_cmp(const void *a, const void *b)
{
    return strcmp(((const struct prop *)a)->key, ((const struct prop *)b)->key);
}

/* Fills the DefaultMQPushConsumer fields and PROP_* entries a Java client
 * reports (PROTOCOL: docs/protocol.md §3.8), with their default values. Returns the count. */
static size_t fill_props(const struct sim_rinfo *ri, struct prop *p)
{
    size_t n = 0;
#define PROP(k, ...) (p[n].key = (k), snprintf(p[n].val, sizeof p[n].val, __VA_ARGS__), n++)
    char ver[32], stamp[32];
    time_t from = (time_t)((ri->start_ms - 30 * 60 * 1000) / 1000);
    struct tm tm;
    gmtime_r(&from, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
    sim_version_name(ri->version, ver, sizeof ver);
    PROP("PROP_CLIENT_VERSION", "%s", ver);
    PROP("PROP_CONSUMEORDERLY", "false");
    PROP("PROP_CONSUMER_START_TIMESTAMP", "%" PRId64, ri->start_ms);
    PROP("PROP_CONSUME_TYPE", "CONSUME_PASSIVELY");
    PROP("PROP_NAMESERVER_ADDR", "%s;", ri->namesrv);
    PROP("PROP_THREADPOOL_CORE_SIZE", "20");
    PROP("adjustThreadPoolNumsThreshold", "100000");
    PROP("allocateMessageQueueStrategy", "%s@1", sim_strategy_class(ri->strategy));
    PROP("awaitTerminationMillisWhenShutdown", "0");
    PROP("consumeConcurrentlyMaxSpan", "2000");
    PROP("consumeFromWhere", "CONSUME_FROM_LAST_OFFSET");
    PROP("consumeMessageBatchMaxSize", "1");
    PROP("consumeThreadMax", "20");
    PROP("consumeThreadMin", "20");
    PROP("consumeTimeout", "15");
    PROP("consumeTimestamp", "%s", stamp);
    PROP("consumerGroup", "%s", ri->group);
    PROP("maxReconsumeTimes", "-1");
    PROP("messageModel", "%s", ri->broadcast ? "BROADCASTING" : "CLUSTERING");
    PROP("postSubscriptionWhenPull", "false");
    PROP("pullBatchSize", "32");
    PROP("pullInterval", "0");
    PROP("pullThresholdForQueue", "1000");
    PROP("pullThresholdForTopic", "-1");
    PROP("pullThresholdSizeForQueue", "100");
    PROP("pullThresholdSizeForTopic", "-1");
    PROP("subscription", "{}");
    PROP("suspendCurrentQueueTimeMillis", "1000");
    PROP("unitMode", "false");
#undef PROP
    return n;
}

#define SIM_RINFO_MAX_PROPS 40

static int rq_cmp(const void *a, const void *b)
{
    const struct rmq_running_info_queue *x = a, *y = b;
    return allocate_queue_compare(&(struct allocate_queue){x->topic, x->broker_name, x->queue_id},
                                  &(struct allocate_queue){y->topic, y->broker_name, y->queue_id});
}

static int sub_cmp(const void *a, const void *b)
{
    /* SubscriptionData.compareTo compares topic + "@" + subString; every sim
     * subscription is "*", so the topic decides. */
    return allocate_string_compare(((const struct rmq_subscription *)a)->topic,
                                   ((const struct rmq_subscription *)b)->topic);
}

int sim_running_info_encode(const struct sim_rinfo *ri, struct buf *out)
{
    struct prop props[SIM_RINFO_MAX_PROPS];
    struct rmq_running_info_prop kv[SIM_RINFO_MAX_PROPS];
    size_t nprops = fill_props(ri, props);
    /* Java's Properties is a Hashtable (no order); sorted is stable to test. */
    qsort(props, nprops, sizeof *props, prop_cmp);
    for (size_t i = 0; i < nprops; i++)
        kv[i] = (struct rmq_running_info_prop){props[i].key, props[i].val};

    /* Copies in TreeMap order; the caller's arrays stay as they are. */
    struct rmq_running_info_queue *qs = rmq_calloc(ri->nqueues ? ri->nqueues : 1, sizeof *qs);
    struct rmq_subscription *subs = rmq_calloc(ri->nsubs ? ri->nsubs : 1, sizeof *subs);
    int rc = RMQ_ENOMEM;
    if (qs && subs) {
        for (size_t i = 0; i < ri->nqueues; i++) {
            const struct sim_rinfo_queue *q = &ri->queues[i];
            qs[i] = (struct rmq_running_info_queue){q->mq.topic, q->mq.broker_name, q->mq.queue_id,
                                                    q->commit_offset, q->last_pull_ms};
        }
        qsort(qs, ri->nqueues, sizeof *qs, rq_cmp);
        for (size_t i = 0; i < ri->nsubs; i++)
            subs[i] = sim_sub_data(&ri->subs[i]);
        qsort(subs, ri->nsubs, sizeof *subs, sub_cmp);
        struct rmq_running_info_spec spec = {
            .props = kv,
            .nprops = nprops,
            .queues = qs,
            .nqueues = ri->nqueues,
            .subs = subs,
            .nsubs = ri->nsubs,
        };
        rc = rmq_running_info_encode(&spec, out);
    }
    rmq_free(qs);
    rmq_free(subs);
    return rc;
}
