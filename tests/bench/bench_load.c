/* bench_load.c — load generator for rmqcoord (and for bench_echo, its
 * ceiling): many loopback connections, each with a window of outstanding
 * requests, one epoll thread, bounded by time and by request count.
 *
 * Modes (what each connection sends):
 *   hb      HEART_BEAT with -g ConsumerData (groups PREFIX0..PREFIX{g-1}),
 *           one clientID per connection; with -s S, connection i names
 *           the groups PREFIX{(i%S)*g}.. instead (S disjoint sets)
 *   route   GET_ROUTEINFO_BY_TOPIC, cycling over topics T0..T{t-1}
 *   list    GET_CONSUMER_LIST_BY_GROUP for group -q
 *   hold    phase 1: connect and send a heartbeat with no groups; phase 2
 *           (after a line on stdin): heartbeat with -g groups; then waits for
 *           stdin EOF. For RSS measurement.
 *   notify  -m members join group -q; then -r times one more connection
 *           joins and the time until every member has its NOTIFY is taken.
 * Open loop (-R RATE, hb|route|list): instead of a window, request k (k =
 * 0, 1, ...) is sent at start + k/RATE on connection k % conns, from a
 * timerfd tick (<= 1 ms), whether or not replies came back; bounded by -d
 * and -n. Latency is taken from the scheduled send time (so a generator
 * that falls behind does not hide queueing); at most MAX_WINDOW requests
 * may be outstanding per connection, a send beyond that is skipped and
 * counted (skipped=).
 * Requests are pre-encoded with the project's codec (rmq_frame_encode).
 * Responses are matched to requests in order per connection (both the
 * daemon and bench_echo answer in order), so the generator never parses a
 * whole header: it reads the length prefix and the "flag" field. Frames
 * without the response bit (NOTIFY) are counted apart.
 * Prints one machine-readable line, "RESULT key=value ...", on stdout.
 * Errors follow the house convention (0 or negative codes); a failed
 * syscall is reported with its errno and ends the run with status 1.
 */
#include "buf.h"
#include "err.h"
#include "mem.h"
#include "remoting_cmd.h"
#include "remoting_frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 20000
#define MAX_WINDOW 256
#define SAMPLE_CAP (4u * 1024u * 1024u)
#define READ_CHUNK 65536
#define DRAIN_S 3.0 /* longest wait for outstanding replies after the deadline */

enum mode { M_HB, M_ROUTE, M_LIST, M_HOLD, M_NOTIFY };

struct opts {
    enum mode mode;
    const char *host;
    uint16_t port;
    int conns, window, groups, topics, members, repeats, span;
    double duration, warmup, setup_timeout;
    double rate;  /* > 0: open loop, total requests per second */
    double pause; /* > 0: closed loop, a connection sends at most once per pause seconds */
    long max_requests;
    const char *group_prefix, *list_group, *id_prefix;
};

struct lconn {
    int fd;
    struct buf in, out;
    const struct buf *req;   /* borrowed template of this connection (hb, list) */
    double sent[MAX_WINDOW]; /* send times of outstanding requests, FIFO ring */
    int head, outstanding;
    unsigned next_topic;
    bool write_armed, notified;
    double notify_ts;
    double next_send_at; /* with -P: not before this time */
};

struct stats {
    uint32_t *samples; /* latency in units of 100 ns */
    size_t nsamples;
    uint64_t seen, completed, notifies, resp_bytes, resp_count;
    uint64_t rng;
};

static struct opts g_opt;
static struct lconn *g_conns;
static int g_nconns, g_epfd = -1;
static struct stats g_st;
static bool g_sending = true;
static double g_measure_from, g_measure_to;
static struct buf *g_route_reqs; /* one pre-encoded request per topic */
/* open loop */
static int g_tfd = -1;
static char g_timer_tag; /* epoll data.ptr of the timerfd */
static double g_ol_start;
static uint64_t g_ol_next, g_ol_sent_in, g_ol_skipped;
static double g_ol_max_lag;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail_errno(const char *what)
{
    int e = errno;
    fprintf(stderr, "bench_load: %s: %s\n", what, strerror(e));
    return -e;
}

static uint64_t rng_next(void)
{
    g_st.rng ^= g_st.rng << 13;
    g_st.rng ^= g_st.rng >> 7;
    g_st.rng ^= g_st.rng << 17;
    return g_st.rng;
}

