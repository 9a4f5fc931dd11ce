/* replay_live.c — see replay_live.h.
 *
 * The trace drives one timer on one loop: each firing applies the lines
 * that are due, at most LIVE_BATCH of them, so the replies and NOTIFYs the
 * daemon sends are read between batches and it never sees a stalled
 * reader; then it sets the timer for the next line. Each recorded channel
 * is a connection of the remoting client (client/remoting_client.h),
 * opened at its connect line (or first request) and closed at its close
 * line. Requests go out as JSON header frames (the recorded code, language,
 * version, flag, extFields and body; fresh opaques per connection). notify
 * and route lines are the daemon's own output and are skipped. The
 * daemon's own requests (NOTIFY and the rest) are counted, not answered. A
 * channel the daemon closes is not reconnected: a later line of it opens a
 * new connection. Bounded: max_conns channels, RCLIENT_MAX_OUTPUT queued
 * bytes per connection (frames past it are dropped and counted).
 */
#include "replay_live.h"

#include "clocks.h"
#include "err.h"
#include "hashmap.h"
#include "loop.h"
#include "mem.h"
#include "remoting_client.h"
#include "replay_io.h"
#include "request_codes.h"
#include "trace_fmt.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

/* Lines applied per timer firing before the sockets get a turn. */
#define LIVE_BATCH 256
/* After the last line: time for the last replies and NOTIFYs to arrive. */
#define LIVE_DRAIN_MS 500
/* A reply is counted whenever it comes before the replay ends, so requests
 * never time out within any replay that finishes (a week). */
#define LIVE_REPLY_WAIT_MS ((int64_t)7 * 24 * 3600 * 1000)

struct live;

/* One recorded channel: one connection. */
struct chan {
    struct live *lv;
    uint64_t id;
    struct rclient_conn *c; /* owned by lv->net */
    int32_t opaque;         /* the connection's request numbers */
    bool up;
    uint64_t queued; /* requests counted as sent before the connect completed */
};

struct live {
    const char *path, *target;
    double speed;
    size_t max_conns;
    struct loop *loop;
    struct rclient *net;
    struct hashmap chans; /* id -> struct chan* (owned) */
    struct replay_reader r;
    struct trace_decoder d;
    struct trace_event ev; /* the next line, borrowed from r and d */
    bool draining;
    int64_t t0, w0; /* the first line's ts, and when it was applied */
    int rc;
    uint64_t opened, failed, skipped, sent, dropped, responses, notifies, peer_closed, lines;
};

/* Forgets ch; its connection closes before the loop sleeps. */
static void chan_close(struct chan *ch)
{
    (void)hashmap_remove(&ch->lv->chans, &ch->id, sizeof ch->id);
    rclient_conn_close(ch->c);
    rmq_free(ch);
}

static void on_up(void *ctx, struct rclient_conn *c, bool reconnected)
{
    (void)c;
    (void)reconnected;
    struct chan *ch = ctx;
    ch->up = true;
    ch->queued = 0;
}

/* The daemon closed the channel, or the connect failed: a failed connect
 * counts as no connection, and what was queued on it as never sent. */
static void on_down(void *ctx, struct rclient_conn *c, bool was_up, const char *why)
{
    (void)c;
    (void)why;
    struct chan *ch = ctx;
    struct live *lv = ch->lv;
    assert(!was_up || ch->queued == 0); /* the connect completed: nothing counted as queued */
    if (was_up) {
        lv->peer_closed++;
    } else {
        assert(lv->opened > 0 && lv->sent >= ch->queued); /* it was opened and its queue counted sent */
        lv->opened--;
        lv->failed++;
        lv->sent -= ch->queued;
    }
    chan_close(ch);
}

static void on_request(void *ctx, struct rclient_conn *c, const struct rmq_cmd *req)
{
    (void)c;
    struct chan *ch = ctx;
    if (req->code == RMQ_REQ_NOTIFY_CONSUMER_IDS_CHANGED)
        ch->lv->notifies++;
}

