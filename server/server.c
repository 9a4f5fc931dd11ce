/* server.c — wires the modules together and runs one loop iteration's
 * bookkeeping (see server.h). Loop thread only, except server_init and
 * server_fini which run on the main thread before and after the loop. */
#include "server.h"

#include "acl.h"
#include "cluster.h"
#include "conn.h"
#include "err.h"
#include "http_admin.h"
#include "log.h"
#include "loop.h"
#include "mailbox.h"
#include "mem.h"
#include "net.h"
#include "outbound.h"
#include "request_codes.h"
#include "rmq_body.h"
#include "store.h"
#include "trace.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <unistd.h>

int64_t server_now_ms(const struct server *s)
{
    if (s->cfg->virtual_clock)
        return s->wall_base_ms + s->clock_offset_ms;
    return s->wall_base_ms + (loop_now_ms(s->loop) - s->mono_base_ms);
}

#define HEARTBEAT_STORE_MS 1000

/* ---- replies ---- */

void server_send_reply(struct server *s, struct conn *c, const struct rmq_cmd *req, struct rmq_cmd *resp,
                       bool durable)
{
    if (rmq_cmd_is_oneway(req)) {
        rmq_cmd_clear(resp);
        return;
    }
    if (!durable) {
        conn_send(c, resp);
        rmq_cmd_clear(resp);
        return;
    }
    if (s->nacks == s->acks_cap) {
        size_t cap = s->acks_cap ? s->acks_cap * 2 : 64;
        struct held_ack *p = rmq_realloc(s->acks, cap * sizeof *p);
        if (!p) {
            rmq_cmd_clear(resp);
            conn_close_async(c, "out of memory holding a reply");
            return;
        }
        s->acks = p;
        s->acks_cap = cap;
    }
    s->acks[s->nacks].conn = c;
    s->acks[s->nacks++].resp = *resp;
    rmq_cmd_init(resp);
}

/* After the commit: sends the held replies, or SYSTEM_ERROR in their place
 * when the batch they depend on was not stored. */
static void release_acks(struct server *s, bool stored)
{
    for (size_t i = 0; i < s->nacks; i++) {
        struct held_ack *a = &s->acks[i];
        if (a->conn && stored) {
            conn_send(a->conn, &a->resp);
        } else if (a->conn) {
            struct rmq_cmd err;
            if (rmq_cmd_init_response(&err, &a->resp, RMQ_RESP_SYSTEM_ERROR,
                                      "not stored: the store could not commit; retry later") == 0)
                conn_send(a->conn, &err);
            rmq_cmd_clear(&err);
        }
        rmq_cmd_clear(&a->resp);
    }
    s->nacks = 0;
}

static void forget_acks_of(struct server *s, const struct conn *c)
{
    for (size_t i = 0; i < s->nacks; i++)
        if (s->acks[i].conn == c)
            s->acks[i].conn = NULL;
}

void server_reply_code(struct server *s, struct conn *c, const struct rmq_cmd *req, int32_t code,
                       const char *remark)
{
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req, code, remark) != 0) {
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    server_send_reply(s, c, req, &resp, false);
}

void server_reply_body(struct server *s, struct conn *c, const struct rmq_cmd *req, int built,
                       struct buf *body, bool durable)
{
    struct rmq_cmd resp;
    int rc = built;
    if (rc == 0)
        rc = rmq_cmd_init_response(&resp, req, RMQ_RESP_SUCCESS, NULL);
    if (rc == 0) {
        rc = rmq_cmd_set_body_copy(&resp, buf_head(body), buf_live(body));
        if (rc == 0)
            server_send_reply(s, c, req, &resp, durable);
        else
            rmq_cmd_clear(&resp);
    }
    if (rc != 0)
        conn_close_async(c, "out of memory building a reply");
    buf_free(body);
}

int server_require_i64(struct server *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                       int64_t *out)
{
    int rc = rmq_cmd_ext_get_i64(req, field, out);
    if (rc == 0)
        return 0;
    char remark[160];
    snprintf(remark, sizeof remark, "%s field %s in %s request",
             rc == RMQ_ENOTFOUND ? "missing" : "non-integer", field, rmq_request_name(req->code));
    server_reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
    return rc;
}

int server_require_str(struct server *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                       const char **out)
{
    const char *v = rmq_cmd_ext_get(req, field);
    if (v && *v && topics_name_ok(v)) {
        *out = v;
        return 0;
    }
    char remark[160];
    snprintf(remark, sizeof remark, "%s field %s in %s request", v && *v ? "invalid" : "missing", field,
             rmq_request_name(req->code));
    server_reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
    return RMQ_EINVAL;
}