/* Keeps a uniform sample of at most SAMPLE_CAP latencies (reservoir). */
static void record_latency(double secs)
{
    double units = secs * 1e7;
    uint32_t v = units > 4e9 ? 4000000000u : (uint32_t)units;
    g_st.seen++;
    if (g_st.nsamples < SAMPLE_CAP) {
        g_st.samples[g_st.nsamples++] = v;
        return;
    }
    uint64_t j = rng_next() % g_st.seen;
    if (j < SAMPLE_CAP)
        g_st.samples[j] = v;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Latency percentile q (0..1) in microseconds from the sorted sample. */
static double pct_us(const uint32_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return (double)v[i] / 10.0;
}

/* ---- request templates ---- */

static int encode_request(int32_t code, const char *k, const char *v, const char *body, size_t body_len,
                          struct buf *out)
{
    struct rmq_cmd cmd;
    rmq_cmd_init_request(&cmd, code, 1, 0);
    cmd.language = RMQ_LANG_JAVA;
    cmd.version = 409;
    int rc = k ? rmq_cmd_ext_set(&cmd, k, v) : 0;
    if (rc == 0 && body)
        rc = rmq_cmd_set_body_copy(&cmd, body, body_len);
    buf_init(out, 0);
    if (rc == 0)
        rc = rmq_frame_encode(&cmd, out);
    rmq_cmd_clear(&cmd);
    return rc;
}

/* A HeartbeatData body naming ngroups groups PREFIX{first}.., each subscribed to "T". */
static int heartbeat_frame(const char *client_id, const char *prefix, int first, int ngroups, struct buf *out)
{
    struct buf body;
    buf_init(&body, 0);
    int rc = buf_appendf(&body, "{\"clientID\":\"%s\",\"consumerDataSet\":[", client_id);
    for (int i = 0; rc == 0 && i < ngroups; i++)
        rc = buf_appendf(
            &body,
            "%s{\"groupName\":\"%s%d\",\"consumeType\":\"CONSUME_PASSIVELY\","
            "\"messageModel\":\"CLUSTERING\",\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\","
            "\"subscriptionDataSet\":[{\"topic\":\"T\",\"subString\":\"*\",\"subVersion\":1,"
            "\"tagsSet\":[],\"codeSet\":[],\"classFilterMode\":false,\"expressionType\":\"TAG\"}],"
            "\"unitMode\":false}",
            i ? "," : "", prefix, first + i);
    if (rc == 0)
        rc = buf_append_str(&body, "],\"producerDataSet\":[]}");
    if (rc == 0)
        rc = encode_request(34, NULL, NULL, (const char *)buf_head(&body), buf_live(&body), out);
    buf_free(&body);
    return rc;
}

/* ---- connections ---- */

static int set_events(struct lconn *c, bool want_write)
{
    struct epoll_event ev = {.events = EPOLLIN | (want_write ? EPOLLOUT : 0u), .data.ptr = c};
    if (epoll_ctl(g_epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        return fail_errno("epoll_ctl");
    c->write_armed = want_write;
    return 0;
}

/* Writes what is queued; arms EPOLLOUT only when the socket is full. */
static int flush_out(struct lconn *c)
{
    while (buf_live(&c->out) > 0) {
        ssize_t n = write(c->fd, buf_head(&c->out), buf_live(&c->out));
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return c->write_armed ? 0 : set_events(c, true);
        return fail_errno("write");
    }
    return c->write_armed ? set_events(c, false) : 0;
}

static const struct buf *next_request(struct lconn *c)
{
    if (g_opt.mode == M_ROUTE)
        return &g_route_reqs[c->next_topic++ % (unsigned)g_opt.topics];
    return c->req;
}

/* Queues requests until the window is full (while sending is on). */
static int fill_window(struct lconn *c, double now)
{
    while (g_sending && c->outstanding < g_opt.window && !(g_opt.pause > 0 && now < c->next_send_at)) {
        if (g_opt.max_requests > 0 &&
            (long)(g_st.completed + (uint64_t)c->outstanding) >= g_opt.max_requests) {
            g_sending = false;
            break;
        }
        const struct buf *r = next_request(c);
        int rc = buf_append(&c->out, buf_head(r), buf_live(r));
        if (rc != 0)
            return rc;
        c->sent[(c->head + c->outstanding) % MAX_WINDOW] = now;
        c->outstanding++;
        c->next_send_at = now + g_opt.pause;
    }
    return 0;
}

/* Reads the "flag" number of a JSON header; -1 when absent. */
static long header_flag(const uint8_t *h, size_t len)
{
    static const char key[] = "\"flag\":";
    for (size_t i = 0; i + sizeof key - 1 < len; i++) {
        if (memcmp(h + i, key, sizeof key - 1) == 0) {
            long v = 0;
            for (size_t j = i + sizeof key - 1; j < len && h[j] >= '0' && h[j] <= '9'; j++)
                v = v * 10 + (h[j] - '0');
            return v;
        }
    }
    return -1;
}

static void on_frame(struct lconn *c, const uint8_t *f, size_t total, double now)
{
    uint32_t hw = (uint32_t)f[4] << 24 | (uint32_t)f[5] << 16 | (uint32_t)f[6] << 8 | f[7];
    size_t hl = hw & 0xFFFFFFu;
    long flag = hl + 8 <= total ? header_flag(f + 8, hl) : -1;
    if (flag < 0 || !(flag & RMQ_FLAG_RESPONSE)) {
        g_st.notifies++;
        if (!c->notified) {
            c->notified = true;
            c->notify_ts = now;
        }
        return;
    }
    if (c->outstanding == 0)
        return; /* unsolicited response: ignore */
    double sent = c->sent[c->head];
    c->head = (c->head + 1) % MAX_WINDOW;
    c->outstanding--;
    /* Throughput counts replies inside the window; latency only requests sent inside it. */
    if (now >= g_measure_from && now <= g_measure_to) {
        g_st.completed++;
        g_st.resp_bytes += total;
        g_st.resp_count++;
        if (sent >= g_measure_from)
            record_latency(now - sent);
    }
}

/* Reads everything available, handles complete frames, refills the window. */
static int on_readable(struct lconn *c)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        uint8_t *p = buf_reserve(&c->in, READ_CHUNK);
        if (!p)
            return RMQ_ENOMEM;
        ssize_t n = read(c->fd, p, READ_CHUNK);
        if (n == 0) {
            fprintf(stderr, "bench_load: server closed a connection\n");
            return RMQ_EIO;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0)
            return fail_errno("read");
        buf_commit(&c->in, (size_t)n);
        double now = now_s();
        while (buf_live(&c->in) >= 8) {
            const uint8_t *h = buf_head(&c->in);
            size_t total = ((size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3]) + 4;
            if (buf_live(&c->in) < total)
                break;
            on_frame(c, h, total, now);
            buf_consume(&c->in, total);
        }
        if ((size_t)n < READ_CHUNK)
            break;
    }
    int rc = g_opt.rate > 0 ? 0 : fill_window(c, now_s());
    return rc ? rc : flush_out(c);
}

/* Open loop: queues every request whose scheduled time has come. */
static int open_loop_tick(void)
{
    double now = now_s();
    uint64_t drained;
    if (g_tfd >= 0 && read(g_tfd, &drained, sizeof drained) < 0 && errno != EAGAIN)
        return fail_errno("read timerfd");
    if (!g_sending)
        return 0;
    int nc = g_nconns;
    int rc = 0;
    for (int guard = 0; guard < 1000000; guard++) {
        double at = g_ol_start + (double)g_ol_next / g_opt.rate;
        if (at > now)
            break;
        if (at >= g_measure_to || (g_opt.max_requests > 0 && (long)g_ol_next >= g_opt.max_requests)) {
            g_sending = false;
            break;
        }
        struct lconn *c = &g_conns[g_ol_next % (uint64_t)nc];
        g_ol_next++;
        if (at >= g_measure_from)
            g_ol_sent_in++;
        if (now - at > g_ol_max_lag)
            g_ol_max_lag = now - at;
        if (c->outstanding >= MAX_WINDOW) {
            g_ol_skipped++;
            continue;
        }
        const struct buf *r = next_request(c);
        if ((rc = buf_append(&c->out, buf_head(r), buf_live(r))) != 0)
            return rc;
        c->sent[(c->head + c->outstanding) % MAX_WINDOW] = at;
        c->outstanding++;
        if ((rc = flush_out(c)) != 0)
            return rc;
    }
    return 0;
}

static int connect_one(struct lconn *c)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(g_opt.port)};
    if (inet_pton(AF_INET, g_opt.host, &sa.sin_addr) != 1) {
        fprintf(stderr, "bench_load: bad host %s (IPv4 loopback expected)\n", g_opt.host);
        return RMQ_EINVAL;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail_errno("socket");
    for (int tries = 0;; tries++) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            break;
        if (errno == EINTR && tries < 100)
            continue;
        int rc = fail_errno("connect");
        close(fd);
        return rc;
    }
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        int rc = fail_errno("setsockopt/fcntl");
        close(fd);
        return rc;
    }
    memset(c, 0, sizeof *c);
    c->fd = fd;
    buf_init(&c->in, 0);
    buf_init(&c->out, 0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(g_epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        int rc = fail_errno("epoll_ctl add");
        close(fd);
        return rc;
    }
    return 0;
}

