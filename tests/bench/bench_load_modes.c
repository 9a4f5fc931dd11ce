/* bench_load_modes.c — bench_load's modes (see bench_load.c): the closed
 * and open loops of hb, route and list, hold (two phases driven from
 * stdin, for RSS measurement) and notify (time until every member has its
 * NOTIFY). Each prints its RESULT line. One thread.
 */
#include "bench_load_internal.h"
#include "err.h"
#include "mem.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* hb -a: the second template of each connection (owned here, freed at exit). */
static struct buf *g_alt;

static int build_alt_templates(void)
{
    g_alt = rmq_calloc((size_t)g_opt.conns, sizeof *g_alt);
    if (!g_alt)
        return RMQ_ENOMEM;
    for (int i = 0; i < g_opt.conns; i++) {
        char cid[96];
        snprintf(cid, sizeof cid, "127.0.0.1@%s-%d", g_opt.id_prefix, i);
        int rc = heartbeat_frame_padded(cid, g_opt.group_prefix, (i % g_opt.span) * g_opt.groups,
                                        g_opt.groups, 1, &g_alt[i]);
        if (rc != 0)
            return rc;
        g_conns[i].req_alt = &g_alt[i];
    }
    return 0;
}

static int build_templates(struct buf **per_conn_out)
{
    struct buf *t = rmq_calloc((size_t)g_opt.conns, sizeof *t);
    if (!t)
        return RMQ_ENOMEM;
    *per_conn_out = t;
    for (int i = 0; i < g_opt.conns; i++) {
        char cid[96];
        snprintf(cid, sizeof cid, "127.0.0.1@%s-%d", g_opt.id_prefix, i);
        int rc;
        if (g_opt.mode == M_LIST)
            rc = encode_request(38, "consumerGroup", g_opt.list_group, NULL, 0, &t[i]);
        else if (g_opt.mode == M_NOTIFY)
            rc = heartbeat_frame(cid, g_opt.list_group, 0, 1, &t[i]);
        else
            rc = heartbeat_frame(cid, g_opt.group_prefix, (i % g_opt.span) * g_opt.groups,
                                 g_opt.mode == M_HOLD ? 0 : g_opt.groups, &t[i]);
        if (rc != 0)
            return rc;
        g_conns[i].req = &t[i];
    }
    return 0;
}

/* -n: every request sent and answered. */
static bool max_requests_done(void)
{
    return g_opt.max_requests > 0 && !g_sending && all_idle();
}