/* ---- topics ---- */

int server_put_topic(struct server *s, const char *name, const struct topic_broker *brokers, size_t n)
{
    int rc = topics_put(&s->topics, name, brokers, n);
    if (rc != 0)
        return rc;
    struct store_topic_broker sb[TOPIC_MAX_BROKERS];
    for (size_t i = 0; i < n; i++)
        sb[i] = (struct store_topic_broker){brokers[i].broker_name, brokers[i].read_queue_nums,
                                            brokers[i].write_queue_nums, brokers[i].perm};
    trace_record_route(s->trace, server_now_ms(s), name, topics_get(&s->topics, name));
    rc = store_put_topic(s->store, name, sb, n, server_now_ms(s));
    if (rc != 0)
        log_error("store: saving topic %s failed: %s", name, store_errmsg(s->store));
    return rc;
}

const struct topic *server_create_topic(struct server *s, const char *name, int nqueues)
{
    struct topic_broker b = {(char *)s->cfg->broker_name, nqueues, nqueues, TOPIC_PERM_RW};
    if (server_put_topic(s, name, &b, 1) != 0)
        return NULL;
    log_info("topic %s created with %d queue(s) on %s", name, nqueues, s->cfg->broker_name);
    return topics_get(&s->topics, name);
}

/* ---- membership hooks: persist, log, schedule NOTIFY ---- */

/* Appends the JSON array of g's member client ids to out; with extra/at,
 * also inserts extra at index at (to rebuild the list before a leave). */
static int members_json(const struct mship_group *g, const char *extra, size_t at, struct buf *out)
{
    int rc = buf_append_u8(out, '[');
    size_t n = g->nmembers + (extra ? 1 : 0);
    for (size_t i = 0, k = 0; rc == 0 && i < n; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        const char *id = (extra && i == at) ? extra : g->members[k++].client_id;
        if (rc == 0)
            rc = rmq_json_append_string(out, id);
    }
    if (rc == 0)
        rc = buf_append_u8(out, ']');
    if (rc == 0)
        rc = buf_terminate(out);
    return rc;
}

/* Member lists go into an event in full for groups of up to this many
 * members; a bigger group's events keep only the position of the change
 * (store.h, delta), with full lists again every event_snapshot_every()
 * events so a reader rebuilds any list from a bounded number of deltas. A
 * mass join or expiry of n members so writes O(n) bytes per snapshot and
 * O(1) per event instead of O(n) per event. */
#define EVENT_FULL_MEMBERS 64
#define EVENT_SNAPSHOT_MAX_GAP 1024

static uint32_t event_snapshot_every(size_t members)
{
    size_t gap = members / 4;
    return gap < EVENT_SNAPSHOT_MAX_GAP ? (uint32_t)gap : EVENT_SNAPSHOT_MAX_GAP;
}

/* The next event of every group stores full lists: after a batch was lost,
 * the snapshot the deltas would refer to may be gone. */
static void events_need_snapshots(struct server *s)
{
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&s->reg.groups, &b); e;
         e = hashmap_next(&s->reg.groups, e, &b))
        ((struct reg_group *)e->val)->events_since_full = UINT32_MAX;
}

/* The member lists of an event, as JSON array text, into before and after
 * (see record_event for before_extra / before_at / before_skip). */
static int event_lists(const struct mship_group *g, const char *before_extra, size_t before_at,
                       long before_skip, struct buf *before, struct buf *after)
{
    int rc = members_json(g, NULL, 0, after);
    if (rc == 0 && before_skip >= 0) {
        /* A join: the list before is the list after without the new member. */
        struct mship_group tmp = *g;
        struct mship_member *copy = NULL;
        if (tmp.nmembers > 0) {
            copy = rmq_malloc(tmp.nmembers * sizeof *copy);
            rc = copy ? 0 : RMQ_ENOMEM;
            if (copy) {
                size_t k = 0;
                for (size_t i = 0; i < tmp.nmembers; i++)
                    if ((long)i != before_skip)
                        copy[k++] = tmp.members[i];
                tmp.members = copy;
                tmp.nmembers = k;
            }
        }
        if (rc == 0)
            rc = members_json(&tmp, NULL, 0, before);
        rmq_free(copy);
    } else if (rc == 0) {
        rc = members_json(g, before_extra, before_at, before);
    }
    return rc;
}

/* Records a membership event: store row, one info log line. before_extra /
 * before_skip describe how the member list looked before the change:
 * before_skip >= 0, a join at that position; before_extra, a member that
 * was at before_at; neither (before_skip -2), an unchanged list. */
