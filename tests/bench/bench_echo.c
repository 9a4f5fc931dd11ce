/* bench_echo.c — the loopback ceiling for rmqcoord's benchmarks: a minimal
 * epoll server that reads the same RocketMQ frames and, without parsing
 * them, queues one fixed pre-encoded response per frame.
 *
 * It finds frame boundaries from the 4-byte length prefix only. The reply
 * size can be matched to what the daemon sends: frames shorter than
 * --small-below bytes (a route or consumer-list query) get a reply of
 * --small-reply-bytes, longer frames (a heartbeat) one of --reply-bytes.
 * With --fanout, the first frame on a connection (what a join is for the
 * daemon) makes it queue one fixed NOTIFY frame to every connection,
 * coalesced to one per loop iteration as the daemon coalesces per group.
 * --fanout-min-conns N fans out only while at least N connections are open:
 * with the members' own joins fanning out too, echo (fast enough to take
 * the joins one per iteration) queued ~1,000,000 NOTIFYs during setup and
 * was still sending them when the measured repeats began.
 * Like the daemon, it reads every ready socket, then writes every queued
 * output before sleeping, arming EPOLLOUT only where the socket is full.
 * Prints "READY remoting=127.0.0.1:PORT http=off" once bound; exits on
 * SIGTERM/SIGINT or after --max-seconds (default 900).
 */
#include "array.h"
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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_BUDGET (1024u * 1024u)
#define MAX_EVENTS 256

struct econn {
    int fd;
    bool seen_frame, write_armed, dirty;
    struct buf in, out;
    struct econn *next_dirty;
};

static int g_epfd = -1;
static struct buf g_reply, g_small_reply, g_notify;
static size_t g_small_below = 256;
static bool g_fanout;
static size_t g_fanout_min_conns;
static struct econn **g_all;
static size_t g_nall, g_all_cap;
static struct econn *g_dirty;
static char g_listen_marker;

static int fail_errno(const char *what)
{
    int e = errno;
    fprintf(stderr, "bench_echo: %s: %s\n", what, strerror(e));
    return -e;
}

/* Builds a response frame with the daemon's heartbeat-reply header, its body
 * padded so the whole frame is about `bytes` long. */
static int build_reply(size_t bytes, struct buf *out)
{
    struct rmq_cmd req, resp;
    rmq_cmd_init_request(&req, 34, 1, 0);
    int rc = rmq_cmd_init_response(&resp, &req, 0, NULL);
    if (rc == 0)
        rc = rmq_cmd_ext_set(&resp, "IS_SUPPORT_HEART_BEAT_V2", "true");
    if (rc == 0)
        rc = rmq_cmd_ext_set(&resp, "IS_SUB_CHANGE", "false");
    buf_init(out, 0);
    if (rc == 0)
        rc = rmq_frame_encode(&resp, out);
    if (rc == 0 && buf_live(out) < bytes) {
        size_t pad = bytes - buf_live(out);
        uint8_t *body = rmq_malloc(pad);
        if (!body) {
            rc = RMQ_ENOMEM;
        } else {
            memset(body, ' ', pad);
            rmq_cmd_set_body_take(&resp, body, pad);
            buf_reset(out);
            rc = rmq_frame_encode(&resp, out);
        }
    }
    rmq_cmd_clear(&resp);
    rmq_cmd_clear(&req);
    return rc;
}

static int build_notify(struct buf *out)
{
    struct rmq_cmd cmd;
    rmq_cmd_init_request(&cmd, 40, 1, RMQ_FLAG_ONEWAY);
    int rc = rmq_cmd_ext_set(&cmd, "consumerGroup", "N");
    buf_init(out, 0);
    if (rc == 0)
        rc = rmq_frame_encode(&cmd, out);
    rmq_cmd_clear(&cmd);
    return rc;
}

static void mark_dirty(struct econn *c)
{
    if (c->dirty)
        return;
    c->dirty = true;
    c->next_dirty = g_dirty;
    g_dirty = c;
}