int run_closed_loop(void)
{
    if (g_opt.mode == M_ROUTE) {
        g_route_reqs = rmq_calloc((size_t)g_opt.topics, sizeof *g_route_reqs);
        if (!g_route_reqs)
            return RMQ_ENOMEM;
        for (int i = 0; i < g_opt.topics; i++) {
            char topic[32];
            snprintf(topic, sizeof topic, "T%d", i);
            int rc = encode_request(105, "topic", topic, NULL, 0, &g_route_reqs[i]);
            if (rc != 0)
                return rc;
        }
    }
    int rc = open_conns(g_opt.conns);
    struct buf *tmpl = NULL;
    if (rc == 0 && g_opt.mode != M_ROUTE)
        rc = build_templates(&tmpl);
    if (rc == 0 && g_opt.mode == M_HB) {
        /* Join every group first so the measured phase is re-heartbeats only. */
        g_measure_from = g_measure_to = 0;
        rc = one_round(g_opt.setup_timeout);
        if (rc == 0 && g_opt.alternate)
            rc = build_alt_templates();
        if (rc == 0)
            rc = wait_quiet(0.2, 5.0);
        if (rc == 0)
            printf("# joined %d connections x %d groups\n", g_nconns, g_opt.groups);
        fflush(stdout);
    }
    if (rc != 0)
        return rc;
    double start = now_s();
    g_measure_from = start + g_opt.warmup;
    g_measure_to = g_measure_from + g_opt.duration;
    g_st.completed = g_st.seen = g_st.nsamples = g_st.resp_bytes = g_st.resp_count = 0;
    if (g_opt.rate > 0) {
        /* Tick at the request interval, clamped to [50 us, 1 ms]. */
        double tick = 1.0 / g_opt.rate;
        tick = tick < 50e-6 ? 50e-6 : tick > 1e-3 ? 1e-3 : tick;
        long ns = (long)(tick * 1e9);
        g_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct itimerspec its = {.it_interval = {0, ns}, .it_value = {0, ns}};
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &g_timer_tag};
        if (g_tfd < 0 || timerfd_settime(g_tfd, 0, &its, NULL) != 0 ||
            epoll_ctl(g_epfd, EPOLL_CTL_ADD, g_tfd, &ev) != 0)
            return fail_errno("timerfd");
        g_ol_start = start;
        g_ol_next = g_ol_sent_in = g_ol_skipped = 0;
        g_ol_max_lag = 0;
        rc = open_loop_tick();
    } else {
        for (int i = 0; i < g_nconns && rc == 0; i++) {
            rc = fill_window(&g_conns[i], start);
            if (rc == 0)
                rc = flush_out(&g_conns[i]);
        }
    }
    if (rc == 0)
        rc = run_loop(g_measure_to, max_requests_done);
    double secs = g_opt.duration;
    if (max_requests_done()) /* -n reached before -d: the rate is over the time it took */
        secs = now_s() - g_measure_from > 0 ? now_s() - g_measure_from : now_s() - start;
    g_sending = false;
    if (g_tfd >= 0) {
        (void)epoll_ctl(g_epfd, EPOLL_CTL_DEL, g_tfd, NULL);
        close(g_tfd);
        g_tfd = -1;
    }
    if (rc == 0)
        rc = run_loop(now_s() + DRAIN_S, all_idle);
    if (rc != 0)
        return rc;
    printf(
        "RESULT mode=%s conns=%d window=%d requests=%llu secs=%.2f rate=%.0f resp_bytes=%.0f notifies=%llu",
        g_opt.mode == M_HB      ? "hb"
        : g_opt.mode == M_ROUTE ? "route"
                                : "list",
        g_nconns, g_opt.window, (unsigned long long)g_st.completed, secs, (double)g_st.completed / secs,
        g_st.resp_count ? (double)g_st.resp_bytes / (double)g_st.resp_count : 0.0,
        (unsigned long long)g_st.notifies);
    print_latency("");
    if (g_opt.rate > 0)
        printf(" open_loop=1 target_rate=%.0f offered=%.0f skipped=%llu max_lag_us=%.1f", g_opt.rate,
               (double)g_ol_sent_in / secs, (unsigned long long)g_ol_skipped, g_ol_max_lag * 1e6);
    printf("\n");
    for (int i = 0; tmpl && i < g_opt.conns; i++)
        buf_free(&tmpl[i]);
    rmq_free(tmpl);
    for (int i = 0; g_alt && i < g_opt.conns; i++)
        buf_free(&g_alt[i]);
    rmq_free(g_alt);
    g_alt = NULL;
    return 0;
}

static int wait_stdin_line(double max_s)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    int n = poll(&p, 1, (int)(max_s * 1000));
    if (n < 0)
        return fail_errno("poll stdin");
    char line[64];
    if (n > 0 && !fgets(line, sizeof line, stdin))
        return 0; /* EOF */
    return 0;
}

