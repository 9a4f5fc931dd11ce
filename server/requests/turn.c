/* turn.c — one loop turn of the broker: admission, close, accept
 * bookkeeping and the work before sleep (see turn.h). Loop thread only. */
#include "turn.h"

#include "acl.h"
#include "clocks.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "member_events.h"
#include "message_retention.h"
#include "notify.h"
#include "offset_table.h"
#include "outbound.h"
#include "pull_requests.h"
#include "reply.h"
#include "request_codes.h"
#include "request_dispatch.h"
#include "stats.h"
#include "store.h"
#include "trace_recorder.h"

#include <assert.h>
#include <stdio.h>

/* Soft writes alone (refreshed heartbeat times) are committed at most this
 * often: committing them every iteration cost a WAL append per few
 * heartbeats once the loop iterated in small slices. */
#define SOFT_COMMIT_MS 10

/* Settle rounds per turn: closing connections can schedule NOTIFYs, and
 * writing can close connections, so a few rounds run before sleeping. */
#define SETTLE_ROUNDS 4

uint64_t broker_next_conn_id(struct broker *s)
{
    uint64_t id = ((uint64_t)s->run_id << 32) | ++s->next_conn_seq;
    assert(s->next_conn_seq != 0); /* 2^32 connections in one run would repeat ids */
    return id;
}

int broker_conn_opened(struct broker *s, struct conn *c)
{
    assert(c && !registry_channel(&s->reg, c->id)); /* an id is adopted once */
    int rc = registry_channel_open(&s->reg, c->id, c, c->peer, broker_now_ms(s));
    if (rc != 0) {
        conn_close_async(c, "out of memory");
        return rc;
    }
    s->stats.connections_accepted++;
    trace_record_connect(s->trace, broker_now_ms(s), c->id, c->peer);
    log_debug("connection %s accepted (channel %llu)", c->peer, (unsigned long long)c->id);
    assert(registry_channel(&s->reg, c->id)->conn == c);
    return RMQ_OK;
}

int broker_store_channel(struct broker *s, const struct conn *c)
{
    struct reg_channel *ch = registry_channel(&s->reg, c->id);
    if (!ch || ch->stored)
        return RMQ_OK;
    ch->stored = true;
    int rc = store_open_channel(s->store, (int64_t)c->id, c->peer, ch->opened_ms);
    if (rc != 0)
        log_error("store: recording channel of %s failed: %s", c->peer, store_errmsg(s->store));
    return rc;
}

/* Token bucket per connection (--max-requests-per-sec, burst of one second's
 * worth): a flooding client gets SYSTEM_BUSY, the others keep their latency. */
static bool within_rate(struct broker *s, struct conn *c)
{
    int64_t rate = s->cfg->max_requests_per_sec;
    struct reg_channel *ch = registry_channel(&s->reg, c->id);
    if (rate <= 0 || !ch)
        return true;
    int64_t now = loop_now_ms(s->loop);
    if (ch->rate_refill_ms == 0) {
        ch->rate_tokens = (double)rate;
    } else if (now > ch->rate_refill_ms) {
        ch->rate_tokens += (double)(now - ch->rate_refill_ms) * (double)rate / 1000.0;
        if (ch->rate_tokens > (double)rate)
            ch->rate_tokens = (double)rate;
    }
    ch->rate_refill_ms = now;
    assert(ch->rate_tokens <= (double)rate); /* the burst is one second's worth */
    if (ch->rate_tokens < 1.0)
        return false;
    ch->rate_tokens -= 1.0;
    return true;
}

/* Whether cmd may run: false when it was refused (answered SYSTEM_BUSY or
 * NO_PERMISSION here). */
static bool admitted(struct broker *s, struct conn *c, struct rmq_cmd *cmd)
{
    if (!within_rate(s, c)) {
        s->stats.requests_throttled++;
        char remark[128];
        snprintf(remark, sizeof remark, "[OVERLOAD] more than %lld requests/s on this connection",
                 (long long)s->cfg->max_requests_per_sec);
        reply_code(s, c, cmd, RMQ_RESP_SYSTEM_BUSY, remark);
        return false;
    }
    const char *why;
    if (s->acl && acl_check(s->acl, cmd, &why) != 0) {
        s->stats.requests_denied++;
        log_debug("%s from %s: %s", rmq_request_name(cmd->code), c->peer, why);
        reply_code(s, c, cmd, RMQ_RESP_NO_PERMISSION, why);
        return false;
    }
    return true;
}

void broker_on_frame(void *broker, struct conn *c, struct rmq_cmd *cmd)
{
    struct broker *s = broker;
    s->stats.requests++;
    if (rmq_cmd_is_response(cmd)) {
        /* PROTOCOL (docs/protocol.md §1.5): replies to our own requests are matched, never waited on. */
        if (!outbound_on_response(s, c, cmd))
            log_debug("response code %d opaque %d from %s matches nothing; dropped", cmd->code, cmd->opaque,
                      c->peer);
        return;
    }
    if (!admitted(s, c, cmd))
        return;
    (void)broker_store_channel(s, c);
    if (cmd->code == RMQ_REQ_HEART_BEAT)
        c->bulk_frames_in_event++; /* a heartbeat flood is served in slices (conn.c classify) */
    /* Recorded after admission: a heartbeat over --max-heartbeat-bytes is
     * refused before it is parsed, so it changes nothing replay should see,
     * and recording it let one connection fill the disk. */
    bool admitted = cmd->code != RMQ_REQ_HEART_BEAT || (int64_t)cmd->body_len <= s->cfg->max_heartbeat_bytes;
    if (admitted && (cmd->code == RMQ_REQ_HEART_BEAT || cmd->code == RMQ_REQ_UNREGISTER_CLIENT ||
                     cmd->code == RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP)) /* rebalance rounds (replay_infer.c) */
        trace_record_request(s->trace, broker_now_ms(s), c->id, c->peer, cmd);
    uint64_t t0 = rmq_mono_us();
    uint64_t writes = store_write_count(s->store);
    if (!s->hooks.dispatch || !s->hooks.dispatch(s, c, cmd))
        dispatch_request(s, c, cmd);
    /* What this request changed must be committed before its reply leaves
     * (an admin reader or the client's next step may look); a request that
     * wrote nothing may be answered at once. */
    if (store_write_count(s->store) != writes)
        c->hold_output = true;
    stats_record_request(&s->stats, cmd->code, rmq_mono_us() - t0);
}