static void close_one(struct lconn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    buf_free(&c->in);
    buf_free(&c->out);
}

/* Runs the event loop until `until` or until done() says so. */
static int run_loop(double until, bool (*done)(void))
{
    struct epoll_event evs[512];
    while (now_s() < until && !(done && done())) {
        int ms = (int)((until - now_s()) * 1000.0) + 1;
        int cap = g_opt.pause > 0 ? (int)(g_opt.pause * 1000.0) + 1 : 100; /* wake for paced sends */
        int n = epoll_wait(g_epfd, evs, 512, ms > cap ? cap : ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail_errno("epoll_wait");
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &g_timer_tag) {
                int rc = open_loop_tick();
                if (rc != 0)
                    return rc;
                continue;
            }
            struct lconn *c = evs[i].data.ptr;
            int rc = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                rc = on_readable(c);
            if (rc == 0 && (evs[i].events & EPOLLOUT))
                rc = flush_out(c);
            if (rc != 0)
                return rc;
        }
        if (g_opt.pause > 0 && g_opt.rate <= 0) {
            double now = now_s();
            for (int i = 0; i < g_nconns; i++) {
                struct lconn *c = &g_conns[i];
                if (c->fd < 0 || c->outstanding >= g_opt.window || now < c->next_send_at)
                    continue;
                int rc = fill_window(c, now);
                if (rc == 0)
                    rc = flush_out(c);
                if (rc != 0)
                    return rc;
            }
        }
    }
    return 0;
}