static void record_event(struct server *s, struct reg_group *g, const char *kind, const char *client_id,
                         uint64_t channel_id, const char *before_extra, size_t before_at, long before_skip)
{
    size_t n = g->g.nmembers;
    bool full = n <= EVENT_FULL_MEMBERS || g->events_since_full >= event_snapshot_every(n);
    struct buf after, before;
    buf_init(&after, 0);
    buf_init(&before, 0);
    int rc = full ? event_lists(&g->g, before_extra, before_at, before_skip, &before, &after) : 0;
    int64_t delta_index = before_skip >= 0 ? before_skip : before_extra ? (int64_t)before_at : -1;
    if (rc != 0) {
        log_error("event %s for group %s not recorded: out of memory", kind, g->g.name);
        g->events_since_full = UINT32_MAX;
    } else {
        struct store_event ev = {server_now_ms(s),
                                 g->g.name,
                                 kind,
                                 client_id,
                                 (int64_t)channel_id,
                                 full ? (const char *)buf_head(&before) : NULL,
                                 full ? (const char *)buf_head(&after) : NULL,
                                 !full,
                                 delta_index};
        if (store_append_event(s->store, &ev, NULL) != 0) {
            log_error("store: event for group %s failed: %s", g->g.name, store_errmsg(s->store));
            g->events_since_full = UINT32_MAX; /* later deltas would miss this one */
        } else {
            g->events_since_full = full ? 0 : g->events_since_full + 1;
        }
        if (full)
            log_info("group %s: %s %s -> members %s", g->g.name, kind,
                     client_id ? client_id : "(table changed)", (const char *)buf_head(&after));
        else
            log_info("group %s: %s %s -> %zu members", g->g.name, kind,
                     client_id ? client_id : "(table changed)", n);
    }
    buf_free(&after);
    buf_free(&before);
    s->stats.changes++;
    int k = stats_change_kind(kind);
    if (k >= 0)
        s->stats.changes_by_kind[k]++;
}

/* Store writes from hooks cannot fail the request that caused them; a failed
 * one is logged, and the commit that follows reports the batch's fate. */
static void check_store(struct server *s, int rc, const char *what, const char *group)
{
    if (rc != 0)
        log_error("store: %s for group %s failed: %s (%s)", what, group, rmq_strerror(rc),
                  store_errmsg(s->store));
}

static void schedule_notify(struct server *s, struct reg_group *g)
{
    if (mship_notifies(&g->g))
        registry_mark_notify(&s->reg, g);
}

static void hook_joined(void *ctx, struct reg_group *g, const struct mship_member *m)
{
    struct server *s = ctx;
    int64_t now = server_now_ms(s);
    check_store(s,
                store_put_group(s->store, g->g.name, rmq_consume_type_name(g->g.consume_type),
                                rmq_message_model_name(g->g.message_model),
                                rmq_consume_from_where_name(g->g.consume_from_where), now),
                "saving the group", g->g.name);
    check_store(s, store_member_join(s->store, g->g.name, (int64_t)m->channel_id, m->client_id, now),
                "recording a join", g->g.name);
    record_event(s, g, "join", m->client_id, m->channel_id, NULL, 0, (long)(m - g->g.members));
    schedule_notify(s, g);
}

static void hook_left(void *ctx, struct reg_group *g, const struct mship_member *m, size_t index,
                      enum reg_leave_reason why)
{
    struct server *s = ctx;
    const char *kind = reg_leave_reason_name(why);
    check_store(s, store_member_leave(s->store, g->g.name, (int64_t)m->channel_id, kind, server_now_ms(s)),
                "recording a leave", g->g.name);
    record_event(s, g, kind, m->client_id, m->channel_id, m->client_id, index, -1);
    if (why == REG_LEAVE_EXPIRE) {
        s->stats.expirations++;
        /* PROTOCOL: the broker stays silent on expiry; rmqcoord notifies unless told not to. */
        if (!s->cfg->notify_on_expiry)
            return;
    }
    schedule_notify(s, g);
}

static void save_subscriptions(struct server *s, const struct reg_group *g)
{
    struct store_subscription subs[64];
    struct buf tags[64];
    size_t n = g->g.nsubs < 64 ? g->g.nsubs : 64;
    for (size_t i = 0; i < n; i++) {
        const struct rmq_subscription *sub = &g->g.subs[i];
        buf_init(&tags[i], 0);
        int rc = buf_append_u8(&tags[i], '[');
        for (size_t t = 0; rc == 0 && t < sub->ntags; t++) {
            if (t)
                rc = buf_append_u8(&tags[i], ',');
            if (rc == 0)
                rc = rmq_json_append_string(&tags[i], sub->tags[t]);
        }
        if (rc == 0)
            rc = buf_append_u8(&tags[i], ']');
        if (rc == 0)
            rc = buf_terminate(&tags[i]);
        subs[i] =
            (struct store_subscription){sub->topic, sub->sub_string, sub->expression_type,
                                        rc == 0 ? (const char *)buf_head(&tags[i]) : "[]", sub->sub_version};
    }
    if (store_put_subscriptions(s->store, g->g.name, subs, n, server_now_ms(s)) != 0)
        log_error("store: subscriptions of %s failed: %s", g->g.name, store_errmsg(s->store));
    for (size_t i = 0; i < n; i++)
        buf_free(&tags[i]);
}