static void close_conn(struct econn *c)
{
    for (size_t i = 0; i < g_nall; i++) {
        if (g_all[i] == c) {
            g_all[i] = g_all[--g_nall];
            break;
        }
    }
    /* Unlink from the dirty list before freeing. */
    for (struct econn **pp = &g_dirty; *pp; pp = &(*pp)->next_dirty) {
        if (*pp == c) {
            *pp = c->next_dirty;
            break;
        }
    }
    if (close(c->fd) != 0)
        fail_errno("close");
    buf_free(&c->in);
    buf_free(&c->out);
    rmq_free(c);
}

/* Queues one reply per complete frame in p[0..*len); moves the consumed
 * prefix out (*len becomes the partial tail). 1 if a fan-out is due, 0, or
 * RMQ_ENOMEM. */
static int answer_frames(struct econn *c, const uint8_t *p, size_t *len)
{
    int fan = 0;
    size_t off = 0;
    while (*len - off >= 4) {
        const uint8_t *h = p + off;
        size_t total = ((size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3]) + 4;
        if (*len - off < total)
            break;
        const struct buf *r = total < g_small_below ? &g_small_reply : &g_reply;
        if (buf_append(&c->out, buf_head(r), buf_live(r)) != 0)
            return RMQ_ENOMEM;
        off += total;
        if (!c->seen_frame && g_fanout && g_nall >= g_fanout_min_conns)
            fan = 1;
        c->seen_frame = true;
        mark_dirty(c);
    }
    *len -= off;
    return fan;
}

/* Reads up to READ_BUDGET bytes into one shared buffer; only a partial
 * frame is kept per connection (so an idle connection holds no buffer).
 * Returns 1 if a fan-out is due, 0, or < 0 to close. */
static int on_readable(struct econn *c)
{
    static uint8_t tmp[65536];
    size_t budget = READ_BUDGET;
    int fan = 0;
    while (budget > 0) {
        ssize_t n = read(c->fd, tmp, sizeof tmp);
        if (n == 0)
            return RMQ_EIO;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0)
            return -errno;
        budget = (size_t)n > budget ? 0 : budget - (size_t)n;
        int rc;
        size_t len;
        if (buf_live(&c->in) == 0) {
            len = (size_t)n;
            rc = answer_frames(c, tmp, &len);
            if (rc >= 0 && len > 0 && buf_append(&c->in, tmp + (size_t)n - len, len) != 0)
                rc = RMQ_ENOMEM;
        } else {
            if (buf_append(&c->in, tmp, (size_t)n) != 0)
                return RMQ_ENOMEM;
            len = buf_live(&c->in);
            rc = answer_frames(c, buf_head(&c->in), &len);
            if (rc >= 0)
                buf_consume(&c->in, buf_live(&c->in) - len);
            if (rc >= 0 && len == 0)
                buf_reset(&c->in);
        }
        if (rc < 0)
            return rc;
        fan |= rc;
        if ((size_t)n < sizeof tmp)
            break;
    }
    return fan;
}

static int set_write(struct econn *c, bool want)
{
    if (c->write_armed == want)
        return 0;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0u), .data.ptr = c};
    if (epoll_ctl(g_epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        return fail_errno("epoll_ctl mod");
    c->write_armed = want;
    return 0;
}

/* Writes queued output; 0 (maybe with EPOLLOUT armed) or < 0 to close. */
static int write_out(struct econn *c)
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
            return set_write(c, true);
        return -errno;
    }
    return set_write(c, false);
}

static void accept_all(int lfd)
{
    for (int i = 0; i < 1024; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                fail_errno("accept4");
            return;
        }
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
            fail_errno("setsockopt");
        if (RMQ_GROW(g_all, g_all_cap, g_nall + 1, 1024) != 0) {
            fprintf(stderr, "bench_echo: out of memory\n");
            close(fd);
            return;
        }
        struct econn *c = rmq_calloc(1, sizeof *c);
        if (!c) {
            fprintf(stderr, "bench_echo: out of memory\n");
            close(fd);
            return;
        }
        c->fd = fd;
        buf_init(&c->in, 0);
        buf_init(&c->out, 0);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(g_epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            fail_errno("epoll_ctl add");
            rmq_free(c);
            close(fd);
            return;
        }
        g_all[g_nall++] = c;
    }
}