static bool all_idle(void)
{
    for (int i = 0; i < g_nconns; i++)
        if (g_conns[i].outstanding > 0 || buf_live(&g_conns[i].out) > 0)
            return false;
    return true;
}

/* Waits until no frame has arrived for quiet_s (at most max_s). */
static int wait_quiet(double quiet_s, double max_s)
{
    double end = now_s() + max_s;
    while (now_s() < end) {
        uint64_t before = g_st.notifies + g_st.seen;
        int rc = run_loop(now_s() + quiet_s, NULL);
        if (rc != 0)
            return rc;
        if (g_st.notifies + g_st.seen == before && all_idle())
            return 0;
    }
    return 0;
}

static int open_conns(int n)
{
    for (int i = 0; i < n; i++) {
        int rc = connect_one(&g_conns[i]);
        if (rc != 0)
            return rc;
        g_nconns = i + 1;
    }
    return 0;
}

/* Sends one request on each connection (template per connection) and waits for all replies. */
static int one_round(double max_s)
{
    bool keep = g_sending;
    int w = g_opt.window;
    g_sending = true;
    g_opt.window = 1;
    double now = now_s();
    for (int i = 0; i < g_nconns; i++) {
        int rc = fill_window(&g_conns[i], now);
        if (rc == 0)
            rc = flush_out(&g_conns[i]);
        if (rc != 0)
            return rc;
    }
    g_sending = false;
    int rc = run_loop(now + max_s, all_idle);
    g_sending = keep;
    g_opt.window = w;
    if (rc == 0 && !all_idle()) {
        fprintf(stderr, "bench_load: replies missing after %.0f s\n", max_s);
        return RMQ_EIO;
    }
    return rc;
}

static void print_latency(const char *prefix)
{
    qsort(g_st.samples, g_st.nsamples, sizeof *g_st.samples, cmp_u32);
    printf(" %sp50_us=%.1f %sp99_us=%.1f %sp999_us=%.1f %smax_us=%.1f", prefix,
           pct_us(g_st.samples, g_st.nsamples, 0.5), prefix, pct_us(g_st.samples, g_st.nsamples, 0.99),
           prefix, pct_us(g_st.samples, g_st.nsamples, 0.999), prefix,
           g_st.nsamples ? (double)g_st.samples[g_st.nsamples - 1] / 10.0 : 0.0);
}

/* ---- modes ---- */

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

static int run_closed_loop(void)
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
        rc = run_loop(g_measure_to, NULL);
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
    double secs = g_opt.duration;
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

static int run_hold(void)
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

static int run_notify(void)
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

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_load hb|route|list|hold|notify [-c conns] [-w window] [-d secs] [-W warmup]\n"
            "       [-n max_requests] [-g groups] [-G group_prefix] [-t topics] [-q group] [-m members]\n"
            "       [-r repeats] [-i id_prefix] [-T setup_timeout] [-s group_sets] [-R rate] [-P usec] "
            "HOST:PORT\n"
            "  -R rate  open loop (hb|route|list): rate requests/s in total, round-robin over the\n"
            "           connections on a timer regardless of replies (-w is then ignored)\n"
            "  -P usec  closed loop, paced: a connection sends at most once per usec microseconds\n");
}