static void hook_subscriptions(void *ctx, struct reg_group *g, unsigned flags)
{
    struct server *s = ctx;
    save_subscriptions(s, g);
    /* A first heartbeat joins and subscribes at once: that is one change, the join. */
    if (flags & MSHIP_JOINED)
        return;
    record_event(s, g, "subscription", NULL, 0, NULL, 0, -2 /* list unchanged */);
    schedule_notify(s, g);
}

static void hook_heartbeat(void *ctx, struct reg_group *g, const struct mship_member *m, unsigned flags)
{
    struct server *s = ctx;
    /* Persisting every heartbeat would make SQLite the bottleneck; the
     * stored time may lag the live one by HEARTBEAT_STORE_MS (a restart
     * marks every member gone anyway). */
    struct mship_member *mm = (struct mship_member *)m;
    if (flags & MSHIP_JOINED) {
        mm->stored_hb_ms = m->last_hb_ms; /* the join row carries it */
    } else if (m->last_hb_ms - m->stored_hb_ms >= HEARTBEAT_STORE_MS) {
        mm->stored_hb_ms = m->last_hb_ms;
        store_soft_writes(s->store, true); /* a refreshed time: nobody waits for it */
        check_store(s, store_member_heartbeat(s->store, g->g.name, (int64_t)m->channel_id, m->last_hb_ms),
                    "recording a heartbeat", g->g.name);
        store_soft_writes(s->store, false);
    }
    if ((flags & MSHIP_SUB_REPLACED) && !(flags & (MSHIP_SUB_ADDED | MSHIP_SUB_REMOVED)))
        save_subscriptions(s, g);
    /* PROTOCOL: §3.2 — the broker creates %RETRY%<group> (1 queue) at the first heartbeat. */
    char retry[300];
    size_t n = strlen(g->g.name);
    if (n > sizeof retry - sizeof "%RETRY%")
        return; /* no valid topic name is that long */
    memcpy(retry, "%RETRY%", sizeof "%RETRY%" - 1);
    memcpy(retry + sizeof "%RETRY%" - 1, g->g.name, n + 1);
    if (!topics_get(&s->topics, retry) && topics_name_ok(retry))
        server_create_topic(s, retry, 1);
}

static void hook_group_empty(void *ctx, struct reg_group *g)
{
    struct server *s = ctx;
    pull_release_group(s, g->g.name);
}

/* ---- connections ---- */

/* Token bucket per connection (--max-requests-per-sec, burst of one second's
 * worth): a flooding client gets SYSTEM_BUSY, the others keep their latency. */
static bool within_rate(struct server *s, struct conn *c)
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
    if (ch->rate_tokens < 1.0)
        return false;
    ch->rate_tokens -= 1.0;
    return true;
}

static void on_frame(void *ctx, struct conn *c, struct rmq_cmd *cmd)
{
    struct server *s = ctx;
    s->stats.requests++;
    if (rmq_cmd_is_response(cmd)) {
        /* PROTOCOL: replies to our own requests are matched, never waited on. */
        if (!outbound_on_response(s, c, cmd))
            log_debug("response code %d opaque %d from %s matches nothing; dropped", cmd->code, cmd->opaque,
                      c->peer);
        return;
    }
    if (!within_rate(s, c)) {
        s->stats.requests_throttled++;
        char remark[128];
        snprintf(remark, sizeof remark, "[OVERLOAD] more than %lld requests/s on this connection",
                 (long long)s->cfg->max_requests_per_sec);
        server_reply_code(s, c, cmd, RMQ_RESP_SYSTEM_BUSY, remark);
        return;
    }
    const char *why;
    if (s->acl && acl_check(s->acl, cmd, &why) != 0) {
        s->stats.requests_denied++;
        log_debug("%s from %s: %s", rmq_request_name(cmd->code), c->peer, why);
        server_reply_code(s, c, cmd, RMQ_RESP_NO_PERMISSION, why);
        return;
    }
    if (cmd->code == RMQ_REQ_HEART_BEAT)
        c->bulk_frames_in_event++; /* a heartbeat flood is served in slices (conn.c classify) */
    if (cmd->code == RMQ_REQ_HEART_BEAT || cmd->code == RMQ_REQ_UNREGISTER_CLIENT)
        trace_record_request(s->trace, server_now_ms(s), c->id, c->peer, cmd);
    uint64_t t0 = stats_clock_us();
    uint64_t writes = store_write_count(s->store);
    if (!cluster_dispatch(s, c, cmd))
        dispatch_request(s, c, cmd);
    /* What this request changed must be committed before its reply leaves
     * (an admin reader or the client's next step may look); a request that
     * wrote nothing may be answered at once. */
    if (store_write_count(s->store) != writes)
        c->hold_output = true;
    stats_record_request(&s->stats, cmd->code, stats_clock_us() - t0);
}