static int listen_on(const char *host, int port, int *fd_out)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return RMQ_EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail_errno("socket");
    int one = 1;
    socklen_t len = sizeof sa;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        int rc = fail_errno("listen");
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return ntohs(sa.sin_port);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One loop iteration's before-sleep: fan out, then write every dirty connection. */
static void before_sleep(bool fan)
{
    if (fan) {
        for (size_t i = 0; i < g_nall; i++) {
            if (buf_append(&g_all[i]->out, buf_head(&g_notify), buf_live(&g_notify)) == 0)
                mark_dirty(g_all[i]);
        }
    }
    while (g_dirty) {
        struct econn *c = g_dirty;
        g_dirty = c->next_dirty;
        c->dirty = false;
        if (write_out(c) != 0)
            close_conn(c);
    }
}

static int serve(int lfd, int sfd, double max_s)
{
    struct epoll_event evs[MAX_EVENTS];
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &g_listen_marker};
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &g_listen_marker + 1};
    if (epoll_ctl(g_epfd, EPOLL_CTL_ADD, lfd, &lev) != 0 || epoll_ctl(g_epfd, EPOLL_CTL_ADD, sfd, &sev) != 0)
        return fail_errno("epoll_ctl");
    double end = now_s() + max_s;
    while (now_s() < end) {
        int n = epoll_wait(g_epfd, evs, MAX_EVENTS, 1000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail_errno("epoll_wait");
        bool fan = false;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &g_listen_marker) {
                accept_all(lfd);
                continue;
            }
            if (p == &g_listen_marker + 1)
                return 0; /* SIGTERM / SIGINT */
            struct econn *c = p;
            int rc = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                rc = on_readable(c);
            if (rc >= 0 && (evs[i].events & EPOLLOUT))
                rc = write_out(c) < 0 ? -1 : rc;
            if (rc < 0)
                close_conn(c);
            else
                fan = fan || rc == 1;
        }
        before_sleep(fan);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    int port = 0;
    size_t reply_bytes = 0, small_bytes = 0;
    double max_s = 900;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--fanout")) {
            g_fanout = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "usage: bench_echo [--port N] [--reply-bytes N] [--small-reply-bytes N]\n"
                            "       [--small-below N] [--fanout] [--fanout-min-conns N] [--max-seconds S]\n");
            return 2;
        }
        if (!strcmp(argv[i], "--port"))
            port = atoi(v);
        else if (!strcmp(argv[i], "--fanout-min-conns"))
            g_fanout_min_conns = (size_t)strtoul(v, NULL, 10);
        else if (!strcmp(argv[i], "--reply-bytes"))
            reply_bytes = (size_t)atol(v);
        else if (!strcmp(argv[i], "--small-reply-bytes"))
            small_bytes = (size_t)atol(v);
        else if (!strcmp(argv[i], "--small-below"))
            g_small_below = (size_t)atol(v);
        else if (!strcmp(argv[i], "--max-seconds"))
            max_s = atof(v);
        else {
            fprintf(stderr, "bench_echo: unknown option %s\n", argv[i]);
            return 2;
        }
        i++;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            fail_errno("setrlimit");
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0)
        return fail_errno("sigprocmask") ? 1 : 1;
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    g_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sfd < 0 || g_epfd < 0)
        return fail_errno("signalfd/epoll_create1") ? 1 : 1;
    if (build_reply(reply_bytes, &g_reply) != 0 || build_reply(small_bytes, &g_small_reply) != 0 ||
        build_notify(&g_notify) != 0) {
        fprintf(stderr, "bench_echo: cannot build frames\n");
        return 1;
    }
    int lfd = -1;
    int bound = listen_on(host, port, &lfd);
    if (bound < 0)
        return 1;
    printf("READY remoting=%s:%d http=off\n", host, bound);
    fflush(stdout);
    int rc = serve(lfd, sfd, max_s);
    while (g_nall > 0)
        close_conn(g_all[0]);
    rmq_free(g_all);
    buf_free(&g_reply);
    buf_free(&g_small_reply);
    buf_free(&g_notify);
    close(lfd);
    close(sfd);
    close(g_epfd);
    return rc == 0 ? 0 : 1;
}
