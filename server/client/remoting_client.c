/* remoting_client.c — see remoting_client.h. Loop thread only.
 *
 * The sockets are core conns: a conn_set of dialed connections does the
 * connect, the frame decoding, the output queue and its flush, and frees a
 * closed socket in conn_set_reap. This file adds what only a client has:
 * addresses, the reconnect backoff, matching responses to requests (a
 * pending_table keyed by rclient_conn) and the owner's callbacks. */
#include "remoting_client.h"

#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "pending.h"
#include "remoting_frame.h"

#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* How much one readable event may read before other connections get a turn. */
#define READ_BUDGET (1u << 20)

/* One request waiting for its response: the pending table's ctx, freed by
 * on_pending. */
struct rreq {
    struct rclient_conn *c;
    unsigned flags;
    bool withdrawn; /* its frame could not be queued: dropped without a word */
    rclient_reply_cb cb;
    void *ctx;
};

struct rclient_conn {
    struct rclient *net;
    char addr[128];
    struct sockaddr_storage sa;
    socklen_t salen;
    struct rclient_conn_handler h;
    int32_t *opaque;
    /* The socket while connecting or up (owned by net->conns, freed in its
     * reap); NULL while down. Closing (link->closing) without c->closing:
     * broken, torn down in on_link_close. */
    struct conn *link;
    bool wanted;         /* used at least once: keep it connected */
    bool ever_up;        /* a later set-up is a reconnect */
    bool in_work;        /* on the before-sleep work list */
    bool closing;        /* closed by its owner: freed before sleep */
    bool flush_on_close; /* the owner's close: what the socket takes is still sent */
    bool reap;           /* closed: freed by reap_closed */
    bool up_news;        /* on_up still to be told (never from inside a send) */
    int64_t retry_at;
    int64_t backoff_ms;
    struct rclient_conn *next;      /* all connections */
    struct rclient_conn *next_work; /* news or closes, handled before sleep */
};

struct rclient {
    struct loop *loop;
    struct conn_set *conns;
    struct pending_table pending; /* (rclient_conn, opaque) -> struct rreq */
    /* What a request that ends without a response hears (set around
     * pending_expire / pending_drop_conn / pending_free). */
    int fail_status;
    bool freeing;
    struct rclient_conn *all;
    struct rclient_conn *work;
    size_t nreap; /* connections marked for reap_closed */
    uint64_t next_id;
    struct rclient_stats stats;
};

static void on_link_frame(void *ctx, struct conn *link, struct rmq_cmd *cmd);
static void on_link_open(void *ctx, struct conn *link);
static void on_link_close(void *ctx, struct conn *link);