static void on_close(void *ctx, struct conn *c)
{
    struct server *s = ctx;
    log_debug("connection %s closed: %s", c->peer, c->close_reason);
    pull_drop_conn(s, c);
    outbound_drop_conn(s, c);
    cluster_conn_closed(s, c);
    forget_acks_of(s, c);
    trace_record_close(s->trace, server_now_ms(s), c->id, c->peer, c->close_reason);
    registry_channel_close(&s->reg, c->id);
    int rc = store_close_channel(s->store, (int64_t)c->id, c->close_reason, server_now_ms(s));
    if (rc != 0 && rc != RMQ_ENOTFOUND)
        log_error("store: closing channel of %s failed: %s", c->peer, store_errmsg(s->store));
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    struct server *s = ctx;
    for (int i = 0; i < 64; i++) {
        char peer[64];
        int cfd = net_accept(fd, peer, sizeof peer);
        if (cfd == -EAGAIN)
            return;
        if (cfd < 0) {
            log_warn("accept failed: %s", strerror(-cfd));
            return;
        }
        if ((int64_t)conn_set_count(s->conns) >= s->cfg->max_connections) {
            /* Refuse early: one more connection would push every other client's latency. */
            log_warn("connection from %s refused: --max-connections %lld reached", peer,
                     (long long)s->cfg->max_connections);
            close(cfd);
            s->stats.connections_refused++;
            continue;
        }
        uint64_t id = ((uint64_t)s->run_id << 32) | ++s->next_conn_seq;
        struct conn *c;
        if (conn_set_adopt(s->conns, cfd, id, peer, loop_now_ms(l), &c) != 0) {
            log_warn("connection from %s refused: out of resources", peer);
            continue;
        }
        if (registry_channel_open(&s->reg, id, c, peer, server_now_ms(s)) != 0) {
            conn_close_async(c, "out of memory");
            continue;
        }
        if (store_open_channel(s->store, (int64_t)id, peer, server_now_ms(s)) != 0)
            log_error("store: recording channel of %s failed: %s", peer, store_errmsg(s->store));
        s->stats.connections_accepted++;
        trace_record_connect(s->trace, server_now_ms(s), id, peer);
        log_debug("connection %s accepted (channel %llu)", peer, (unsigned long long)id);
    }
}

/* ---- loop hooks ---- */

/* Soft writes alone (refreshed heartbeat times) are committed at most this
 * often: committing them every iteration cost a WAL append per few
 * heartbeats once the loop iterated in small slices. */
#define SOFT_COMMIT_MS 10

/* Whether the open batch must be committed now: a held reply, a connection
 * holding its output, or anything but soft writes waits for it. */
static bool commit_due(struct server *s, struct loop *l)
{
    return s->nacks > 0 || store_write_count(s->store) != s->writes_at_commit ||
           loop_now_ms(l) - s->last_commit_ms >= SOFT_COMMIT_MS;
}

static void before_sleep(struct loop *l, void *ctx)
{
    struct server *s = ctx;
    /* Closing connections can schedule NOTIFYs, and writing can close
     * connections: repeat a few times so nothing waits for the next event. */
    uint64_t fanout_t0 = stats_clock_us(), notified = s->stats.notifications_sent;
    for (int round = 0; round < 4; round++) {
        conn_set_reap(s->conns);
        notify_flush(s);
        bool durable_ok = true;
        if (store_in_batch(s->store) && commit_due(s, l)) {
            s->writes_at_commit = store_write_count(s->store);
            s->last_commit_ms = loop_now_ms(l);
            uint64_t t0 = stats_clock_us();
            /* Only a batch an acknowledgement depends on waits for fsync. */
            int rc = s->nacks > 0 ? store_commit(s->store) : store_commit_lazy(s->store);
            if (rc != 0) {
                log_error("store: commit failed: %s", store_errmsg(s->store));
                durable_ok = false;
                events_need_snapshots(s);
                s->stats.commit_failures++;
            }
            stats_histogram_add(&s->stats.commit, stats_clock_us() - t0);
        }
        release_acks(s, durable_ok);
        conn_set_flush(s->conns);
        cluster_before_sleep(s);
        if (!s->reg.pending)
            break;
    }
    if (s->stats.notifications_sent != notified)
        stats_histogram_add(&s->stats.fanout, stats_clock_us() - fanout_t0);
    conn_set_reap(s->conns);
}