static void on_reply(void *ctx, int status, const struct rmq_cmd *resp)
{
    (void)resp;
    struct live *lv = ctx;
    if (status == 0)
        lv->responses++;
}

static struct chan *chan_open(struct live *lv, uint64_t id)
{
    if (lv->chans.count >= lv->max_conns) {
        lv->skipped++;
        return NULL;
    }
    struct chan *ch = rmq_calloc(1, sizeof *ch);
    if (!ch) {
        lv->failed++;
        return NULL;
    }
    *ch = (struct chan){.lv = lv, .id = id, .opaque = 1};
    struct rclient_conn_handler h = {.on_request = on_request, .on_up = on_up, .ctx = ch, .on_down = on_down};
    if (rclient_conn_new(lv->net, lv->target, &h, &ch->opaque, &ch->c) != 0) {
        rmq_free(ch);
        lv->failed++;
        return NULL;
    }
    if (rclient_conn_connect(ch->c) != 0 || hashmap_put(&lv->chans, &ch->id, sizeof ch->id, ch, NULL) != 0) {
        rclient_conn_close(ch->c);
        rmq_free(ch);
        lv->failed++;
        return NULL;
    }
    lv->opened++;
    assert(lv->chans.count <= lv->max_conns);
    return ch;
}

static void send_request(struct live *lv, const struct trace_event *ev)
{
    struct chan *ch = hashmap_get(&lv->chans, &ev->conn, sizeof ev->conn);
    if (!ch && !(ch = chan_open(lv, ev->conn)))
        return;
    struct rmq_cmd cmd;
    rmq_cmd_init_request(&cmd, ev->code, 0, ev->flag);
    cmd.language = ev->language;
    cmd.version = ev->cmd_version;
    int rc = ev->body_len ? rmq_cmd_set_body_copy(&cmd, ev->body, ev->body_len) : 0;
    for (size_t i = 0; rc == 0 && i < ev->next; i++)
        rc = rmq_cmd_ext_set(&cmd, ev->ext[i].key, ev->ext[i].val);
    if (rc == 0)
        rc = (ev->flag & RMQ_FLAG_ONEWAY)
                 ? rclient_conn_oneway(ch->c, &cmd)
                 : rclient_conn_request(ch->c, &cmd, LIVE_REPLY_WAIT_MS, 0, on_reply, lv);
    if (rc == 0) {
        lv->sent++;
        ch->queued += !ch->up;
        assert(ch->queued <= lv->sent);
    } else {
        lv->dropped++;
    }
    rmq_cmd_clear(&cmd);
}

static void apply(struct live *lv, const struct trace_event *ev)
{
    struct chan *ch;
    switch (ev->kind) {
    case TRACE_CONNECT:
        if (!hashmap_get(&lv->chans, &ev->conn, sizeof ev->conn))
            (void)chan_open(lv, ev->conn);
        break;
    case TRACE_REQUEST: send_request(lv, ev); break;
    case TRACE_CLOSE:
        if ((ch = hashmap_get(&lv->chans, &ev->conn, sizeof ev->conn)) != NULL)
            chan_close(ch);
        break;
    default: break; /* header, notify, route: the daemon's side */
    }
}

/* Reads and decodes the next line into lv->ev: true, or false at the end
 * (a truncated last line ends it quietly; an error is printed and sets
 * lv->rc). */
static bool next_line(struct live *lv)
{
    const char *line;
    size_t len;
    bool complete;
    int n = replay_reader_next(&lv->r, &line, &len, &complete);
    if (n < 0) {
        fprintf(stderr, "rmqcoord replay: %s: %s\n", lv->path, rmq_strerror(n));
        lv->rc = -1;
    }
    if (n != 1)
        return false;
    if (trace_decode_line(&lv->d, line, len, lv->r.lineno, &lv->ev) != 0) {
        if (complete) {
            fprintf(stderr, "rmqcoord replay: %s: %s\n", lv->path, lv->d.error);
            lv->rc = -1;
        }
        return false;
    }
    if (lv->lines++ == 0)
        lv->t0 = lv->ev.ts;
    return true;
}

