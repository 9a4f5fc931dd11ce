/* server.c — wires the modules together and runs one loop iteration's
 * bookkeeping (see server.h). Loop thread only, except server_init and
 * server_fini which run on the main thread before and after the loop. */
#include "broker.h"

#include "acl.h"
#include "admin_dispatch.h"
#include "admin_holdings.h"
#include "admin_requests.h"
#include "clocks.h"
#include "cluster.h"
#include "conn.h"
#include "err.h"
#include "http_admin.h"
#include "lock_requests.h"
#include "log.h"
#include "loop.h"
#include "mailbox.h"
#include "mem.h"
#include "member_events.h"
#include "net.h"
#include "notify.h"
#include "outbound.h"
#include "proc.h"
#include "pull_requests.h"
#include "reply.h"
#include "request_codes.h"
#include "request_dispatch.h"
#include "rmq_body.h"
#include "server.h"
#include "store.h"
#include "trace_recorder.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- connections ---- */

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
    if (ch->rate_tokens < 1.0)
        return false;
    ch->rate_tokens -= 1.0;
    return true;
}

static void on_frame(void *ctx, struct conn *c, struct rmq_cmd *cmd)
{
    struct broker *s = ctx;
    s->stats.requests++;
    if (rmq_cmd_is_response(cmd)) {
        /* PROTOCOL (docs/protocol.md §1.5): replies to our own requests are matched, never waited on. */
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
        reply_code(s, c, cmd, RMQ_RESP_SYSTEM_BUSY, remark);
        return;
    }
    const char *why;
    if (s->acl && acl_check(s->acl, cmd, &why) != 0) {
        s->stats.requests_denied++;
        log_debug("%s from %s: %s", rmq_request_name(cmd->code), c->peer, why);
        reply_code(s, c, cmd, RMQ_RESP_NO_PERMISSION, why);
        return;
    }
    /* A channel row is written at its first accepted request, not at
     * accept: bare connect/close churn, or frames the ACL refuses, leave no
     * row behind. */
    struct reg_channel *ch = registry_channel(&s->reg, c->id);
    if (ch && !ch->stored) {
        ch->stored = true;
        if (store_open_channel(s->store, (int64_t)c->id, c->peer, ch->opened_ms) != 0)
            log_error("store: recording channel of %s failed: %s", c->peer, store_errmsg(s->store));
    }
    if (cmd->code == RMQ_REQ_HEART_BEAT)
        c->bulk_frames_in_event++; /* a heartbeat flood is served in slices (conn.c classify) */
    if (cmd->code == RMQ_REQ_HEART_BEAT || cmd->code == RMQ_REQ_UNREGISTER_CLIENT ||
        cmd->code == RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP) /* a client's rebalance rounds (replay_infer.c) */
        trace_record_request(s->trace, broker_now_ms(s), c->id, c->peer, cmd);
    uint64_t t0 = rmq_mono_us();
    uint64_t writes = store_write_count(s->store);
    if (!cluster_dispatch(s, c, cmd))
        dispatch_request(s, c, cmd);
    /* What this request changed must be committed before its reply leaves
     * (an admin reader or the client's next step may look); a request that
     * wrote nothing may be answered at once. */
    if (store_write_count(s->store) != writes)
        c->hold_output = true;
    stats_record_request(&s->stats, cmd->code, rmq_mono_us() - t0);
}

static void on_close(void *ctx, struct conn *c)
{
    struct broker *s = ctx;
    log_debug("connection %s closed: %s", c->peer, c->close_reason);
    pull_drop_conn(s, c);
    outbound_drop_conn(s, c);
    cluster_conn_closed(s, c);
    reply_forget_conn(s, c);
    trace_record_close(s->trace, broker_now_ms(s), c->id, c->peer, c->close_reason);
    struct reg_channel *ch = registry_channel(&s->reg, c->id);
    bool stored = ch && ch->stored;
    registry_channel_close(&s->reg, c->id);
    int rc = stored ? store_close_channel(s->store, (int64_t)c->id, c->close_reason, broker_now_ms(s)) : 0;
    if (rc != 0 && rc != RMQ_ENOTFOUND)
        log_error("store: closing channel of %s failed: %s", c->peer, store_errmsg(s->store));
}