static void expiry_timer(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    struct server *s = ctx;
    uint64_t t0 = stats_clock_us();
    if (s->cfg->idle_timeout_ms > 0) {
        int64_t now = loop_now_ms(s->loop);
        for (struct conn *c = conn_set_first(s->conns); c; c = c->next)
            if (!c->closing && now - c->last_frame_ms > s->cfg->idle_timeout_ms)
                conn_close_async(c, "idle: nothing received within --idle-timeout-ms");
    }
    uint64_t ids[256];
    size_t n = registry_expire(&s->reg, server_now_ms(s), s->cfg->channel_expiry_ms, ids, 256);
    for (size_t i = 0; i < n; i++) {
        struct reg_channel *ch = registry_channel(&s->reg, ids[i]);
        /* PROTOCOL: §3.5 — an expired channel is closed. */
        if (ch && ch->conn)
            conn_close_async(ch->conn, "expired: no heartbeat within the channel expiry");
    }
    stats_histogram_add(&s->stats.expiry_scan, stats_clock_us() - t0);
}

static void free_box(void *p)
{
    rmq_free(p);
}

void server_reset_live(struct server *s)
{
    for (struct conn *c = conn_set_first(s->conns); c; c = c->next)
        conn_close_async(c, "reset by the admin API");
    /* Reap now so the closes run against the old state before it is wiped. */
    conn_set_reap(s->conns);
    pull_free_all(s);
    lock_free_all(s);
    hashmap_free(&s->offsets, free_box);
    hashmap_free(&s->queue_max, free_box);
    uint64_t gen = s->topics.generation; /* keeps counting: a broker re-registers after a reset */
    topics_free(&s->topics);
    topics_init(&s->topics);
    s->topics.generation = gen + 1;
    struct registry_hooks hooks = s->reg.hooks;
    registry_free(&s->reg);
    registry_init(&s->reg, &hooks);
    /* The --topic topics are part of the daemon's configuration, not state. */
    for (size_t i = 0; i < s->cfg->ntopics; i++)
        if (!server_create_topic(s, s->cfg->topics[i].name, s->cfg->topics[i].queues))
            log_error("reset: topic %s could not be re-created", s->cfg->topics[i].name);
}

int server_clock_advance(struct server *s, int64_t ms)
{
    if (!s->cfg->virtual_clock)
        return RMQ_ESTATE;
    if (ms < 0)
        return RMQ_EINVAL;
    s->clock_offset_ms += ms;
    expiry_timer(s->loop, 0, s);
    pull_on_timer(s);
    return RMQ_OK;
}

static void pull_timer(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    pull_on_timer(ctx);
    outbound_on_timer(ctx);
}

static void trace_timer(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    struct server *s = ctx;
    trace_recorder_flush(s->trace);
}

static void on_mailbox(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    (void)fd;
    (void)events;
    struct server *s = ctx;
    mailbox_drain(s->mailbox, admin_live_handle, s);
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    struct server *s = ctx;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        log_info("signal %u received, shutting down", si.ssi_signo);
        s->stopping = true;
        loop_stop(l);
    }
}

/* ---- setup and teardown ---- */

static int load_topic(void *ctx, const char *topic, const struct store_topic_broker *brokers, size_t n)
{
    struct server *s = ctx;
    struct topic_broker tb[TOPIC_MAX_BROKERS];
    if (n > TOPIC_MAX_BROKERS)
        n = TOPIC_MAX_BROKERS;
    for (size_t i = 0; i < n; i++)
        tb[i] = (struct topic_broker){(char *)brokers[i].broker_name, brokers[i].read_queue_nums,
                                      brokers[i].write_queue_nums, brokers[i].perm};
    if (topics_put(&s->topics, topic, tb, n) != 0)
        log_warn("store: topic %s skipped (invalid definition)", topic);
    if (!strncmp(topic, "%RETRY%", 7))
        registry_mark_known(&s->reg, topic + 7);
    return 0;
}

static int load_offset(void *ctx, const char *group, const char *topic, int queue_id, int64_t offset)
{
    struct server *s = ctx;
    registry_mark_known(&s->reg, group);
    return server_offset_load(s, group, topic, queue_id, offset);
}

