/* replay_live.c — see replay_live.h.
 *
 * One thread, one poll loop: between due events it reads (and counts)
 * whatever the daemon sends — replies and NOTIFYs — so the daemon never
 * sees a stalled reader, and writes queued frames. Requests go out as JSON
 * header frames (the recorded code, language, version, flag, extFields and
 * body; fresh opaques). Connect lines open sockets, close lines close them;
 * notify and route lines are the daemon's own output and are skipped.
 * Bounded: max_conns sockets, LIVE_MAX_OUT queued bytes per connection
 * (frames past it are dropped and counted).
 */
#include "replay_live.h"

#include "clocks.h"
#include "err.h"
#include "hashmap.h"
#include "mem.h"
#include "remoting_frame.h"
#include "replay_io.h"
#include "request_codes.h"
#include "trace_fmt.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LIVE_MAX_OUT ((size_t)4 << 20)

struct lconn {
    uint64_t id;
    int fd;
    struct buf out;
    struct rmq_frame_decoder dec;
    int32_t opaque;
};

struct live {
    struct addrinfo *ai;
    struct hashmap conns; /* id -> struct lconn* */
    size_t max_conns;
    uint64_t opened, failed, skipped, sent, dropped, responses, notifies, peer_closed, lines;
    struct pollfd *pfd;
    struct lconn **pc;
    size_t pcap;
};

static void lconn_free(struct live *lv, struct lconn *c)
{
    hashmap_remove(&lv->conns, &c->id, sizeof c->id);
    close(c->fd);
    buf_free(&c->out);
    rmq_frame_decoder_free(&c->dec);
    rmq_free(c);
}

static struct lconn *lconn_open(struct live *lv, uint64_t id)
{
    if (lv->conns.count >= lv->max_conns) {
        lv->skipped++;
        return NULL;
    }
    int fd = socket(lv->ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, lv->ai->ai_addr, lv->ai->ai_addrlen) != 0) {
        if (fd >= 0)
            close(fd);
        lv->failed++;
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct lconn *c = rmq_calloc(1, sizeof *c);
    if (!c || hashmap_put(&lv->conns, &id, sizeof id, c, NULL) != 0) {
        rmq_free(c);
        close(fd);
        lv->failed++;
        return NULL;
    }
    c->id = id;
    c->fd = fd;
    buf_init(&c->out, LIVE_MAX_OUT);
    rmq_frame_decoder_init(&c->dec, RMQ_FRAME_MAX_DEFAULT, 0);
    lv->opened++;
    return c;
}

/* Writes what the socket takes now. -1 when the connection is gone. */
static int flush_out(struct live *lv, struct lconn *c)
{
    while (buf_live(&c->out)) {
        ssize_t n = send(c->fd, buf_head(&c->out), buf_live(&c->out), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n <= 0) {
            lv->peer_closed++;
            return -1;
        }
        buf_consume(&c->out, (size_t)n);
    }
    buf_reset(&c->out);
    return 0;
}

/* Reads what is there and counts whole frames. -1 when the peer closed. */
static int read_in(struct live *lv, struct lconn *c)
{
    uint8_t tmp[65536];
    ssize_t n = recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0 || rmq_frame_decoder_feed(&c->dec, tmp, (size_t)n) != 0) {
        lv->peer_closed++;
        return -1;
    }
    for (;;) {
        struct rmq_cmd cmd;
        rmq_cmd_init(&cmd);
        int rc = rmq_frame_decoder_next(&c->dec, &cmd);
        if (rc == 0) {
            if (rmq_cmd_is_response(&cmd))
                lv->responses++;
            else if (cmd.code == RMQ_REQ_NOTIFY_CONSUMER_IDS_CHANGED)
                lv->notifies++;
        }
        rmq_cmd_clear(&cmd);
        if (rc == RMQ_EAGAIN)
            return 0;
        if (rc != 0) {
            lv->peer_closed++;
            return -1;
        }
    }
}

/* Polls every connection until deadline (monotonic ms), reading and writing. */
static void pump(struct live *lv, int64_t deadline)
{
    do {
        size_t n = 0, b;
        if (lv->pcap < lv->conns.count + 1) {
            size_t cap = lv->conns.count + 64;
            struct pollfd *p = rmq_realloc(lv->pfd, cap * sizeof *p);
            struct lconn **q = p ? rmq_realloc(lv->pc, cap * sizeof *q) : NULL;
            if (p)
                lv->pfd = p;
            if (!q)
                return;
            lv->pc = q;
            lv->pcap = cap;
        }
        for (struct hashmap_entry *e = hashmap_first(&lv->conns, &b); e;
             e = hashmap_next(&lv->conns, e, &b)) {
            struct lconn *c = e->val;
            lv->pfd[n] = (struct pollfd){c->fd, (short)(POLLIN | (buf_live(&c->out) ? POLLOUT : 0)), 0};
            lv->pc[n++] = c;
        }
        int64_t left = deadline - rmq_mono_ms();
        int r = poll(lv->pfd, n, left > 0 ? (int)(left < 1000 ? left : 1000) : 0);
        for (size_t i = 0; r > 0 && i < n; i++) {
            struct lconn *c = lv->pc[i];
            short re = lv->pfd[i].revents;
            if (((re & (POLLIN | POLLHUP | POLLERR)) && read_in(lv, c) != 0) ||
                ((re & POLLOUT) && flush_out(lv, c) != 0))
                lconn_free(lv, c);
        }
    } while (rmq_mono_ms() < deadline);
}