/* Out of descriptors (or of kernel memory), accept fails again at once: the
 * listeners pause for ACCEPT_PAUSE_MS instead of spinning a core, and the
 * failure is logged once a second (counted in /metrics). */
#define ACCEPT_PAUSE_MS 100

static void resume_accepting(struct loop *l, int id, void *ctx)
{
    (void)id;
    struct broker *s = ctx;
    for (size_t i = 0; i < s->nlisten; i++)
        if (loop_mod_fd(l, s->listen_fds[i], LOOP_READ) != 0)
            log_error("cannot resume listening on %s", s->listen_addrs[i]);
    s->accept_paused = false;
}

static void pause_accepting(struct broker *s, int err)
{
    s->stats.accept_failures++;
    log_limited(&s->accept_log, loop_now_ms(s->loop), LOG_WARN, "accept failed: %s; not accepting for %d ms",
                strerror(err), ACCEPT_PAUSE_MS);
    if (s->accept_paused)
        return;
    if (loop_add_timer(s->loop, ACCEPT_PAUSE_MS, 0, resume_accepting, s, NULL) != 0)
        return; /* no timer, no pause: better to retry than to stop accepting */
    for (size_t i = 0; i < s->nlisten; i++)
        (void)loop_mod_fd(s->loop, s->listen_fds[i], 0);
    s->accept_paused = true;
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    struct broker *s = ctx;
    for (int i = 0; i < 64; i++) {
        char peer[64];
        int cfd = net_accept(fd, peer, sizeof peer);
        if (cfd == -EAGAIN)
            return;
        if (cfd == -EMFILE || cfd == -ENFILE || cfd == -ENOBUFS || cfd == -ENOMEM) {
            pause_accepting(s, -cfd);
            return;
        }
        if (cfd < 0) {
            /* A connection that died in the backlog (ECONNABORTED, ...): the next may be fine. */
            log_limited(&s->accept_log, loop_now_ms(l), LOG_WARN, "accept failed: %s", strerror(-cfd));
            continue;
        }
        if ((int64_t)conn_set_count(s->conns) >= s->cfg->max_connections) {
            /* Refuse early: one more connection would push every other client's latency. */
            log_limited(&s->refuse_log, loop_now_ms(l), LOG_WARN,
                        "connection from %s refused: --max-connections %lld reached", peer,
                        (long long)s->cfg->max_connections);
            close(cfd);
            s->stats.connections_refused++;
            continue;
        }
        uint64_t id = ((uint64_t)s->run_id << 32) | ++s->next_conn_seq;
        struct conn *c;
        if (conn_set_adopt(s->conns, cfd, id, peer, loop_now_ms(l), &c) != 0) {
            log_limited(&s->refuse_log, loop_now_ms(l), LOG_WARN,
                        "connection from %s refused: out of resources", peer);
            continue;
        }
        if (registry_channel_open(&s->reg, id, c, peer, broker_now_ms(s)) != 0) {
            conn_close_async(c, "out of memory");
            continue;
        }
        s->stats.connections_accepted++;
        trace_record_connect(s->trace, broker_now_ms(s), id, peer);
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
static bool commit_due(struct broker *s, struct loop *l)
{
    return s->nacks > 0 || store_write_count(s->store) != s->writes_at_commit ||
           loop_now_ms(l) - s->last_commit_ms >= SOFT_COMMIT_MS;
}

static void before_sleep(struct loop *l, void *ctx)
{
    struct broker *s = ctx;
    /* Closing connections can schedule NOTIFYs, and writing can close
     * connections: repeat a few times so nothing waits for the next event. */
    uint64_t fanout_t0 = rmq_mono_us(), notified = s->stats.notifications_sent;
    /* Store upkeep, each at most once a second: membership facts of lost
     * writes re-written, closed channel rows beyond their bound pruned. */
    member_events_resync(s);
    if (store_prune(s->store, broker_now_ms(s), NULL) != 0)
        log_error("store: pruning closed channels failed: %s", store_errmsg(s->store));
    for (int round = 0; round < 4; round++) {
        (void)broker_settle_round(s, store_commit_due(s->store) && commit_due(s, l));
        cluster_before_sleep(s);
        /* Only a group marked during this round and due at once needs another. */
        if (!s->reg.pending ||
            registry_next_due(&s->reg, s->cfg->notify_coalesce_ms, loop_backlogged(l)) > loop_now_ms(l))
            break;
    }
    if (s->stats.notifications_sent != notified)
        stats_histogram_add(&s->stats.fanout, rmq_mono_us() - fanout_t0);
    conn_set_reap(s->conns);
    /* A postponed NOTIFY must not wait for the next event. */
    if (s->reg.pending)
        loop_timer_set(l, s->notify_timer,
                       registry_next_due(&s->reg, s->cfg->notify_coalesce_ms, loop_backlogged(l)));
}

/* The NOTIFY timer's period while nothing is postponed (before_sleep moves
 * its next firing to when a postponed NOTIFY falls due). */
#define NOTIFY_TIMER_IDLE_MS 3600000

/* Only wakes the loop: before_sleep sends what fell due. */
static void notify_timer(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    (void)ctx;
}

static void expiry_timer(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    broker_expire(ctx);
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
    struct broker *s = ctx;
    trace_recorder_flush(s->trace);
}

static void holdings_timer(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    admin_holdings_record_tick(ctx);
}

static void on_mailbox(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    (void)fd;
    (void)events;
    struct broker *s = ctx;
    mailbox_drain(s->mailbox, admin_dispatch_handle, s);
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    struct broker *s = ctx;
    if (proc_read_stop_signals(fd, "")) {
        s->stopping = true;
        loop_stop(l);
    }
}

/* ---- setup and teardown ---- */

static int load_topic(void *ctx, const char *topic, const struct store_topic_broker *brokers, size_t n)
{
    struct broker *s = ctx;
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
    struct broker *s = ctx;
    registry_mark_known(&s->reg, group);
    return offsets_put(&s->offsets, group, topic, queue_id, offset);
}

static int open_listeners(struct broker *s)
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

static int setup_signals(struct broker *s)
{
    s->signal_fd = proc_stop_signal_fd();
    if (s->signal_fd < 0)
        return s->signal_fd;
    /* A file-size limit must fail the write (SQLite reports it), not kill the daemon. */
    signal(SIGXFSZ, SIG_IGN);
    return loop_add_fd(s->loop, s->signal_fd, LOOP_READ, on_signal, s);
}

static int setup_store(struct broker *s)
{
    char err[256];
    int rc = store_open(s->cfg->store_path, &s->store, err, sizeof err);
    if (rc != 0) {
        log_error("cannot open store %s: %s", s->cfg->store_path, err);
        return rc;
    }
    s->run_id = store_run_id(s->store);
    int groups = 0;
    rc = store_recover(s->store, broker_now_ms(s), &groups);
    if (rc != 0) {
        log_error("store recovery failed: %s", store_errmsg(s->store));
        return rc;
    }
    if (groups > 0)
        log_info("store: %d group(s) had members when the previous run ended; marked gone", groups);
    rc = store_load_topics(s->store, load_topic, s);
    if (rc == 0)
        rc = store_load_offsets(s->store, load_offset, s);
    if (rc == 0)
        rc = admin_requests_load(s);
    if (rc != 0) {
        log_error("store: loading failed: %s", store_errmsg(s->store));
        return rc;
    }
    for (size_t i = 0; i < s->cfg->ntopics; i++)
        if (!topics_get(&s->topics, s->cfg->topics[i].name) &&
            !broker_create_topic(s, s->cfg->topics[i].name, s->cfg->topics[i].queues))
            return RMQ_EIO;
    rc = store_commit(s->store);
    if (rc == 0 && s->cfg->sync_interval_ms > 0 &&
        (rc = store_lazy_sync(s->store, s->cfg->sync_interval_ms)) != 0)
        log_error("store: cannot start the sync thread: %s", store_errmsg(s->store));
    return rc;
}

/* Opens the trace and records every topic's route as the replay's starting point. */
static int setup_trace(struct broker *s)
{
    if (!s->cfg->record_path[0])
        return RMQ_OK;
    char err[256];
    int rc = trace_recorder_open(s->cfg->record_path, broker_now_ms(s), &s->trace, err, sizeof err);
    if (rc != 0) {
        log_error("cannot record to %s: %s", s->cfg->record_path, err);
        return rc;
    }
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&s->topics.map, &b); e;
         e = hashmap_next(&s->topics.map, e, &b))
        trace_record_route(s->trace, broker_now_ms(s), e->key, e->val);
    int64_t every = s->cfg->record_holdings_ms;
    if (every && (rc = loop_add_timer(s->loop, every, every, holdings_timer, s, NULL)) != 0)
        return rc;
    return loop_add_timer(s->loop, 1000, 1000, trace_timer, s, NULL);
}

