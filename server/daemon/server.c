/* server.c — wires the modules together: the sockets of accept, signals,
 * timers, the HTTP side, and the loop hooks that run requests/turn.h's
 * turn (see server.h). Loop thread only, except server_init and
 * server_fini which run on the main thread before and after the loop. */
#include "server.h"

#include "acl.h"
#include "admin_dispatch.h"
#include "admin_group_requests.h"
#include "admin_holdings.h"
#include "broker_state.h"
#include "cluster.h"
#include "conn.h"
#include "err.h"
#include "http_admin.h"
#include "log.h"
#include "loop.h"
#include "mailbox.h"
#include "net.h"
#include "outbound.h"
#include "proc.h"
#include "pull_requests.h"
#include "send_requests.h"
#include "store.h"
#include "trace_recorder.h"
#include "turn.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- connections ---- */

/* Out of descriptors (or of kernel memory), accept fails again at once: the
 * listeners pause for ACCEPT_PAUSE_MS instead of spinning a core, and the
 * failure is logged once a second (counted in /metrics). */
#define ACCEPT_PAUSE_MS 100

static void resume_accepting(struct loop *l, int id, void *ctx)
{
    (void)id;
    struct daemon *d = ctx;
    assert(d->accept_paused);
    for (size_t i = 0; i < d->nlisten; i++)
        if (loop_mod_fd(l, d->listen_fds[i], LOOP_READ) != 0)
            log_error("cannot resume listening on %s", d->listen_addrs[i]);
    d->accept_paused = false;
}

