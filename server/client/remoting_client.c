/* remoting_client.c — see remoting_client.h. Loop thread only. */
#include "remoting_client.h"
#include "net.h"

#include "buf.h"
#include "err.h"
#include "hashmap.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "remoting_frame.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* How much one readable event may read before other connections get a turn. */
#define READ_BUDGET (1u << 20)

enum conn_state { CONN_DOWN, CONN_CONNECTING, CONN_UP };

struct pending {
    int32_t opaque;
    unsigned flags;
    int64_t deadline;
    rclient_reply_cb cb;
    void *ctx;
    struct pending *prev, *next;
};

struct rclient_conn {
    struct rclient *net;
    char addr[128];
    struct sockaddr_storage sa;
    socklen_t salen;
    struct rclient_conn_handler h;
    int32_t *opaque;
    int fd;
    enum conn_state state;
    bool wanted;  /* used at least once: keep it connected */
    bool ever_up; /* a later set-up is a reconnect */
    bool write_armed;
    bool in_work;  /* on the before-sleep work list */
    bool broken;   /* torn down before sleep */
    bool closing;  /* closed by its owner: freed before sleep */
    bool reap;     /* closed and flushed: freed by reap_closed */
    bool up_news;  /* on_up still to be told (never from inside a send) */
    char why[224]; /* reason for the pending teardown */
    int64_t retry_at;
    int64_t backoff_ms;
    struct rmq_frame_decoder dec;
    struct buf out;
    struct hashmap pending; /* opaque (4 bytes) -> struct pending */
    struct pending *plist;  /* the same entries, for deadline sweeps */
    size_t npending;
    struct rclient_conn *next;      /* all connections */
    struct rclient_conn *next_work; /* dirty or broken, handled before sleep */
};

struct rclient {
    struct loop *loop;
    struct rclient_conn *all;
    struct rclient_conn *work;
    size_t nreap; /* connections marked for reap_closed */
    struct rclient_stats stats;
};

int rclient_new(struct loop *l, struct rclient **out)
{
    struct rclient *n = rmq_calloc(1, sizeof *n);
    if (!n)
        return RMQ_ENOMEM;
    n->loop = l;
    *out = n;
    return RMQ_OK;
}

static void queue_work(struct rclient_conn *c)
{
    if (c->in_work)
        return;
    c->in_work = true;
    c->next_work = c->net->work;
    c->net->work = c;
}

static void mark_broken(struct rclient_conn *c, const char *why)
{
    if (c->broken || c->state == CONN_DOWN)
        return;
    c->broken = true;
    queue_work(c);
    snprintf(c->why, sizeof c->why, "%s", why);
}

/* Parses "host:port" / "[v6]:port" into c->sa. A host name is resolved
 * here, once, when the connection is made (localhost from /etc/hosts, as
 * `serve --listen localhost:0` advertises); the port must be numeric. */
static int parse_addr(struct rclient_conn *c, const char *addr)
{
    char host[128];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1] || (size_t)(colon - addr) >= sizeof host)
        return RMQ_EINVAL;
    size_t hl = (size_t)(colon - addr);
    memcpy(host, addr, hl);
    host[hl] = '\0';
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res)
        return RMQ_EINVAL;
    memcpy(&c->sa, res->ai_addr, res->ai_addrlen);
    c->salen = res->ai_addrlen;
    freeaddrinfo(res);
    return RMQ_OK;
}

int rclient_conn_new(struct rclient *n, const char *addr, const struct rclient_conn_handler *h,
                     int32_t *opaque, struct rclient_conn **out)
{
    if (strlen(addr) >= sizeof((struct rclient_conn *)0)->addr)
        return RMQ_EINVAL;
    struct rclient_conn *c = rmq_calloc(1, sizeof *c);
    if (!c)
        return RMQ_ENOMEM;
    if (parse_addr(c, addr) != 0) {
        rmq_free(c);
        return RMQ_EINVAL;
    }
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    c->net = n;
    c->h = *h;
    c->opaque = opaque;
    c->fd = -1;
    c->backoff_ms = RCLIENT_BACKOFF_MIN_MS;
    rmq_frame_decoder_init(&c->dec, RMQ_FRAME_MAX_DEFAULT, 0);
    buf_init(&c->out, RCLIENT_MAX_OUTPUT);
    hashmap_init(&c->pending);
    c->next = n->all;
    n->all = c;
    *out = c;
    return RMQ_OK;
}

const char *rclient_conn_addr(const struct rclient_conn *c)
{
    return c->addr;
}

static void unlink_pending(struct rclient_conn *c, struct pending *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        c->plist = p->next;
    if (p->next)
        p->next->prev = p->prev;
    c->npending--;
}

/* Fails every pending request with status. The table is emptied first, so
 * a callback that sends again sees a consistent (down) connection. */
