/* broker.c — the operations every request family shares: the clock, topic
 * creation, the expiry scan (see broker.h). Loop thread only. */
#include "broker.h"

#include "clocks.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "stats.h"
#include "store.h"
#include "trace_recorder.h"

#include <assert.h>

/* Channel ids collected per registry_expire call. */
#define BROKER_EXPIRE_BATCH 256

int64_t broker_now_ms(const struct broker *s)
{
    if (s->cfg->virtual_clock)
        return s->wall_base_ms + s->clock_offset_ms;
    return s->wall_base_ms + (loop_now_ms(s->loop) - s->mono_base_ms);
}

int broker_put_topic(struct broker *s, const char *name, const struct topic_broker *brokers, size_t n)
{
    int rc = topics_put(&s->topics, name, brokers, n);
    if (rc != 0)
        return rc;
    assert(n <= TOPIC_MAX_BROKERS && topics_get(&s->topics, name)); /* topics_put bounds n */
    struct store_topic_broker sb[TOPIC_MAX_BROKERS];
    for (size_t i = 0; i < n; i++)
        sb[i] = (struct store_topic_broker){brokers[i].broker_name, brokers[i].read_queue_nums,
                                            brokers[i].write_queue_nums, brokers[i].perm};
    trace_record_route(s->trace, broker_now_ms(s), name, topics_get(&s->topics, name));
    rc = store_put_topic(s->store, name, sb, n, broker_now_ms(s));
    if (rc != 0)
        log_error("store: saving topic %s failed: %s", name, store_errmsg(s->store));
    return rc;
}

const struct topic *broker_create_topic(struct broker *s, const char *name, int nqueues)
{
    if ((int64_t)s->topics.map.count >= s->cfg->max_topics) {
        /* Auto-create would otherwise let one client grow memory and the
         * store without bound, one route query at a time. */
        s->stats.limit_hits++;
        log_limited(&s->refuse_log, loop_now_ms(s->loop), LOG_WARN,
                    "topic %s not created: --max-topics %lld reached", name, (long long)s->cfg->max_topics);
        return NULL;
    }
    struct topic_broker b = {(char *)s->cfg->broker_name, nqueues, nqueues, TOPIC_PERM_RW};
    if (broker_put_topic(s, name, &b, 1) != 0)
        return NULL;
    log_info("topic %s created with %d queue(s) on %s", name, nqueues, s->cfg->broker_name);
    return topics_get(&s->topics, name);
}

void broker_expire(struct broker *s)
{
    assert(s->conns && s->cfg->channel_expiry_ms > 0);
    uint64_t t0 = rmq_mono_us();
    if (s->cfg->idle_timeout_ms > 0) {
        int64_t now = loop_now_ms(s->loop);
        for (struct conn *c = conn_set_first(s->conns); c; c = c->next)
            if (!c->closing && now - c->last_frame_ms > s->cfg->idle_timeout_ms)
                conn_close_async(c, "idle: nothing received within --idle-timeout-ms");
    }
    /* Rounds of BROKER_EXPIRE_BATCH channels until a round is not full:
     * every channel that lost its memberships is closed in this scan. */
    uint64_t ids[BROKER_EXPIRE_BATCH];
    int64_t now_ms = broker_now_ms(s);
    size_t n;
    do {
        n = registry_expire(&s->reg, now_ms, s->cfg->channel_expiry_ms, ids, BROKER_EXPIRE_BATCH);
        for (size_t i = 0; i < n; i++) {
            struct reg_channel *ch = registry_channel(&s->reg, ids[i]);
            /* PROTOCOL: docs/protocol.md §4.5 — an expired channel is closed. */
            if (ch && ch->conn)
                conn_close_async(ch->conn, "expired: no heartbeat within the channel expiry");
        }
    } while (n == BROKER_EXPIRE_BATCH);
    stats_histogram_add(&s->stats.expiry_scan, rmq_mono_us() - t0);
}