void broker_on_close(void *broker, struct conn *c)
{
    struct broker *s = broker;
    log_debug("connection %s closed: %s", c->peer, c->close_reason);
    pull_drop_conn(s, c);
    outbound_drop_conn(s, c);
    if (s->hooks.conn_closed)
        s->hooks.conn_closed(s, c);
    reply_forget_conn(s, c);
    trace_record_close(s->trace, broker_now_ms(s), c->id, c->peer, c->close_reason);
    struct reg_channel *ch = registry_channel(&s->reg, c->id);
    bool stored = ch && ch->stored;
    registry_channel_close(&s->reg, c->id);
    assert(!registry_channel(&s->reg, c->id)); /* the channel is gone with its connection */
    int rc = stored ? store_close_channel(s->store, (int64_t)c->id, c->close_reason, broker_now_ms(s)) : 0;
    if (rc != 0 && rc != RMQ_ENOTFOUND)
        log_error("store: closing channel of %s failed: %s", c->peer, store_errmsg(s->store));
}

/* Whether the open batch must be committed now: a held reply, a connection
 * holding its output, or anything but soft writes waits for it. */
static bool commit_due(const struct broker *s)
{
    return s->nacks > 0 || store_write_count(s->store) != s->writes_at_commit ||
           loop_now_ms(s->loop) - s->last_commit_ms >= SOFT_COMMIT_MS;
}

/* One settle round: reaps closed connections, sends the NOTIFYs that fell
 * due, commits the open batch when commit is set (fsynced only when a held
 * reply waits on it), releases the held replies by the commit's fate, and
 * flushes output. The commit's result (RMQ_OK when none). */
static int settle_round(struct broker *s, bool commit)
{
    conn_set_reap(s->conns);
    notify_flush(s);
    int rc = RMQ_OK;
    /* store_commit_due, not store_in_batch: a batch SQLite rolled back by
     * itself, with nothing written after it, must still fail its replies. */
    bool committed = commit && store_commit_due(s->store);
    if (committed) {
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
            if (offset_table_reload(s) != 0)
                log_limited(&s->store_log, loop_now_ms(s->loop), LOG_ERROR,
                            "store: reloading offsets failed: %s", store_errmsg(s->store));
        } else {
            s->offsets_at_commit = s->offsets.changes;
        }
        stats_histogram_add(&s->stats.commit, rmq_mono_us() - t0);
    }
    assert(!commit || rc != RMQ_OK || !store_commit_due(s->store)); /* a successful commit ends the batch */
    reply_release_held(s, rc == RMQ_OK);
    /* After the acks: a held pull sees a message only once its send is answered. */
    if (committed)
        pull_on_commit(s, rc == RMQ_OK);
    assert(s->nacks == 0); /* every held reply is sent or replaced once the batch's fate is known */
    conn_set_flush(s->conns);
    if (s->hooks.settle_round)
        s->hooks.settle_round(s);
    return rc;
}

int broker_before_sleep(struct broker *s, enum broker_commit when)
{
    struct loop *l = s->loop;
    uint64_t fanout_t0 = rmq_mono_us(), notified = s->stats.notifications_sent;
    /* Store upkeep, each at most once a second: membership facts of lost
     * writes re-written, closed channel rows beyond their bound pruned. */
    member_events_resync(s);
    if (store_prune(s->store, broker_now_ms(s), NULL) != 0)
        log_error("store: pruning closed channels failed: %s", store_errmsg(s->store));
    if (message_retention_run(s) < 0)
        log_limited(&s->store_log, loop_now_ms(s->loop), LOG_ERROR, "store: message retention failed: %s",
                    store_errmsg(s->store));
    int failed = RMQ_OK;
    for (int round = 0; round < SETTLE_ROUNDS; round++) {
        bool commit = when == BROKER_COMMIT_EVERY_TURN || (store_commit_due(s->store) && commit_due(s));
        int rc = settle_round(s, commit);
        if (rc != 0)
            failed = rc;
        /* Only a group marked during this round and due at once needs another. */
        if (!s->reg.pending ||
            registry_next_due(&s->reg, s->cfg->notify_coalesce_ms, loop_backlogged(l)) > loop_now_ms(l))
            break;
    }
    if (s->stats.notifications_sent != notified)
        stats_histogram_add(&s->stats.fanout, rmq_mono_us() - fanout_t0);
    conn_set_reap(s->conns);
    /* A postponed NOTIFY must not wait for the next event. */
    if (s->reg.pending && s->notify_timer)
        loop_timer_set(l, s->notify_timer,
                       registry_next_due(&s->reg, s->cfg->notify_coalesce_ms, loop_backlogged(l)));
    assert(reply_held_sane(s));
    return failed;
}
