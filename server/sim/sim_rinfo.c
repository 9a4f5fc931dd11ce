/* sim_rinfo.c — the ConsumerRunningInfo body a Java push consumer returns
 * for GET_CONSUMER_RUNNING_INFO (307), plus the names that go into it.
 * Part of sim_body.h. Pure (the caller passes every time); any thread. */
#include "sim_body.h"

#include "err.h"
#include "mem.h"
#include "rmq_body.h"

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

static int append_props(const struct sim_rinfo *ri, struct buf *out)
{
    struct prop props[SIM_RINFO_MAX_PROPS];
    size_t n = fill_props(ri, props);
    /* Java's Properties is a Hashtable (no order); sorted is stable to test. */
    qsort(props, n, sizeof *props, prop_cmp);
    int rc = buf_append_str(out, "\"properties\":{");
    for (size_t i = 0; !rc && i < n; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_json_append_string(out, props[i].key);
        if (!rc)
            rc = buf_append_u8(out, ':');
        if (!rc)
            rc = rmq_json_append_string(out, props[i].val);
    }
    return rc ? rc : buf_append_u8(out, '}');
}

static int rq_cmp(const void *a, const void *b)
{
    return allocate_queue_compare(&((const struct sim_rinfo_queue *)a)->mq,
                                  &((const struct sim_rinfo_queue *)b)->mq);
}

/* One ProcessQueueInfo value (keys sorted; a sim holds no messages). */
static int append_pq_info(const struct sim_rinfo_queue *q, struct buf *out)
{
    return buf_appendf(out,
                       "{\"cachedMsgCount\":0,\"cachedMsgMaxOffset\":0,\"cachedMsgMinOffset\":0,"
                       "\"cachedMsgSizeInMiB\":0,\"commitOffset\":%" PRId64 ",\"droped\":false,"
                       "\"lastConsumeTimestamp\":0,\"lastLockTimestamp\":0,\"lastPullTimestamp\":%" PRId64
                       ",\"locked\":false,\"transactionMsgCount\":0,\"transactionMsgMaxOffset\":0,"
                       "\"transactionMsgMinOffset\":0,\"tryUnlockTimes\":0}",
                       q->commit_offset, q->last_pull_ms);
}

/* PROTOCOL: docs/protocol.md §3.8 mqTable is a TreeMap<MessageQueue, ProcessQueueInfo>;
 * fastjson writes each key object inline and unquoted. */
static int append_mq_table(const struct sim_rinfo *ri, struct buf *out)
{
    struct sim_rinfo_queue *qs = rmq_calloc(ri->nqueues ? ri->nqueues : 1, sizeof *qs);
    if (!qs)
        return RMQ_ENOMEM;
    if (ri->nqueues)
        memcpy(qs, ri->queues, ri->nqueues * sizeof *qs);
    qsort(qs, ri->nqueues, sizeof *qs, rq_cmp);
    int rc = buf_append_str(out, "\"mqTable\":{");
    for (size_t i = 0; !rc && i < ri->nqueues; i++) {
        rc = buf_append_str(out, i ? ",{\"brokerName\":" : "{\"brokerName\":");
        if (!rc)
            rc = rmq_json_append_string(out, qs[i].mq.broker_name);
        if (!rc)
            rc = buf_appendf(out, ",\"queueId\":%" PRId32 ",\"topic\":", qs[i].mq.queue_id);
        if (!rc)
            rc = rmq_json_append_string(out, qs[i].mq.topic);
        if (!rc)
            rc = buf_append_str(out, "}:");
        if (!rc)
            rc = append_pq_info(&qs[i], out);
    }
    rmq_free(qs);
    return rc ? rc : buf_append_u8(out, '}');
}

static int sub_cmp(const void *a, const void *b)
{
    /* SubscriptionData.compareTo compares topic + "@" + subString; every sim
     * subscription is "*", so the topic decides. */
    return allocate_string_compare(((const struct sim_sub *)a)->topic, ((const struct sim_sub *)b)->topic);
}

/* statusTable (TreeMap topic -> ConsumeStatus) and subscriptionSet. */
static int append_subs(const struct sim_rinfo *ri, struct buf *out)
{
    struct sim_sub *subs = rmq_calloc(ri->nsubs ? ri->nsubs : 1, sizeof *subs);
    if (!subs)
        return RMQ_ENOMEM;
    if (ri->nsubs)
        memcpy(subs, ri->subs, ri->nsubs * sizeof *subs);
    qsort(subs, ri->nsubs, sizeof *subs, sub_cmp);
    int rc = buf_append_str(out, "\"statusTable\":{");
    for (size_t i = 0; !rc && i < ri->nsubs; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_json_append_string(out, subs[i].topic);
        if (!rc)
            rc =
                buf_append_str(out, ":{\"consumeFailedMsgs\":0,\"consumeFailedTPS\":0.0,\"consumeOKTPS\":0.0,"
                                    "\"consumeRT\":0.0,\"pullRT\":0.0,\"pullTPS\":0.0}");
    }
    if (!rc)
        rc = buf_append_str(out, "},\"subscriptionSet\":[");
    for (size_t i = 0; !rc && i < ri->nsubs; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = sim_sub_encode(&subs[i], out);
    }
    rmq_free(subs);
    return rc ? rc : buf_append_u8(out, ']');
}

int sim_running_info_encode(const struct sim_rinfo *ri, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_u8(out, '{');
    if (!rc)
        rc = append_mq_table(ri, out);
    if (!rc)
        rc = buf_append_u8(out, ',');
    if (!rc)
        rc = append_props(ri, out);
    if (!rc)
        rc = buf_append_u8(out, ',');
    if (!rc)
        rc = append_subs(ri, out);
    if (!rc)
        rc = buf_append_u8(out, '}');
    if (rc)
        out->len = out->pos + mark;
    return rc;
}