static void send_request(struct live *lv, const struct trace_event *ev)
{
    struct lconn *c = hashmap_get(&lv->conns, &ev->conn, sizeof ev->conn);
    if (!c && !(c = lconn_open(lv, ev->conn)))
        return;
    struct rmq_cmd cmd;
    rmq_cmd_init_request(&cmd, ev->code, ++c->opaque, ev->flag);
    cmd.language = ev->language;
    cmd.version = ev->cmd_version;
    int rc = ev->body_len ? rmq_cmd_set_body_copy(&cmd, ev->body, ev->body_len) : 0;
    for (size_t i = 0; rc == 0 && i < ev->next; i++)
        rc = rmq_cmd_ext_set(&cmd, ev->ext[i].key, ev->ext[i].val);
    if (rc == 0 && (rc = rmq_frame_encode(&cmd, &c->out)) == 0)
        lv->sent++;
    else
        lv->dropped++;
    rmq_cmd_clear(&cmd);
    if (flush_out(lv, c) != 0)
        lconn_free(lv, c);
}

static void on_event(struct live *lv, const struct trace_event *ev)
{
    struct lconn *c;
    switch (ev->kind) {
    case TRACE_CONNECT:
        if (!hashmap_get(&lv->conns, &ev->conn, sizeof ev->conn))
            lconn_open(lv, ev->conn);
        break;
    case TRACE_REQUEST: send_request(lv, ev); break;
    case TRACE_CLOSE:
        if ((c = hashmap_get(&lv->conns, &ev->conn, sizeof ev->conn)) != NULL) {
            flush_out(lv, c); /* best effort: what the socket takes now, then close as recorded */
            lconn_free(lv, c);
        }
        break;
    default: break; /* header, notify, route: the daemon's side */
    }
}

static int resolve(const char *target, struct addrinfo **out)
{
    char host[256];
    const char *colon = strrchr(target, ':');
    if (!colon || (size_t)(colon - target) >= sizeof host || !colon[1])
        return -1;
    memcpy(host, target, (size_t)(colon - target));
    host[colon - target] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    return getaddrinfo(host, colon + 1, &hints, out) == 0 ? 0 : -1;
}

/* Feeds every line at its scaled time; 0 or -1 after printing why. */
static int run(struct live *lv, const char *path, double speed)
{
    struct replay_reader r;
    struct trace_decoder d;
    trace_decoder_init(&d);
    int rc = replay_reader_open(&r, path), n;
    const char *line;
    size_t len;
    bool complete, first = true;
    int64_t t0 = 0, w0 = rmq_mono_ms();
    while (rc == 0 && (n = replay_reader_next(&r, &line, &len, &complete)) == 1) {
        struct trace_event ev;
        if (trace_decode_line(&d, line, len, r.lineno, &ev) != 0) {
            if (!complete)
                break; /* a truncated last line */
            fprintf(stderr, "rmqcoord replay: %s: %s\n", path, d.error);
            rc = -1;
            break;
        }
        lv->lines++;
        if (first)
            t0 = ev.ts, first = false;
        pump(lv, w0 + (int64_t)((double)(ev.ts - t0) / speed));
        on_event(lv, &ev);
    }
    if (rc == 0 && n < 0) {
        fprintf(stderr, "rmqcoord replay: %s: %s\n", path, rmq_strerror(n));
        rc = -1;
    }
    replay_reader_close(&r);
    trace_decoder_free(&d);
    return rc;
}

int replay_live_run(const char *path, const char *target, double speed, size_t max_conns, FILE *summary)
{
    struct live lv;
    memset(&lv, 0, sizeof lv);
    lv.max_conns = max_conns;
    if (resolve(target, &lv.ai) != 0) {
        fprintf(stderr, "rmqcoord replay: cannot resolve target %s (HOST:PORT)\n", target);
        return -1;
    }
    hashmap_init(&lv.conns);
    int64_t start = rmq_mono_ms();
    int rc = run(&lv, path, speed);
    pump(&lv, rmq_mono_ms() + 500); /* let the last replies and NOTIFYs arrive */
    size_t b;
    struct hashmap_entry *e;
    while ((e = hashmap_first(&lv.conns, &b)) != NULL)
        lconn_free(&lv, e->val);
    hashmap_free(&lv.conns, NULL);
    freeaddrinfo(lv.ai);
    rmq_free(lv.pfd);
    rmq_free(lv.pc);
    fprintf(
        summary,
        "replay live: target %s speed %g: %llu line(s), %llu connection(s) opened, %llu failed, %llu skipped "
        "(limit %zu); %llu request(s) sent, %llu dropped; %llu response(s), %llu NOTIFY received; %llu "
        "closed "
        "by the daemon; %.3f s\n",
        target, speed, (unsigned long long)lv.lines, (unsigned long long)lv.opened,
        (unsigned long long)lv.failed, (unsigned long long)lv.skipped, max_conns, (unsigned long long)lv.sent,
        (unsigned long long)lv.dropped, (unsigned long long)lv.responses, (unsigned long long)lv.notifies,
        (unsigned long long)lv.peer_closed, (double)(rmq_mono_ms() - start) / 1000.0);
    return rc;
}
