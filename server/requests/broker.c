/* broker.c — the operations every request family shares: the clock, topic
 * creation, the expiry scan, reset and the virtual clock (see broker.h).
 * Loop thread only. */
#include "broker.h"

#include "admin_requests.h"
#include "clocks.h"
#include "conn.h"
#include "err.h"
#include "lock_requests.h"
#include "log.h"
#include "loop.h"
#include "member_events.h"
#include "notify.h"
#include "outbound.h"
#include "pull_requests.h"
#include "reply.h"
#include "stats.h"
#include "store.h"
#include "trace_recorder.h"

#include <assert.h>

/* Channel ids collected per registry_expire call. */
#define BROKER_EXPIRE_BATCH 256

int broker_init_state(struct broker *s, const struct config *cfg)
{
    s->cfg = cfg;
    s->signal_fd = -1;
    s->next_opaque = 1000000;
    s->wall_base_ms = rmq_wall_ms();
    int rc = loop_new(&s->loop);
    if (rc != 0)
        return rc;
    s->mono_base_ms = loop_now_ms(s->loop);
    s->started_ms = s->wall_base_ms;
    struct registry_hooks hooks;
    member_events_hooks(s, &hooks);
    registry_init(&s->reg, &hooks);
    topics_init(&s->topics);
    offsets_init(&s->offsets);
    queue_locks_init(&s->locks);
    return outbound_init(s);
}

int broker_settle_round(struct broker *s, bool commit)
{
    conn_set_reap(s->conns);
    notify_flush(s);
    int rc = RMQ_OK;
    /* store_commit_due, not store_in_batch: a batch SQLite rolled back by
     * itself, with nothing written after it, must still fail its replies. */
    if (commit && store_commit_due(s->store)) {
        s->writes_at_commit = store_write_count(s->store);
        s->last_commit_ms = loop_now_ms(s->loop);
        uint64_t t0 = rmq_mono_us();
        /* Only a batch an acknowledgement depends on waits for fsync. */
        rc = s->nacks > 0 ? store_commit(s->store) : store_commit_lazy(s->store);
        if (rc != 0) {
            log_limited(&s->store_log, loop_now_ms(s->loop), LOG_ERROR, "store: commit failed: %s",
                        store_errmsg(s->store));
            member_events_need_snapshots(s);
            s->stats.commit_failures++;
            /* The live view must not run ahead of what was acknowledged. */
            if (broker_offsets_reload(s) != 0)
                log_limited(&s->store_log, loop_now_ms(s->loop), LOG_ERROR, "store: reloading offsets failed: %s",
                            store_errmsg(s->store));
        } else {
            s->offsets_at_commit = s->offsets.changes;
        }
        stats_histogram_add(&s->stats.commit, rmq_mono_us() - t0);
    }
    assert(!commit || rc != RMQ_OK || !store_commit_due(s->store));
    reply_release_held(s, rc == RMQ_OK);
    conn_set_flush(s->conns);
    return rc;
}

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

void broker_reset_live(struct broker *s)
{
    for (struct conn *c = conn_set_first(s->conns); c; c = c->next)
        conn_close_async(c, "reset by the admin API");
    /* Reap now so the closes run against the old state before it is wiped. */
    conn_set_reap(s->conns);
    pull_free_all(s);
    queue_locks_free(&s->locks);
    queue_locks_init(&s->locks);
    offsets_free(&s->offsets);
    offsets_init(&s->offsets);
    admin_requests_free(s); /* the store's subscription_groups rows go with store_reset */
    s->group_configs_version++;
    uint64_t gen = s->topics.generation; /* keeps counting: a broker re-registers after a reset */
    topics_free(&s->topics);
    topics_init(&s->topics);
    s->topics.generation = gen + 1;
    struct registry_hooks hooks = s->reg.hooks;
    registry_free(&s->reg);
    registry_init(&s->reg, &hooks);
    /* The --topic topics are part of the daemon's configuration, not state. */
    for (size_t i = 0; i < s->cfg->ntopics; i++)
        if (!broker_create_topic(s, s->cfg->topics[i].name, s->cfg->topics[i].queues))
            log_error("reset: topic %s could not be re-created", s->cfg->topics[i].name);
}

int broker_clock_advance(struct broker *s, int64_t ms)
{
    if (!s->cfg->virtual_clock)
        return RMQ_ESTATE;
    if (ms < 0)
        return RMQ_EINVAL;
    s->clock_offset_ms += ms;
    broker_expire(s);
    pull_on_timer(s);
    return RMQ_OK;
}