static int setup_acl(struct broker *s)
{
    if (!s->cfg->acl_path[0]) {
        /* The token guards the admin codes over remoting as it guards HTTP. */
        int rc = s->cfg->admin_token[0] ? acl_new_admin_token(s->cfg->admin_token, &s->acl) : RMQ_OK;
        if (rc != 0)
            log_error("cannot set up the admin-token guard: %s", rmq_strerror(rc));
        return rc;
    }
    char err[256];
    int rc = acl_load(s->cfg->acl_path, &s->acl, err, sizeof err);
    if (rc != 0)
        log_error("cannot load --acl %s: %s", s->cfg->acl_path, err);
    else
        log_info("ACL on: %zu account(s)", acl_accounts(s->acl));
    return rc;
}

static int setup_http(struct broker *s)
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

/* Thousands of clients need more than the usual 1,024 descriptors; say at
 * start when --max-connections cannot be reached under the limit. */
static void raise_fd_limit(const struct config *cfg)
{
    long limit = proc_raise_fd_limit();
    /* Listeners, the store, the HTTP side and logs take a few dozen descriptors. */
    if (limit >= 0 && limit < cfg->max_connections + 64)
        log_warn("the open-file limit is %ld: accepting fails (and pauses) before --max-connections %lld",
                 limit, (long long)cfg->max_connections);
}