/* The trace timer: applies the due lines, then waits for the next one;
 * after the last, waits LIVE_DRAIN_MS and stops the loop. */
static void on_timer(struct loop *l, int id, void *ctx)
{
    struct live *lv = ctx;
    if (lv->draining) {
        loop_stop(l);
        return;
    }
    assert(lv->lines > 0); /* a line is read before the timer can apply it */
    for (int i = 0; i < LIVE_BATCH; i++) {
        int64_t due = lv->w0 + (int64_t)((double)(lv->ev.ts - lv->t0) / lv->speed);
        if (due > rmq_mono_ms()) {
            loop_timer_set(l, id, due);
            return;
        }
        apply(lv, &lv->ev);
        if (!next_line(lv)) {
            lv->draining = true;
            loop_timer_set(l, id, rmq_mono_ms() + LIVE_DRAIN_MS);
            return;
        }
    }
    loop_timer_set(l, id, loop_now_ms(l)); /* more lines are due: after a turn of I/O */
}

/* No rclient_tick: nothing expires within a replay and lost channels are
 * closed, not reconnected. */
static void before_sleep(struct loop *l, void *ctx)
{
    (void)l;
    rclient_before_sleep(((struct live *)ctx)->net);
}

/* Sets up the loop and the client and reads the first line. 0, or -1
 * after printing why. */
static int live_start(struct live *lv)
{
    int rc = loop_new(&lv->loop);
    if (rc == 0)
        rc = rclient_new(lv->loop, &lv->net);
    if (rc != 0) {
        fprintf(stderr, "rmqcoord replay: %s\n", rmq_strerror(rc));
        return -1;
    }
    /* A connection that is never used checks the target up front. */
    int32_t opaque = 0;
    struct rclient_conn_handler none = {.ctx = NULL};
    struct rclient_conn *probe;
    if (rclient_conn_new(lv->net, lv->target, &none, &opaque, &probe) != 0) {
        fprintf(stderr, "rmqcoord replay: cannot resolve target %s (HOST:PORT)\n", lv->target);
        return -1;
    }
    rclient_conn_close(probe);
    if ((rc = replay_reader_open(&lv->r, lv->path)) != 0) {
        fprintf(stderr, "rmqcoord replay: %s: %s\n", lv->path,
                rc == RMQ_EIO ? strerror(errno) : rmq_strerror(rc));
        lv->rc = -1;
        return 0;
    }
    lv->w0 = rmq_mono_ms();
    lv->draining = !next_line(lv);
    rc = loop_add_timer(lv->loop, lv->draining ? LIVE_DRAIN_MS : 0, LIVE_DRAIN_MS, on_timer, lv, NULL);
    if (rc == 0)
        loop_set_before_sleep(lv->loop, before_sleep, lv);
    return rc == 0 ? 0 : -1;
}

static void live_free(struct live *lv)
{
    rclient_free(lv->net); /* first: its pending replies still count into lv */
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&lv->chans, &b); e; e = hashmap_next(&lv->chans, e, &b))
        rmq_free(e->val);
    hashmap_free(&lv->chans, NULL);
    replay_reader_close(&lv->r);
    trace_decoder_free(&lv->d);
    loop_free(lv->loop);
}

int replay_live_run(const char *path, const char *target, double speed, size_t max_conns, FILE *summary)
{
    struct live lv = {.path = path, .target = target, .speed = speed, .max_conns = max_conns};
    hashmap_init(&lv.chans);
    trace_decoder_init(&lv.d);
    int64_t start = rmq_mono_ms();
    int rc = live_start(&lv);
    if (rc != 0) {
        live_free(&lv);
        return -1;
    }
    if (lv.rc == 0 && (rc = loop_run(lv.loop)) != 0) {
        fprintf(stderr, "rmqcoord replay: %s\n", rmq_strerror(rc));
        lv.rc = -1;
    }
    live_free(&lv);
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
    return lv.rc;
}