static int open_listeners(struct server *s)
{
    const struct config *cfg = s->cfg;
    for (size_t i = 0; i < cfg->nlisten; i++) {
        int fd = net_listen(cfg->listen[i].host, cfg->listen[i].port);
        if (fd < 0) {
            log_error("cannot listen on %s:%u: %s", cfg->listen[i].host, cfg->listen[i].port, strerror(-fd));
            return fd;
        }
        s->listen_fds[s->nlisten++] = fd;
        uint16_t port = 0;
        char bound[300];
        if (net_local_addr(fd, bound, sizeof bound, &port) != 0)
            snprintf(bound, sizeof bound, "%s:%u", cfg->listen[i].host, cfg->listen[i].port);
        snprintf(s->listen_addrs[i], sizeof s->listen_addrs[i], "%s", bound);
        int rc = loop_add_fd(s->loop, fd, LOOP_READ, on_accept, s);
        if (rc != 0)
            return rc;
        if (i == 0 && !cfg->advertise_set) {
            /* Clients connect to the advertised address: never advertise a wildcard. */
            const char *host = cfg->listen[0].host;
            if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !*host)
                host = "127.0.0.1";
            snprintf(s->advertise, sizeof s->advertise, "%s:%u", host, port);
        }
    }
    if (cfg->advertise_set)
        snprintf(s->advertise, sizeof s->advertise, "%s:%u", cfg->advertise.host, cfg->advertise.port);
    return RMQ_OK;
}

static int setup_signals(struct server *s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -errno;
    s->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->signal_fd < 0)
        return -errno;
    signal(SIGPIPE, SIG_IGN);
    /* A file-size limit must fail the write (SQLite reports it), not kill the daemon. */
    signal(SIGXFSZ, SIG_IGN);
    return loop_add_fd(s->loop, s->signal_fd, LOOP_READ, on_signal, s);
}

static int setup_store(struct server *s)
{
    char err[256];
    int rc = store_open(s->cfg->store_path, &s->store, err, sizeof err);
    if (rc != 0) {
        log_error("cannot open store %s: %s", s->cfg->store_path, err);
        return rc;
    }
    s->run_id = store_run_id(s->store);
    int groups = 0;
    rc = store_recover(s->store, server_now_ms(s), &groups);
    if (rc != 0) {
        log_error("store recovery failed: %s", store_errmsg(s->store));
        return rc;
    }
    if (groups > 0)
        log_info("store: %d group(s) had members when the previous run ended; marked gone", groups);
    rc = store_load_topics(s->store, load_topic, s);
    if (rc == 0)
        rc = store_load_offsets(s->store, load_offset, s);
    if (rc != 0) {
        log_error("store: loading failed: %s", store_errmsg(s->store));
        return rc;
    }
    for (size_t i = 0; i < s->cfg->ntopics; i++)
        if (!topics_get(&s->topics, s->cfg->topics[i].name) &&
            !server_create_topic(s, s->cfg->topics[i].name, s->cfg->topics[i].queues))
            return RMQ_EIO;
    rc = store_commit(s->store);
    if (rc == 0 && s->cfg->sync_interval_ms > 0 &&
        (rc = store_lazy_sync(s->store, s->cfg->sync_interval_ms)) != 0)
        log_error("store: cannot start the sync thread: %s", store_errmsg(s->store));
    return rc;
}

/* Opens the trace and records every topic's route as the replay's starting point. */
static int setup_trace(struct server *s)
{
    if (!s->cfg->record_path[0])
        return RMQ_OK;
    char err[256];
    int rc = trace_recorder_open(s->cfg->record_path, server_now_ms(s), &s->trace, err, sizeof err);
    if (rc != 0) {
        log_error("cannot record to %s: %s", s->cfg->record_path, err);
        return rc;
    }
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&s->topics.map, &b); e;
         e = hashmap_next(&s->topics.map, e, &b))
        trace_record_route(s->trace, server_now_ms(s), e->key, e->val);
    return loop_add_timer(s->loop, 1000, 1000, trace_timer, s, NULL);
}

static int setup_acl(struct server *s)
{
    if (!s->cfg->acl_path[0])
        return RMQ_OK;
    char err[256];
    int rc = acl_load(s->cfg->acl_path, &s->acl, err, sizeof err);
    if (rc != 0)
        log_error("cannot load --acl %s: %s", s->cfg->acl_path, err);
    else
        log_info("ACL on: %zu account(s)", acl_accounts(s->acl));
    return rc;
}