int server_init(struct broker *s, const struct config *cfg)
{
    raise_fd_limit(cfg);
    memset(s, 0, sizeof *s);
    int rc = broker_init_state(s, cfg);
    if (rc != 0)
        return rc;
    struct conn_set_options copt = {
        .max_frame = cfg->max_frame_bytes,
        .max_header = cfg->max_header_bytes,
        .max_buffered_output = cfg->max_buffered_output,
        .max_buffered_input = cfg->max_buffered_input,
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
        (rc = loop_add_timer(s->loop, 50, 50, pull_timer, s, &timer)) != 0 ||
        (rc = loop_add_timer(s->loop, NOTIFY_TIMER_IDLE_MS, NOTIFY_TIMER_IDLE_MS, notify_timer, s,
                             &s->notify_timer)) != 0)
        return rc;
    loop_set_before_sleep(s->loop, before_sleep, s);
    return RMQ_OK;
}

int server_run(struct broker *s)
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

void server_fini(struct broker *s)
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
    /* Every connection is closed now: whatever the store still has live
     * (a close whose batch was lost) ends here, not at the next start. */
    int gone = 0;
    if (s->store && s->loop && store_end_run(s->store, broker_now_ms(s), &gone) != 0)
        log_error("store: ending the run's members failed: %s", store_errmsg(s->store));
    if (gone > 0)
        log_info("store: %d group(s) still had stored members at stop; marked gone", gone);
    if (s->store && store_commit_due(s->store) && store_commit(s->store) != 0)
        log_error("store: final commit failed: %s", store_errmsg(s->store));
    reply_release_held(s, false);
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
    queue_locks_free(&s->locks);
    registry_free(&s->reg);
    topics_free(&s->topics);
    offsets_free(&s->offsets);
    admin_requests_free(s);
    loop_free(s->loop);
}
