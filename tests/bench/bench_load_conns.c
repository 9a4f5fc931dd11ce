/* bench_load_conns.c — bench_load's connections and its one epoll loop:
 * windows of outstanding requests (closed loop) or sends on a timer tick
 * (open loop), replies matched to requests in order per connection by the
 * length prefix and the header's "flag" alone, NOTIFY frames counted apart.
 * One thread.
 */
#include "bench_load_internal.h"
#include "err.h"
#include "remoting_cmd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static int set_events(struct lconn *c, bool want_write)
{
    struct epoll_event ev = {.events = EPOLLIN | (want_write ? EPOLLOUT : 0u), .data.ptr = c};
    if (epoll_ctl(g_epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        return fail_errno("epoll_ctl");
    c->write_armed = want_write;
    return 0;
}

/* Writes what is queued; arms EPOLLOUT only when the socket is full. */
int flush_out(struct lconn *c)
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
    c->flip = !c->flip;
    return c->req_alt && c->flip ? c->req_alt : c->req;
}

/* Queues requests until the window is full (while sending is on). */
int fill_window(struct lconn *c, double now)
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
        c->last_notify_ts = now;
        if (!c->notified) {
            c->notified = true;
            c->notify_ts = now;
        }
        return;
    }
    c->last_reply_ts = now;
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
int open_loop_tick(void)
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

int connect_one(struct lconn *c)
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

void close_one(struct lconn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    buf_free(&c->in);
    buf_free(&c->out);
}

/* Runs the event loop until `until` or until done() says so. */
int run_loop(double until, bool (*done)(void))
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

bool all_idle(void)
{
    for (int i = 0; i < g_nconns; i++)
        if (g_conns[i].outstanding > 0 || buf_live(&g_conns[i].out) > 0)
            return false;
    return true;
}

/* Waits until no frame has arrived for quiet_s (at most max_s). */
int wait_quiet(double quiet_s, double max_s)
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

int open_conns(int n)
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
int one_round(double max_s)
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