static int setup_http(struct server *s)
{
    int rc = mailbox_new(&s->mailbox);
    if (rc != 0)
        return rc;
    rc = loop_add_fd(s->loop, mailbox_fd(s->mailbox), LOOP_READ, on_mailbox, s);
    if (rc != 0 || !s->cfg->http_enabled)
        return rc;
    struct http_admin_options opt = {
        .host = s->cfg->http.host,
        .port = s->cfg->http.port,
        .store_path = s->cfg->store_path,
        .mailbox = s->mailbox,
        .admin_token = s->cfg->admin_token[0] ? s->cfg->admin_token : NULL,
    };
    char err[256];
    rc = http_admin_start(&opt, &s->http, err, sizeof err);
    if (rc != 0) {
        log_error("cannot start HTTP admin on %s:%u: %s", s->cfg->http.host, s->cfg->http.port, err);
        return rc;
    }
    s->http_port = http_admin_port(s->http);
    return RMQ_OK;
}

int server_init(struct server *s, const struct config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->signal_fd = -1;
    s->next_opaque = 1000000;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    s->wall_base_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    int rc = loop_new(&s->loop);
    if (rc != 0)
        return rc;
    s->mono_base_ms = loop_now_ms(s->loop);
    s->started_ms = s->wall_base_ms;
    struct registry_hooks hooks = {
        .ctx = s,
        .joined = hook_joined,
        .left = hook_left,
        .subscriptions_changed = hook_subscriptions,
        .heartbeat = hook_heartbeat,
        .group_empty = hook_group_empty,
    };
    registry_init(&s->reg, &hooks);
    topics_init(&s->topics);
    hashmap_init(&s->offsets);
    hashmap_init(&s->queue_max);
    hashmap_init(&s->locks);
    struct conn_set_options copt = {
        .max_frame = cfg->max_frame_bytes,
        .max_output = cfg->max_pending_output,
        .on_frame = on_frame,
        .on_close = on_close,
        .ctx = s,
    };
    if ((rc = conn_set_new(s->loop, &copt, &s->conns)) != 0 || (rc = setup_store(s)) != 0 ||
        (rc = setup_trace(s)) != 0 || (rc = setup_acl(s)) != 0 || (rc = setup_signals(s)) != 0 ||
        (rc = open_listeners(s)) != 0 || (rc = setup_http(s)) != 0 || (rc = cluster_start(s)) != 0)
        return rc;
    int timer;
    int64_t scan = cfg->expiry_scan_ms;
    if ((rc = loop_add_timer(s->loop, scan, scan, expiry_timer, s, &timer)) != 0 ||
        (rc = loop_add_timer(s->loop, 50, 50, pull_timer, s, &timer)) != 0)
        return rc;
    loop_set_before_sleep(s->loop, before_sleep, s);
    return RMQ_OK;
}

int server_run(struct server *s)
{
    printf("READY remoting=");
    for (size_t i = 0; i < s->nlisten; i++)
        printf("%s%s", i ? "," : "", s->listen_addrs[i]);
    if (s->http)
        printf(" http=%s:%u\n", s->cfg->http.host, s->http_port);
    else
        printf(" http=off\n");
    fflush(stdout);
    log_info("rmqcoord serving: remoting %s, advertised broker address %s, store %s", s->listen_addrs[0],
             s->advertise, s->cfg->store_path);
    return loop_run(s->loop);
}

void server_fini(struct server *s)
{
    /* Answer every deferred admin request, then stop the HTTP thread: it
     * must not post into a loop being torn down. */
    if (s->loop) {
        admin_holdings_abort_all(s);
        outbound_free_all(s);
    }
    http_admin_stop(s->http);
    s->http = NULL;
    cluster_stop(s); /* a broker unregisters from its name servers here */
    if (s->conns) {
        pull_free_all(s);
        conn_set_free(s->conns);
        s->conns = NULL;
    }
    if (s->store && store_in_batch(s->store) && store_commit(s->store) != 0)
        log_error("store: final commit failed: %s", store_errmsg(s->store));
    release_acks(s, false);
    rmq_free(s->acks);
    store_close(s->store);
    s->store = NULL;
    trace_recorder_close(s->trace);
    s->trace = NULL;
    acl_free(s->acl);
    s->acl = NULL;
    mailbox_free(s->mailbox);
    for (size_t i = 0; i < s->nlisten; i++)
        close(s->listen_fds[i]);
    if (s->signal_fd >= 0)
        close(s->signal_fd);
    lock_free_all(s);
    registry_free(&s->reg);
    topics_free(&s->topics);
    hashmap_free(&s->offsets, free_box);
    hashmap_free(&s->queue_max, free_box);
    loop_free(s->loop);
}