static void pause_accepting(struct daemon *d, int err)
{
    struct broker *s = &d->b;
    s->stats.accept_failures++;
    log_limited(&d->accept_log, loop_now_ms(s->loop), LOG_WARN, "accept failed: %s; not accepting for %d ms",
                strerror(err), ACCEPT_PAUSE_MS);
    if (d->accept_paused)
        return;
    if (loop_add_timer(s->loop, ACCEPT_PAUSE_MS, 0, resume_accepting, d, NULL) != 0)
        return; /* no timer, no pause: better to retry than to stop accepting */
    for (size_t i = 0; i < d->nlisten; i++)
        (void)loop_mod_fd(s->loop, d->listen_fds[i], 0);
    d->accept_paused = true;
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    struct daemon *d = ctx;
    struct broker *s = &d->b;
    for (int i = 0; i < 64; i++) {
        char peer[64];
        int cfd = net_accept(fd, peer, sizeof peer);
        if (cfd == -EAGAIN)
            return;
        if (cfd == -EMFILE || cfd == -ENFILE || cfd == -ENOBUFS || cfd == -ENOMEM) {
            pause_accepting(d, -cfd);
            return;
        }
        if (cfd < 0) {
            /* A connection that died in the backlog (ECONNABORTED, ...): the next may be fine. */
            log_limited(&d->accept_log, loop_now_ms(l), LOG_WARN, "accept failed: %s", strerror(-cfd));
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
        uint64_t id = broker_next_conn_id(s);
        struct conn *c;
        if (conn_set_adopt(s->conns, cfd, id, peer, loop_now_ms(l), &c) != 0) {
            log_limited(&s->refuse_log, loop_now_ms(l), LOG_WARN,
                        "connection from %s refused: out of resources", peer);
            continue;
        }
        (void)broker_conn_opened(s, c); /* on failure c is closing: the next may be fine */
    }
}

/* ---- loop hooks ---- */

static void before_sleep(struct loop *l, void *ctx)
{
    (void)l;
    (void)broker_before_sleep(ctx, BROKER_COMMIT_WHEN_DUE); /* a failed commit is logged and counted */
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
    struct daemon *d = ctx;
    mailbox_drain(d->mailbox, admin_dispatch_handle, &d->b);
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    struct daemon *d = ctx;
    assert(fd == d->signal_fd);
    if (proc_read_stop_signals(fd, "")) {
        d->stopping = true;
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

static int open_listeners(struct daemon *d)
{
    struct broker *s = &d->b;
    const struct config *cfg = s->cfg;
    for (size_t i = 0; i < cfg->nlisten; i++) {
        int fd = net_listen(cfg->listen[i].host, cfg->listen[i].port);
        if (fd < 0) {
            log_error("cannot listen on %s:%u: %s", cfg->listen[i].host, cfg->listen[i].port, strerror(-fd));
            return fd;
        }
        assert(d->nlisten == i && i < CONFIG_MAX_LISTEN);
        d->listen_fds[d->nlisten++] = fd;
        uint16_t port = 0;
        char bound[300];
        if (net_local_addr(fd, bound, sizeof bound, &port) != 0)
            snprintf(bound, sizeof bound, "%s:%u", cfg->listen[i].host, cfg->listen[i].port);
        snprintf(d->listen_addrs[i], sizeof d->listen_addrs[i], "%s", bound);
        int rc = loop_add_fd(s->loop, fd, LOOP_READ, on_accept, d);
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

static int setup_signals(struct daemon *d)
{
    d->signal_fd = proc_stop_signal_fd();
    if (d->signal_fd < 0)
        return d->signal_fd;
    /* A file-size limit must fail the write (SQLite reports it), not kill the daemon. */
    signal(SIGXFSZ, SIG_IGN);
    return loop_add_fd(d->b.loop, d->signal_fd, LOOP_READ, on_signal, d);
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
        rc = admin_group_req_load(s);
    if (rc == 0)
        rc = send_load_queues(s);
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
    int rc = trace_recorder_open(s->cfg->record_path, broker_now_ms(s), s->cfg->record_max_bytes, &s->trace,
                                 err, sizeof err);
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

static int setup_http(struct daemon *d)
{
    struct broker *s = &d->b;
    int rc = mailbox_new(&d->mailbox);
    if (rc != 0)
        return rc;
    rc = loop_add_fd(s->loop, mailbox_fd(d->mailbox), LOOP_READ, on_mailbox, d);
    if (rc != 0 || !s->cfg->http_enabled)
        return rc;
    struct http_admin_options opt = {
        .host = s->cfg->http.host,
        .port = s->cfg->http.port,
        .store_path = s->cfg->store_path,
        .mailbox = d->mailbox,
        .admin_token = s->cfg->admin_token[0] ? s->cfg->admin_token : NULL,
    };
    char err[256];
    rc = http_admin_start(&opt, &d->http, err, sizeof err);
    if (rc != 0) {
        log_error("cannot start HTTP admin on %s:%u: %s", s->cfg->http.host, s->cfg->http.port, err);
        return rc;
    }
    s->http_port = http_admin_port(d->http);
    assert(s->http_port != 0); /* broker registration reads 0 as "HTTP off" */
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

int server_init(struct daemon *d, const struct config *cfg)
{
    raise_fd_limit(cfg);
    memset(d, 0, sizeof *d);
    d->signal_fd = -1;
    struct broker *s = &d->b;
    int rc = broker_init_state(s, cfg);
    if (rc != 0)
        return rc;
    s->hooks = (struct broker_turn_hooks){
        .dispatch = cluster_dispatch,
        .conn_closed = cluster_conn_closed,
        .settle_round = cluster_before_sleep,
    };
    struct conn_set_options copt = {
        .max_frame = cfg->max_frame_bytes,
        .max_header = cfg->max_header_bytes,
        .max_buffered_output = cfg->max_buffered_output,
        .max_buffered_input = cfg->max_buffered_input,
        .max_output = cfg->max_pending_output,
        .on_frame = broker_on_frame,
        .on_close = broker_on_close,
        .ctx = s,
    };
    if ((rc = conn_set_new(s->loop, &copt, &s->conns)) != 0 || (rc = setup_store(s)) != 0 ||
        (rc = setup_trace(s)) != 0 || (rc = setup_acl(s)) != 0 || (rc = setup_signals(d)) != 0 ||
        (rc = open_listeners(d)) != 0 || (rc = setup_http(d)) != 0 || (rc = cluster_start(s)) != 0)
        return rc;
    int timer;
    int64_t scan = cfg->expiry_scan_ms;
    if ((rc = loop_add_timer(s->loop, scan, scan, expiry_timer, s, &timer)) != 0 ||
        (rc = loop_add_timer(s->loop, 50, 50, pull_timer, s, &timer)) != 0 ||
        (rc = loop_add_timer(s->loop, NOTIFY_TIMER_IDLE_MS, NOTIFY_TIMER_IDLE_MS, notify_timer, s,
                             &s->notify_timer)) != 0)
        return rc;
    assert(s->notify_timer != 0); /* broker_before_sleep reads 0 as "no timer" */
    loop_set_before_sleep(s->loop, before_sleep, s);
    return RMQ_OK;
}

int server_run(struct daemon *d)
{
    struct broker *s = &d->b;
    assert(d->nlisten > 0 && s->conns && s->store);
    printf("READY remoting=");
    for (size_t i = 0; i < d->nlisten; i++)
        printf("%s%s", i ? "," : "", d->listen_addrs[i]);
    if (d->http)
        printf(" http=%s:%u\n", s->cfg->http.host, s->http_port);
    else
        printf(" http=off\n");
    fflush(stdout);
    log_info("rmqcoord serving: remoting %s, advertised broker address %s, store %s", d->listen_addrs[0],
             s->advertise, s->cfg->store_path);
    return loop_run(s->loop);
}

void server_fini(struct daemon *d)
{
    struct broker *s = &d->b;
    /* Answer every deferred admin request, then stop the HTTP thread: it
     * must not post into a loop being torn down. */
    if (s->loop) {
        admin_holdings_abort_all(s);
        outbound_free_all(s);
    }
    http_admin_stop(d->http);
    d->http = NULL;
    s->http_port = 0;
    cluster_stop(s); /* a broker unregisters from its name servers here */
    broker_close_conns(s);
    /* Every connection is closed now: whatever the store still has live
     * (a close whose batch was lost) ends here, not at the next start. */
    int gone = 0;
    if (s->store && s->loop && store_end_run(s->store, broker_now_ms(s), &gone) != 0)
        log_error("store: ending the run's members failed: %s", store_errmsg(s->store));
    if (gone > 0)
        log_info("store: %d group(s) still had stored members at stop; marked gone", gone);
    mailbox_free(d->mailbox);
    d->mailbox = NULL;
    for (size_t i = 0; i < d->nlisten; i++)
        close(d->listen_fds[i]);
    d->nlisten = 0;
    if (d->signal_fd >= 0)
        close(d->signal_fd);
    d->signal_fd = -1;
    (void)broker_fini_state(s); /* a failed final commit is logged there */
}