int run_hold(void)
{
    struct buf *tmpl = NULL;
    int rc = open_conns(g_opt.conns);
    if (rc == 0)
        rc = build_templates(&tmpl);
    g_measure_from = 0, g_measure_to = 1e18;
    if (rc == 0)
        rc = one_round(60.0);
    if (rc == 0)
        rc = wait_quiet(0.3, 10.0);
    if (rc != 0)
        return rc;
    printf("PHASE1 conns=%d\n", g_nconns);
    fflush(stdout);
    if ((rc = wait_stdin_line(g_opt.duration)) != 0)
        return rc;
    for (int i = 0; i < g_opt.conns; i++) {
        char cid[96];
        snprintf(cid, sizeof cid, "127.0.0.1@%s-%d", g_opt.id_prefix, i);
        buf_free(&tmpl[i]);
        if ((rc = heartbeat_frame(cid, g_opt.group_prefix, (i % g_opt.span) * g_opt.groups, g_opt.groups,
                                  &tmpl[i])) != 0)
            return rc;
    }
    double t0 = now_s();
    if ((rc = one_round(120.0)) != 0 || (rc = wait_quiet(0.5, 30.0)) != 0)
        return rc;
    printf("PHASE2 conns=%d groups=%d join_secs=%.2f notifies=%llu\n", g_nconns, g_opt.groups, now_s() - t0,
           (unsigned long long)g_st.notifies);
    fflush(stdout);
    rc = wait_stdin_line(g_opt.duration);
    for (int i = 0; i < g_opt.conns; i++)
        buf_free(&tmpl[i]);
    rmq_free(tmpl);
    return rc;
}

static bool all_notified(void)
{
    for (int i = 0; i < g_nconns; i++)
        if (!g_conns[i].notified)
            return false;
    return true;
}

/* One repeat: a new member joins; returns the time until the last member has its NOTIFY. */
static int notify_once(int joiner, double *secs)
{
    for (int i = 0; i < g_nconns; i++)
        g_conns[i].notified = false;
    int rc = connect_one(&g_conns[joiner]);
    if (rc != 0)
        return rc;
    char cid[96];
    snprintf(cid, sizeof cid, "127.0.0.1@%s-join", g_opt.id_prefix);
    struct buf req;
    if ((rc = heartbeat_frame(cid, g_opt.list_group, 0, 1, &req)) != 0)
        return rc;
    g_conns[joiner].req = &req;
    g_nconns = joiner + 1;
    g_sending = true;
    g_opt.window = 1;
    double t0 = now_s();
    rc = fill_window(&g_conns[joiner], t0);
    g_sending = false;
    if (rc == 0)
        rc = flush_out(&g_conns[joiner]);
    if (rc == 0)
        rc = run_loop(t0 + 2.0, all_notified);
    double last = 0;
    for (int i = 0; i < g_nconns; i++)
        last = g_conns[i].notify_ts > last ? g_conns[i].notify_ts : last;
    bool ok = all_notified();
    if (rc == 0)
        rc = run_loop(now_s() + 2.0, all_idle);
    g_conns[joiner].req = NULL;
    buf_free(&req);
    (void)epoll_ctl(g_epfd, EPOLL_CTL_DEL, g_conns[joiner].fd, NULL);
    close_one(&g_conns[joiner]);
    g_nconns = joiner;
    if (rc != 0)
        return rc;
    if (!ok) {
        fprintf(stderr, "bench_load: not every member got a NOTIFY within 2 s\n");
        return RMQ_EIO;
    }
    *secs = last - t0;
    /* The joiner's close notifies the others again: let that settle. */
    return wait_quiet(0.02, 2.0);
}

int run_notify(void)
{
    struct buf *tmpl = NULL;
    int m = g_opt.members;
    g_opt.conns = m;
    int rc = open_conns(m);
    if (rc == 0)
        rc = build_templates(&tmpl);
    g_measure_from = 0, g_measure_to = 1e18;
    if (rc == 0)
        rc = one_round(60.0);
    if (rc == 0)
        rc = wait_quiet(0.3, 10.0);
    if (rc == 0) {
        /* A script may snapshot the daemon's metrics here, before the repeats. */
        printf("# joined %d members\n", m);
        fflush(stdout);
    }
    g_st.nsamples = g_st.seen = 0;
    double deadline = now_s() + g_opt.duration;
    int done = 0;
    for (int r = 0; rc == 0 && r < g_opt.repeats && now_s() < deadline; r++, done++) {
        double secs = 0;
        rc = notify_once(m, &secs);
        if (rc == 0)
            record_latency(secs);
    }
    if (rc != 0)
        return rc;
    printf("RESULT mode=notify members=%d repeats=%d", m, done);
    print_latency("");
    printf("\n");
    for (int i = 0; i < m; i++)
        buf_free(&tmpl[i]);
    rmq_free(tmpl);
    return 0;
}