static void fail_all(struct rclient_conn *c, int status)
{
    struct pending *p = c->plist;
    c->plist = NULL;
    c->npending = 0;
    hashmap_free(&c->pending, NULL);
    hashmap_init(&c->pending);
    while (p) {
        struct pending *next = p->next;
        p->cb(p->ctx, status, NULL);
        rmq_free(p);
        p = next;
    }
}

/* Closes the socket and schedules the next attempt; no callbacks. */
static void close_socket(struct rclient_conn *c)
{
    if (c->fd >= 0) {
        loop_del_fd(c->net->loop, c->fd);
        close(c->fd);
    }
    c->fd = -1;
    c->state = CONN_DOWN;
    c->write_armed = false;
    rmq_frame_decoder_free(&c->dec);
    rmq_frame_decoder_init(&c->dec, RMQ_FRAME_MAX_DEFAULT, 0);
    buf_reset(&c->out);
    c->retry_at = loop_now_ms(c->net->loop) + c->backoff_ms;
    c->backoff_ms = c->backoff_ms * 2 > RCLIENT_BACKOFF_MAX_MS ? RCLIENT_BACKOFF_MAX_MS : c->backoff_ms * 2;
}

static void on_event(struct loop *l, int fd, uint32_t events, void *ctx);

/* Connected: queued output goes out and the owner hears of it before the
 * loop sleeps (this may run inside a send, where a callback must not). */
static void became_up(struct rclient_conn *c)
{
    c->state = CONN_UP;
    c->up_news = true;
    c->net->stats.connects++;
    queue_work(c);
}