int rclient_new(struct loop *l, struct rclient **out)
{
    struct rclient *n = rmq_calloc(1, sizeof *n);
    if (!n)
        return RMQ_ENOMEM;
    n->loop = l;
    struct conn_set_options opt = {
        .max_frame = RMQ_FRAME_MAX_DEFAULT,
        .max_output = RCLIENT_MAX_OUTPUT,
        .read_budget = READ_BUDGET,
        .defer_output = true, /* written before the loop sleeps */
        .on_frame = on_link_frame,
        .on_close = on_link_close,
        .on_open = on_link_open,
        .ctx = n,
    };
    if (conn_set_new(l, &opt, &n->conns) != 0 || pending_init(&n->pending, n, RCLIENT_MAX_PENDING) != 0) {
        conn_set_free(n->conns);
        rmq_free(n);
        return RMQ_ENOMEM;
    }
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

/* Closes the socket for a failure; it is torn down in the next reap. The
 * first reason wins; nothing happens while down. */
static void mark_broken(struct rclient_conn *c, const char *why)
{
    if (c->link && !c->link->closing)
        conn_close_async(c->link, why);
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
    assert(res->ai_addrlen <= sizeof c->sa);
    memcpy(&c->sa, res->ai_addr, res->ai_addrlen);
    c->salen = res->ai_addrlen;
    freeaddrinfo(res);
    return RMQ_OK;
}

int rclient_conn_new(struct rclient *n, const char *addr, const struct rclient_conn_handler *h,
                     int32_t *opaque, struct rclient_conn **out)
{
    assert(!n->freeing && opaque);
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
    c->backoff_ms = RCLIENT_BACKOFF_MIN_MS;
    c->next = n->all;
    n->all = c;
    *out = c;
    return RMQ_OK;
}

const char *rclient_conn_addr(const struct rclient_conn *c)
{
    return c->addr;
}

/* Fails every request pending on c with status (none of them sees a
 * response now). */
static void fail_pending(struct rclient_conn *c, int status)
{
    assert(status < 0);
    struct rclient *n = c->net;
    int saved = n->fail_status;
    n->fail_status = status;
    (void)pending_drop_conn(&n->pending, c);
    n->fail_status = saved;
    assert(pending_count_conn(&n->pending, c) == 0 || !c->closing);
}

/* The pending table's callback: the owner hears the outcome once. */
static void on_pending(void *owner, void *ctx, const struct rmq_cmd *resp)
{
    struct rclient *n = owner;
    struct rreq *r = ctx;
    struct rclient_conn *c = r->c;
    if (r->withdrawn) {
        rmq_free(r);
        return;
    }
    int status = 0;
    if (resp) {
        n->stats.responses++;
    } else {
        status = n->fail_status;
        assert(status < 0);
        if (status == -ETIMEDOUT && c->closing) {
            status = -ECANCELED; /* closed already: cancelled, not late */
        } else if (status == -ETIMEDOUT) {
            n->stats.timeouts++;
            if (r->flags & SIM_REQ_SYNC)
                mark_broken(c, "a request timed out (the Java client closes the socket)");
        }
    }
    rclient_reply_cb cb = r->cb;
    void *cb_ctx = r->ctx;
    rmq_free(r);
    cb(cb_ctx, status, resp);
}

/* Schedules the next connect attempt, doubling the backoff. */
static void schedule_retry(struct rclient_conn *c)
{
    c->retry_at = loop_now_ms(c->net->loop) + c->backoff_ms;
    c->backoff_ms = c->backoff_ms * 2 > RCLIENT_BACKOFF_MAX_MS ? RCLIENT_BACKOFF_MAX_MS : c->backoff_ms * 2;
    assert(c->backoff_ms >= RCLIENT_BACKOFF_MIN_MS && c->backoff_ms <= RCLIENT_BACKOFF_MAX_MS);
}

/* Makes sure a send can be queued: connects when down and allowed. 0
 * (connecting or up) or a negative code. */
static int ensure_open(struct rclient_conn *c)
{
    c->wanted = true;
    if (c->closing || (c->link && c->link->closing))
        return -ENOTCONN;
    if (c->link)
        return RMQ_OK;
    struct rclient *n = c->net;
    if (loop_now_ms(n->loop) < c->retry_at)
        return -ENOTCONN;
    int rc = conn_set_dial(n->conns, (const struct sockaddr *)&c->sa, c->salen, ++n->next_id, c->addr,
                           loop_now_ms(n->loop), &c->link);
    if (rc != 0) {
        c->link = NULL;
        log_debug("sim: connect %s failed: %s", c->addr, rmq_strerror(rc));
        schedule_retry(c);
        return rc;
    }
    assert(c->link->dialed && c->link->connecting);
    c->link->user = c;
    return RMQ_OK;
}

static int queue_frame(struct rclient_conn *c, const struct rmq_cmd *cmd)
{
    int rc = ensure_open(c);
    if (rc != 0)
        return rc;
    rc = conn_try_send(c->link, cmd);
    if (rc != 0)
        return rc;
    c->net->stats.requests += !rmq_cmd_is_response(cmd);
    return RMQ_OK;
}

int rclient_conn_request(struct rclient_conn *c, struct rmq_cmd *req, int64_t timeout_ms, unsigned flags,
                         rclient_reply_cb cb, void *ctx)
{
    assert(cb);
    struct rclient *n = c->net;
    if (pending_count_conn(&n->pending, c) >= RCLIENT_MAX_PENDING)
        return RMQ_E2BIG;
    struct rreq *r = rmq_calloc(1, sizeof *r);
    if (!r)
        return RMQ_ENOMEM;
    req->opaque = (int32_t)(uint32_t)(*c->opaque)++; /* wraps like Java's int counter */
    req->flag &= ~(RMQ_FLAG_RESPONSE | RMQ_FLAG_ONEWAY);
    *r = (struct rreq){.c = c, .flags = flags, .cb = cb, .ctx = ctx};
    int rc = pending_add(&n->pending, c, req->opaque, loop_now_ms(n->loop) + timeout_ms, on_pending, r);
    if (rc != 0) {
        rmq_free(r);
        return rc;
    }
    rc = queue_frame(c, req);
    if (rc != 0) {
        r->withdrawn = true; /* the table frees it, and cb never runs */
        bool found = pending_complete(&n->pending, c, req->opaque, NULL);
        assert(found);
        (void)found;
    }
    return rc;
}

int rclient_conn_oneway(struct rclient_conn *c, struct rmq_cmd *req)
{
    req->opaque = (int32_t)(uint32_t)(*c->opaque)++;
    req->flag = (req->flag & ~RMQ_FLAG_RESPONSE) | RMQ_FLAG_ONEWAY;
    return queue_frame(c, req);
}

int rclient_conn_reply(struct rclient_conn *c, const struct rmq_cmd *resp)
{
    assert(rmq_cmd_is_response(resp));
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
    if (c->link && !c->link->closing) {
        c->flush_on_close = true;
        conn_close_async(c->link, "closed by its owner");
    }
    queue_work(c);
}

static void on_link_frame(void *ctx, struct conn *link, struct rmq_cmd *cmd)
{
    struct rclient *n = ctx;
    struct rclient_conn *c = link->user;
    assert(c && c->link == link && !c->closing && c->net == n);
    c->backoff_ms = RCLIENT_BACKOFF_MIN_MS; /* the peer talks: the link is healthy */
    if (rmq_cmd_is_response(cmd)) {
        if (!pending_complete(&n->pending, c, cmd->opaque, cmd))
            log_debug("sim: %s: unmatched response opaque %d dropped", c->addr, cmd->opaque);
    } else if (c->h.on_request) {
        c->h.on_request(c->h.ctx, c, cmd);
    }
}

/* Connected: the owner hears of it before the loop sleeps, when queued
 * output goes out too. */
static void on_link_open(void *ctx, struct conn *link)
{
    struct rclient *n = ctx;
    struct rclient_conn *c = link->user;
    assert(c && c->link == link && !link->connecting);
    c->up_news = true;
    n->stats.connects++;
    queue_work(c);
}

/* Whether a connect in progress has completed by now, without waiting (on
 * loopback the kernel finishes it inside connect()). */
static bool connect_done_now(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof err;
    return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) &&
           getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

/* A broken connection's socket is being freed: its queued output dropped,
 * the next attempt scheduled, its requests failed, the owner told (unless
 * a failed request's callback closed it meanwhile). */
static void teardown(struct rclient_conn *c, struct conn *link)
{
    bool was_up = !link->connecting;
    char why[sizeof link->close_reason];
    snprintf(why, sizeof why, "%s", link->close_reason);
    if (c->h.on_down)
        log_debug("sim: connection to %s lost: %s", c->addr, why);
    else
        log_info("sim: connection to %s lost: %s", c->addr, why);
    c->net->stats.disconnects++;
    conn_drop_output(link);
    schedule_retry(c);
    c->up_news = false;
    fail_pending(c, -ECONNRESET);
    if (c->h.on_down && !c->closing)
        c->h.on_down(c->h.ctx, c, was_up, why);
}

/* The conn_set frees link (its reap, or the set's end). */
static void on_link_close(void *ctx, struct conn *link)
{
    struct rclient *n = ctx;
    struct rclient_conn *c = link->user;
    assert(c && c->link == link && link->closing);
    c->link = NULL;
    link->user = NULL;
    if (!c->closing) {
        teardown(c, link);
        return;
    }
    /* The owner's close sends what the socket takes, as a socket closed at
     * that moment would; a broken one, or the client's end, sends nothing. */
    if (!c->flush_on_close || n->freeing)
        conn_drop_output(link);
    else if (link->connecting && connect_done_now(link->fd))
        n->stats.connects++;
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
    assert(n->nreap == 0);
    while (dead) {
        struct rclient_conn *c = dead;
        dead = c->next;
        assert(c->closing && !c->link);
        fail_pending(c, -ECANCELED);
        rmq_free(c);
    }
}

void rclient_before_sleep(struct rclient *n)
{
    /* Callbacks (on_up, a failed request's, on_down) may queue more work:
     * loop until quiet, each pass handling what the previous one queued. */
    for (int pass = 0; pass < 8; pass++) {
        bool busy = n->work != NULL;
        struct rclient_conn *c = n->work;
        n->work = NULL;
        while (c) {
            struct rclient_conn *next = c->next_work;
            c->in_work = false;
            c->next_work = NULL;
            if (c->closing) {
                /* Its socket is already closing (rclient_conn_close); it
                 * stays marked as on the work list, so nothing queues it
                 * again. */
                assert(!c->link || c->link->closing);
                c->in_work = true;
                c->reap = true;
                n->nreap++;
            } else if (c->up_news && c->link && !c->link->closing) {
                bool again = c->ever_up;
                c->up_news = false;
                c->ever_up = true;
                if (c->h.on_up)
                    c->h.on_up(c->h.ctx, c, again);
            }
            c = next;
        }
        busy = conn_set_reap(n->conns) > 0 || busy;
        if (n->nreap) {
            reap_closed(n);
            busy = true;
        }
        if (!busy)
            break;
    }
    conn_set_flush(n->conns);
}

void rclient_tick(struct rclient *n)
{
    int64_t now = loop_now_ms(n->loop);
    int saved = n->fail_status;
    n->fail_status = -ETIMEDOUT;
    (void)pending_expire(&n->pending, now);
    n->fail_status = saved;
    for (struct rclient_conn *c = n->all; c; c = c->next) {
        if (c->closing || c->link || !c->wanted || now < c->retry_at)
            continue;
        if (ensure_open(c) != 0)
            log_debug("sim: reconnect to %s failed; next try in %lld ms", c->addr, (long long)c->backoff_ms);
    }
}

size_t rclient_pending(const struct rclient *n)
{
    return pending_count(&n->pending);
}

const struct rclient_stats *rclient_stats(const struct rclient *n)
{
    return &n->stats;
}

void rclient_free(struct rclient *n)
{
    if (!n)
        return;
    n->freeing = true;
    for (struct rclient_conn *c = n->all; c; c = c->next)
        c->closing = true; /* a failed request's callback cannot reopen it */
    conn_set_free(n->conns);
    while (n->all) {
        struct rclient_conn *c = n->all;
        n->all = c->next;
        assert(!c->link);
        fail_pending(c, RMQ_ESTATE);
        rmq_free(c);
    }
    n->fail_status = RMQ_ESTATE;
    pending_free(&n->pending);
    rmq_free(n);
}