static int parse_args(int argc, char **argv)
{
    g_opt = (struct opts){.conns = 16,
                          .window = 1,
                          .groups = 10,
                          .topics = 100,
                          .members = 1000,
                          .repeats = 100,
                          .duration = 5,
                          .warmup = 1,
                          .setup_timeout = 60,
                          .span = 1,
                          .group_prefix = "G",
                          .list_group = "G0",
                          .id_prefix = "b"};
    if (argc < 3)
        return RMQ_EINVAL;
    const char *m = argv[1];
    g_opt.mode = !strcmp(m, "hb")       ? M_HB
                 : !strcmp(m, "route")  ? M_ROUTE
                 : !strcmp(m, "list")   ? M_LIST
                 : !strcmp(m, "hold")   ? M_HOLD
                 : !strcmp(m, "notify") ? M_NOTIFY
                                        : (enum mode) - 1;
    if ((int)g_opt.mode < 0)
        return RMQ_EINVAL;
    int i = 2;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        const char *v = argv[i + 1];
        switch (argv[i][1]) {
        case 'c': g_opt.conns = atoi(v); break;
        case 'w': g_opt.window = atoi(v); break;
        case 'd': g_opt.duration = atof(v); break;
        case 'W': g_opt.warmup = atof(v); break;
        case 'n': g_opt.max_requests = atol(v); break;
        case 'g': g_opt.groups = atoi(v); break;
        case 'G': g_opt.group_prefix = v; break;
        case 't': g_opt.topics = atoi(v); break;
        case 'q': g_opt.list_group = v; break;
        case 'm': g_opt.members = atoi(v); break;
        case 'r': g_opt.repeats = atoi(v); break;
        case 'i': g_opt.id_prefix = v; break;
        case 'T': g_opt.setup_timeout = atof(v); break;
        case 's': g_opt.span = atoi(v); break;
        case 'R': g_opt.rate = atof(v); break;
        case 'P': g_opt.pause = atof(v) / 1e6; break;
        default: return RMQ_EINVAL;
        }
    }
    if (i != argc - 1)
        return RMQ_EINVAL;
    static char host[64];
    const char *colon = strrchr(argv[i], ':');
    if (!colon || (size_t)(colon - argv[i]) >= sizeof host)
        return RMQ_EINVAL;
    memcpy(host, argv[i], (size_t)(colon - argv[i]));
    host[colon - argv[i]] = 0;
    g_opt.host = host;
    g_opt.port = (uint16_t)atoi(colon + 1);
    if (g_opt.conns < 1 || g_opt.conns >= MAX_CONNS || g_opt.members < 1 || g_opt.members >= MAX_CONNS ||
        g_opt.window < 1 || g_opt.window > MAX_WINDOW || g_opt.topics < 1 || g_opt.duration <= 0 ||
        g_opt.duration > 600 || g_opt.groups < 0 || g_opt.repeats < 1 || g_opt.span < 1 || g_opt.rate < 0 ||
        g_opt.pause < 0 || g_opt.pause > 10 || g_opt.rate > 1e7 ||
        (g_opt.rate > 0 && (g_opt.mode == M_HOLD || g_opt.mode == M_NOTIFY)))
        return RMQ_EINVAL;
    return 0;
}

int main(int argc, char **argv)
{
    if (parse_args(argc, argv) != 0) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            fail_errno("setrlimit");
    }
    g_st.rng = 0x9E3779B97F4A7C15ull;
    g_st.samples = rmq_malloc(SAMPLE_CAP * sizeof *g_st.samples);
    g_conns = rmq_calloc(MAX_CONNS, sizeof *g_conns);
    g_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!g_st.samples || !g_conns || g_epfd < 0) {
        fprintf(stderr, "bench_load: setup failed\n");
        return 1;
    }
    int rc;
    switch (g_opt.mode) {
    case M_HOLD: rc = run_hold(); break;
    case M_NOTIFY: rc = run_notify(); break;
    default: rc = run_closed_loop(); break;
    }
    for (int i = 0; i < g_nconns; i++)
        close_one(&g_conns[i]);
    close(g_epfd);
    if (g_route_reqs) {
        for (int i = 0; i < g_opt.topics; i++)
            buf_free(&g_route_reqs[i]);
        rmq_free(g_route_reqs);
    }
    rmq_free(g_conns);
    rmq_free(g_st.samples);
    if (rc != 0)
        fprintf(stderr, "bench_load: failed: %s\n", rmq_strerror(rc));
    return rc == 0 ? 0 : 1;
}