/* Starts a non-blocking connect. 0 (connecting or up) or -errno. */
static int start_connect(struct rclient_conn *c)
{
    int fd = socket(c->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* latency, not required */
    int rc = connect(fd, (struct sockaddr *)&c->sa, c->salen);
    if (rc != 0 && errno != EINPROGRESS) {
        int e = -errno;
        close(fd);
        return e;
    }
    int lrc = loop_add_fd(c->net->loop, fd, LOOP_READ | LOOP_WRITE, on_event, c);
    if (lrc != 0) {
        close(fd);
        return lrc;
    }
    c->fd = fd;
    c->write_armed = true;
    c->state = CONN_CONNECTING;
    if (rc == 0)
        became_up(c);
    return RMQ_OK;
}

/* Makes sure a send can be queued: connects when down and allowed. */
static int ensure_open(struct rclient_conn *c)
{
    c->wanted = true;
    if (c->broken || c->closing)
        return -ENOTCONN;
    if (c->state != CONN_DOWN)
        return RMQ_OK;
    if (loop_now_ms(c->net->loop) < c->retry_at)
        return -ENOTCONN;
    int rc = start_connect(c);
    if (rc != 0) {
        log_debug("sim: connect %s failed: %s", c->addr, rmq_strerror(rc));
        close_socket(c);
    }
    return rc;
}

static int queue_frame(struct rclient_conn *c, const struct rmq_cmd *cmd)
{
    int rc = ensure_open(c);
    if (rc != 0)
        return rc;
    size_t before = buf_live(&c->out);
    rc = rmq_frame_encode(cmd, &c->out);
    if (rc != 0) {
        c->out.len = c->out.pos + before; /* keep the stream frame-aligned */
        return rc;
    }
    c->net->stats.requests += !rmq_cmd_is_response(cmd);
    if (c->state == CONN_UP)
        queue_work(c);
    return RMQ_OK;
}

int rclient_conn_request(struct rclient_conn *c, struct rmq_cmd *req, int64_t timeout_ms, unsigned flags,
                         rclient_reply_cb cb, void *ctx)
{
    if (c->npending >= RCLIENT_MAX_PENDING)
        return RMQ_E2BIG;
    struct pending *p = rmq_calloc(1, sizeof *p);
    if (!p)
        return RMQ_ENOMEM;
    req->opaque = (int32_t)(uint32_t)(*c->opaque)++; /* wraps like Java's int counter */
    req->flag &= ~(RMQ_FLAG_RESPONSE | RMQ_FLAG_ONEWAY);
    *p = (struct pending){.opaque = req->opaque, .flags = flags, .cb = cb, .ctx = ctx};
    p->deadline = loop_now_ms(c->net->loop) + timeout_ms;
    int rc = hashmap_put(&c->pending, &p->opaque, sizeof p->opaque, p, NULL);
    if (rc == 0 && (rc = queue_frame(c, req)) != 0)
        (void)hashmap_remove(&c->pending, &p->opaque, sizeof p->opaque);
    if (rc != 0) {
        rmq_free(p);
        return rc;
    }
    p->next = c->plist;
    if (c->plist)
        c->plist->prev = p;
    c->plist = p;
    c->npending++;
    return RMQ_OK;
}

int rclient_conn_oneway(struct rclient_conn *c, struct rmq_cmd *req)
{
    req->opaque = (int32_t)(uint32_t)(*c->opaque)++;
    req->flag = (req->flag & ~RMQ_FLAG_RESPONSE) | RMQ_FLAG_ONEWAY;
    return queue_frame(c, req);
}

int rclient_conn_reply(struct rclient_conn *c, const struct rmq_cmd *resp)
{
    return queue_frame(c, resp);
}

int rclient_conn_connect(struct rclient_conn *c)
{
    return ensure_open(c);
}

void rclient_conn_close(struct rclient_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    queue_work(c);
}

static void on_response(struct rclient_conn *c, const struct rmq_cmd *cmd)
{
    struct pending *p = hashmap_remove(&c->pending, &cmd->opaque, sizeof cmd->opaque);
    if (!p) {
        log_debug("sim: %s: unmatched response opaque %d dropped", c->addr, cmd->opaque);
        return;
    }
    unlink_pending(c, p);
    c->net->stats.responses++;
    p->cb(p->ctx, 0, cmd);
    rmq_free(p);
}

/* Decodes and hands out every complete frame. */
static void dispatch_frames(struct rclient_conn *c)
{
    while (!c->broken && !c->closing) {
        struct rmq_cmd cmd;
        rmq_cmd_init(&cmd);
        int rc = rmq_frame_decoder_next(&c->dec, &cmd);
        if (rc == RMQ_EAGAIN)
            return;
        if (rc != 0) {
            char why[200];
            snprintf(why, sizeof why, "bad frame: %s", c->dec.error[0] ? c->dec.error : rmq_strerror(rc));
            mark_broken(c, why);
            rmq_cmd_clear(&cmd);
            return;
        }
        c->backoff_ms = RCLIENT_BACKOFF_MIN_MS; /* the peer talks: the link is healthy */
        if (rmq_cmd_is_response(&cmd))
            on_response(c, &cmd);
        else if (c->h.on_request)
            c->h.on_request(c->h.ctx, c, &cmd);
        rmq_cmd_clear(&cmd);
    }
}

static int feed(void *ctx, const uint8_t *p, size_t n)
{
    struct rclient_conn *c = ctx;
    if (rmq_frame_decoder_feed(&c->dec, p, n) != 0) {
        mark_broken(c, "out of memory");
        return RMQ_ENOMEM;
    }
    dispatch_frames(c);
    return c->broken || c->closing ? RMQ_ESTATE : 0;
}

static void on_readable(struct rclient_conn *c)
{
    if (c->broken)
        return;
    int rc = net_read_into(c->fd, READ_BUDGET, feed, c);
    if (rc == 1)
        mark_broken(c, "peer closed the connection");
    else if (rc < 0 && rc != -EAGAIN && rc > RMQ_EAGAIN)
        mark_broken(c, strerror(-rc));
}

/* Writes queued output: 0 when drained, RMQ_EAGAIN when the socket is full. */
static int write_out(struct rclient_conn *c)
{
    int rc = net_write_buf(c->fd, &c->out);
    if (rc == 0)
        return RMQ_OK;
    if (rc == -EAGAIN)
        return RMQ_EAGAIN;
    mark_broken(c, strerror(-rc));
    return RMQ_EIO;
}

static void set_write_interest(struct rclient_conn *c, bool want)
{
    if (c->write_armed == want)
        return;
    if (loop_mod_fd(c->net->loop, c->fd, LOOP_READ | (want ? LOOP_WRITE : 0)) == 0)
        c->write_armed = want;
    else
        mark_broken(c, "epoll modify failed");
}

/* The connect finished (writable or error): up, or broken with the reason. */
static void finish_connect(struct rclient_conn *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        mark_broken(c, strerror(err));
        return;
    }
    set_write_interest(c, false);
    became_up(c);
}

static void on_event(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    (void)fd;
    struct rclient_conn *c = ctx;
    if (c->broken || c->closing)
        return;
    if (c->state == CONN_CONNECTING) {
        if (events & (LOOP_WRITE | LOOP_ERROR))
            finish_connect(c);
        return;
    }
    if ((events & LOOP_WRITE) && write_out(c) == RMQ_OK)
        set_write_interest(c, false);
    if (events & LOOP_READ)
        on_readable(c);
}

/* Tears a broken connection down: socket closed, requests failed, the
 * owner told (unless a failed request's callback closed it meanwhile). */
static void teardown(struct rclient_conn *c)
{
    bool was_up = c->state == CONN_UP;
    if (c->h.on_down)
        log_debug("sim: connection to %s lost: %s", c->addr, c->why);
    else
        log_info("sim: connection to %s lost: %s", c->addr, c->why);
    c->net->stats.disconnects++;
    close_socket(c);
    c->broken = false;
    c->up_news = false;
    fail_all(c, -ECONNRESET);
    if (c->h.on_down && !c->closing)
        c->h.on_down(c->h.ctx, c, was_up, c->why);
}

/* Whether a connect in progress has completed by now, without waiting (on
 * loopback the kernel finishes it inside connect()). */
static bool connect_done_now(const struct rclient_conn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof err;
    return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) &&
           getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

/* Closes the socket, fails what is pending with status and frees c (not
 * unlinked here). */
static void destroy(struct rclient_conn *c, int status)
{
    close_socket(c);
    fail_all(c, status);
    rmq_frame_decoder_free(&c->dec);
    buf_free(&c->out);
    rmq_free(c);
}

/* Sends what the socket takes of a closed connection's output, as a socket
 * closed at that moment would, and marks it for reap_closed. It stays
 * marked as on the work list, so nothing queues it again. */
static void flush_closed(struct rclient_conn *c)
{
    c->in_work = true;
    c->reap = true;
    c->net->nreap++;
    if (c->state == CONN_CONNECTING && !c->broken && connect_done_now(c)) {
        c->state = CONN_UP;
        c->net->stats.connects++;
    }
    if (c->state == CONN_UP && !c->broken)
        (void)net_write_buf(c->fd, &c->out);
}

/* Frees the closed connections: all of them off the list first, then their
 * requests fail (-ECANCELED), whose callbacks may open or close others.
 * One pass over the list for any number of closes. */
static void reap_closed(struct rclient *n)
{
    struct rclient_conn *dead = NULL;
    for (struct rclient_conn **pp = &n->all; *pp && n->nreap;) {
        struct rclient_conn *c = *pp;
        if (!c->reap) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        c->next = dead;
        dead = c;
        n->nreap--;
    }
    while (dead) {
        struct rclient_conn *c = dead;
        dead = c->next;
        destroy(c, -ECANCELED);
    }
}

void rclient_before_sleep(struct rclient *n)
{
    /* Callbacks run by teardown may queue more work: loop until quiet, each
     * pass handling what the previous one queued. */
    for (int pass = 0; n->work && pass < 8; pass++) {
        struct rclient_conn *c = n->work;
        n->work = NULL;
        while (c) {
            struct rclient_conn *next = c->next_work;
            c->in_work = false;
            c->next_work = NULL;
            if (c->closing) {
                flush_closed(c);
                c = next;
                continue;
            }
            if (!c->broken && c->up_news) {
                bool again = c->ever_up;
                c->up_news = false;
                c->ever_up = true;
                if (c->h.on_up)
                    c->h.on_up(c->h.ctx, c, again);
            }
            if (c->broken)
                teardown(c);
            else if (c->state == CONN_UP && !c->write_armed)
                set_write_interest(c, write_out(c) == RMQ_EAGAIN);
            c = next;
        }
        if (n->nreap)
            reap_closed(n);
    }
}

/* Takes every request past its deadline off the table first, then runs
 * their callbacks, which may send again. */
static void expire(struct rclient_conn *c, int64_t now)
{
    struct pending *expired = NULL;
    for (struct pending *p = c->plist, *next; p; p = next) {
        next = p->next;
        if (p->deadline > now)
            continue;
        (void)hashmap_remove(&c->pending, &p->opaque, sizeof p->opaque);
        unlink_pending(c, p);
        p->next = expired;
        expired = p;
    }
    while (expired) {
        struct pending *p = expired;
        expired = p->next;
        c->net->stats.timeouts++;
        if (p->flags & SIM_REQ_SYNC)
            mark_broken(c, "a request timed out (the Java client closes the socket)");
        p->cb(p->ctx, -ETIMEDOUT, NULL);
        rmq_free(p);
    }
}

void rclient_tick(struct rclient *n)
{
    int64_t now = loop_now_ms(n->loop);
    for (struct rclient_conn *c = n->all; c; c = c->next) {
        if (c->closing)
            continue;
        expire(c, now);
        if (c->state == CONN_DOWN && !c->broken && !c->closing && c->wanted && now >= c->retry_at &&
            ensure_open(c) != 0)
            log_debug("sim: reconnect to %s failed; next try in %lld ms", c->addr, (long long)c->backoff_ms);
    }
}

size_t rclient_pending(const struct rclient *n)
{
    size_t total = 0;
    for (const struct rclient_conn *c = n->all; c; c = c->next)
        total += c->npending;
    return total;
}

const struct rclient_stats *rclient_stats(const struct rclient *n)
{
    return &n->stats;
}

void rclient_free(struct rclient *n)
{
    if (!n)
        return;
    while (n->all) {
        struct rclient_conn *c = n->all;
        n->all = c->next;
        c->closing = true; /* a failed request's callback cannot reopen it */
        destroy(c, RMQ_ESTATE);
    }
    rmq_free(n);
}
