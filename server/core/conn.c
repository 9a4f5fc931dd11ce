/* conn.c — see conn.h. Loop thread only. */
#include "conn.h"

#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "net.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* How much one readable event may read before other connections get a
 * turn, unless the set's options say otherwise. */
#define READ_BUDGET (256u * 1024u)
/* Input and output buffers larger than this are freed once empty (see
 * dispatch_frames and write_out). */
#define CONN_KEEP_OUTPUT_BYTES 1024u

struct conn_set {
    struct loop *loop;
    struct conn_set_options opt;
    struct conn *all;
    struct conn *flush_head;
    struct conn *flushing; /* the rest of the flush list conn_set_flush is writing */
    struct conn *close_head;
    struct conn *reaping; /* the rest of the batch conn_set_reap is freeing */
    size_t count;
    uint64_t bad_frames;
    struct conn_budget_stats budget; /* bytes held now, closes at a budget */
};

/* The invariants of c alone, O(1): asserted at the end of every mutator of
 * one connection (the set-wide conn_set_sanity walks, so it runs at the
 * end of the set's own mutators, once or so per loop turn). */
static void conn_check(const struct conn *c)
{
    const struct conn_set *s = c->set;
    assert(s && c->fd >= 0 && s->count > 0);
    assert(c->prev ? c->prev->next == c : s->all == c);
    assert(!c->next || c->next->prev == c);
    assert(!c->connecting || (c->dialed && c->write_armed));
    assert(!c->bulk || !c->dialed);
    assert(c->out_counted == buf_live(&c->out));
    assert(c->out_counted <= s->budget.output_bytes && c->in_counted <= s->budget.input_bytes);
    assert(!c->closing || c->close_reason[0]);
    (void)s;
}

/* A connection holding less than this is never closed for a global budget:
 * the budget is spent by the big holders (a client that stopped reading, a
 * peer stalling a huge frame), not by the ones that happen to come next. */
#define CONN_BUDGET_FLOOR (64u * 1024u)

/* Brings the set's totals in line with c's buffers (call after any change
 * to c->out or c->dec.in). */
static void account(struct conn *c)
{
    struct conn_budget_stats *b = &c->set->budget;
    size_t in = buf_live(&c->dec.in), out = buf_live(&c->out);
    b->input_bytes = b->input_bytes - c->in_counted + in;
    b->output_bytes = b->output_bytes - c->out_counted + out;
    c->in_counted = in;
    c->out_counted = out;
}

/* Closes c when the set is over a global budget and c is one of the big
 * holders; true when it did. */
static bool over_budget(struct conn *c)
{
    struct conn_set *s = c->set;
    if (s->opt.max_buffered_output && s->budget.output_bytes > s->opt.max_buffered_output &&
        buf_live(&c->out) > CONN_BUDGET_FLOOR) {
        s->budget.output_closes++;
        conn_close_async(c,
                         "output budget of the daemon exhausted (--max-buffered-output; client not reading)");
        return true;
    }
    if (s->opt.max_buffered_input && s->budget.input_bytes > s->opt.max_buffered_input &&
        buf_live(&c->dec.in) > CONN_BUDGET_FLOOR) {
        s->budget.input_closes++;
        conn_close_async(c, "input budget of the daemon exhausted (--max-buffered-input; partial frame)");
        return true;
    }
    return false;
}

int conn_set_new(struct loop *loop, const struct conn_set_options *opt, struct conn_set **out)
{
    struct conn_set *s = rmq_calloc(1, sizeof *s);
    if (!s)
        return RMQ_ENOMEM;
    s->loop = loop;
    s->opt = *opt;
    if (!s->opt.read_budget)
        s->opt.read_budget = READ_BUDGET;
    assert(s->opt.on_frame);
    conn_set_sanity(s);
    *out = s;
    return RMQ_OK;
}

size_t conn_set_count(const struct conn_set *s)
{
    return s->count;
}

uint64_t conn_set_bad_frames(const struct conn_set *s)
{
    return s->bad_frames;
}

const struct conn_budget_stats *conn_set_budget(const struct conn_set *s)
{
    return &s->budget;
}
struct conn *conn_set_first(struct conn_set *s)
{
    return s->all;
}

static void queue_flush(struct conn *c)
{
    if (c->in_flush_list)
        return;
    c->in_flush_list = true;
    c->next_flush = c->set->flush_head;
    c->set->flush_head = c;
}

void conn_close_async(struct conn *c, const char *reason)
{
    assert(reason && reason[0]);
    if (c->closing)
        return;
    c->closing = true;
    snprintf(c->close_reason, sizeof c->close_reason, "%s", reason);
    c->next_close = c->set->close_head;
    c->set->close_head = c;
    conn_check(c);
}

/* Closes c for a failed socket call: "<what> error: <why>" on an accepted
 * connection, the bare error on a dialed one (what its owner reports). */
static void close_errno(struct conn *c, const char *what, int err)
{
    char why[96];
    if (c->dialed)
        snprintf(why, sizeof why, "%s", strerror(err));
    else
        snprintf(why, sizeof why, "%s error: %s", what, strerror(err));
    conn_close_async(c, why);
}

void conn_drop_output(struct conn *c)
{
    buf_reset(&c->out);
    account(c);
    conn_check(c);
}

/* After bytes were appended to c->out: counts them against the budget
 * (closing c if it is one of the big holders past it) or queues the flush. */
static int queued(struct conn *c)
{
    account(c);
    if (over_budget(c))
        return RMQ_E2BIG;
    queue_flush(c);
    conn_check(c);
    return RMQ_OK;
}

int conn_send_bytes(struct conn *c, const uint8_t *p, size_t n)
{
    if (c->closing)
        return RMQ_ESTATE;
    int rc = buf_append(&c->out, p, n);
    if (rc != 0) {
        conn_close_async(c, rc == RMQ_E2BIG ? "output limit reached (client not reading)" : "out of memory");
        return rc;
    }
    return queued(c);
}

/* Encodes cmd after c's queued output; on failure drops the partly
 * encoded frame, so the stream stays aligned. */
static int encode(struct conn *c, const struct rmq_cmd *cmd)
{
    size_t before = buf_live(&c->out);
    int rc = rmq_frame_encode(cmd, &c->out);
    if (rc != 0)
        c->out.len = c->out.pos + before;
    assert(rc != 0 || buf_live(&c->out) > before);
    return rc;
}

int conn_send(struct conn *c, const struct rmq_cmd *cmd)
{
    if (c->closing)
        return RMQ_ESTATE;
    int rc = encode(c, cmd);
    if (rc != 0) {
        conn_close_async(c, rc == RMQ_E2BIG ? "output limit reached (client not reading)" : "encode failed");
        return rc;
    }
    return queued(c);
}

int conn_try_send(struct conn *c, const struct rmq_cmd *cmd)
{
    if (c->closing)
        return RMQ_ESTATE;
    int rc = encode(c, cmd);
    return rc != 0 ? rc : queued(c);
}

/* Decodes and dispatches every complete frame; closes on a framing error. */
static void dispatch_frames(struct conn *c)
{
    struct conn_set *s = c->set;
    while (!c->closing) {
        struct rmq_cmd cmd;
        rmq_cmd_init(&cmd);
        int rc = rmq_frame_decoder_next(&c->dec, &cmd);
        if (rc == RMQ_EAGAIN) {
            /* Nothing partial left: an idle connection keeps no input
             * buffer (a 10-group heartbeat is ~3 KB; 10,000 idle clients
             * would hold 30 MB). Reallocating per read costs far less than
             * the read itself. */
            if (buf_live(&c->dec.in) == 0 && c->dec.in.alloc > CONN_KEEP_OUTPUT_BYTES)
                buf_free(&c->dec.in);
            return;
        }
        if (rc != 0) {
            char why[200];
            snprintf(why, sizeof why, "bad frame: %s", c->dec.error[0] ? c->dec.error : rmq_strerror(rc));
            if (!c->dialed) /* a dialed connection's owner reports its own losses */
                log_warn("connection %s closed: %s", c->peer, why);
            s->bad_frames++;
            conn_close_async(c, why);
            rmq_cmd_clear(&cmd);
            return;
        }
        c->last_frame_ms = loop_now_ms(s->loop);
        c->frames_in_event++;
        s->opt.on_frame(s->opt.ctx, c, &cmd);
        rmq_cmd_clear(&cmd);
    }
}

/* Feeds received bytes and dispatches as it goes, so a frame-limit error
 * fires before more is buffered. Non-zero stops reading. */
static int feed(void *ctx, const uint8_t *p, size_t n)
{
    struct conn *c = ctx;
    if (rmq_frame_decoder_feed(&c->dec, p, n) != 0) {
        conn_close_async(c, "out of memory");
        return RMQ_ENOMEM;
    }
    dispatch_frames(c);
    account(c);
    if (!c->closing)
        (void)over_budget(c);
    return c->closing ? RMQ_ESTATE : 0;
}

/* A connection whose readable event carried several frames, all of a kind
 * the owner marked bulk (c->bulk_frames_in_event: heartbeats), goes to the
 * loop's bulk set, so a connection asking one query at a time is never
 * stuck behind a whole cycle of them. Any other frame brings it back at
 * once; so do CONN_CALM_EVENTS single-frame events in a row. Classifying by
 * frame count alone misfired: a query client whose requests queued up
 * while it waited looked like a bulk sender and was then served last. */
#define CONN_CALM_EVENTS 8

static void classify(struct conn *c)
{
    if (c->dialed)
        return; /* the bulk set is for the daemon's clients, not its own links */
    bool bulk = c->bulk;
    if (c->bulk_frames_in_event < c->frames_in_event) {
        bulk = false;
    } else if (c->frames_in_event > 1) {
        bulk = true;
        c->calm_events = 0;
    } else if (bulk && c->frames_in_event == 1 && ++c->calm_events >= CONN_CALM_EVENTS) {
        bulk = false;
    }
    if (bulk != c->bulk && loop_set_bulk(c->set->loop, c->fd, bulk) == 0)
        c->bulk = bulk;
}

static void on_readable(struct conn *c)
{
    c->frames_in_event = c->bulk_frames_in_event = 0;
    int rc = net_read_into(c->fd, c->set->opt.read_budget, feed, c);
    if (rc == 1) {
        dispatch_frames(c);
        conn_close_async(c, "peer closed the connection");
    } else if (rc < 0 && rc != -EAGAIN && rc > RMQ_EAGAIN) {
        close_errno(c, "read", -rc);
    }
}

/* Writes queued output; 0 when drained, RMQ_EAGAIN when the socket is full. */
static int write_out(struct conn *c)
{
    assert(!c->connecting && !c->closing);
    int rc = net_write_buf(c->fd, &c->out);
    account(c);
    if (rc == 0) {
        /* Drained: a burst (NOTIFYs, a big consumer list) must not stay
         * allocated on an idle connection; small buffers are kept so a
         * steady request stream does not allocate per reply. */
        if (c->out.alloc > CONN_KEEP_OUTPUT_BYTES)
            buf_free(&c->out);
        account(c);
        return RMQ_OK;
    }
    if (rc == -EAGAIN)
        return RMQ_EAGAIN;
    close_errno(c, "write", -rc);
    return RMQ_EIO;
}

static void set_write_interest(struct conn *c, bool want)
{
    if (c->write_armed == want)
        return;
    if (loop_mod_fd(c->set->loop, c->fd, LOOP_READ | (want ? LOOP_WRITE : 0)) == 0)
        c->write_armed = want;
    else
        conn_close_async(c, "epoll modify failed");
}

/* A dialed connection's connect ended (writable or error): open, with its
 * queued output flushed before sleep, or closed with the reason. */
static void finish_connect(struct conn *c)
{
    assert(c->dialed && c->connecting && c->write_armed);
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        conn_close_async(c, strerror(err));
        return;
    }
    c->connecting = false;
    set_write_interest(c, false);
    if (c->closing)
        return;
    if (buf_live(&c->out) > 0)
        queue_flush(c); /* conn_set_flush passed over it while connecting */
    if (c->set->opt.on_open)
        c->set->opt.on_open(c->set->opt.ctx, c);
}

static void on_event(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    (void)fd;
    struct conn *c = ctx;
    assert(c->fd == fd);
    if (c->closing)
        return;
    if (c->connecting) {
        if (events & (LOOP_WRITE | LOOP_ERROR))
            finish_connect(c);
        conn_check(c);
        return;
    }
    if (events & LOOP_WRITE) {
        if (write_out(c) == RMQ_OK)
            set_write_interest(c, false);
    }
    if (events & LOOP_READ) {
        on_readable(c);
        /* Answer now rather than after every other ready connection has
         * been served: it costs no extra write, and a cheap query is not
         * kept waiting behind a burst of heartbeats on other sockets. */
        if (!c->closing && !c->write_armed && !c->hold_output && !c->set->opt.defer_output &&
            buf_live(&c->out) > 0)
            set_write_interest(c, write_out(c) == RMQ_EAGAIN);
        if (!c->closing)
            classify(c);
    }
    conn_check(c);
}

/* Makes fd a connection of s, watched for events (plus writability while
 * dialing). 0 or an error (fd closed). */
static int add_conn(struct conn_set *s, int fd, bool dialed, uint64_t id, const char *peer, int64_t now_ms,
                    struct conn **out)
{
    assert(fd >= 0 && peer);
    struct conn *c = rmq_calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return RMQ_ENOMEM;
    }
    c->fd = fd;
    c->id = id;
    c->set = s;
    c->opened_ms = now_ms;
    c->last_frame_ms = now_ms;
    c->dialed = c->connecting = c->write_armed = dialed;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    rmq_frame_decoder_init(&c->dec, s->opt.max_frame, s->opt.max_header);
    buf_init(&c->out, s->opt.max_output);
    int rc = loop_add_fd(s->loop, fd, LOOP_READ | (dialed ? LOOP_WRITE : 0), on_event, c);
    if (rc != 0) {
        rmq_frame_decoder_free(&c->dec);
        close(fd);
        rmq_free(c);
        return rc;
    }
    c->next = s->all;
    if (s->all)
        s->all->prev = c;
    s->all = c;
    s->count++;
    if (out)
        *out = c;
    conn_set_sanity(s);
    return RMQ_OK;
}

int conn_set_adopt(struct conn_set *s, int fd, uint64_t id, const char *peer, int64_t now_ms,
                   struct conn **out)
{
    return add_conn(s, fd, false, id, peer, now_ms, out);
}

int conn_set_dial(struct conn_set *s, const struct sockaddr *sa, socklen_t salen, uint64_t id,
                  const char *peer, int64_t now_ms, struct conn **out)
{
    int fd = net_connect(sa, salen);
    if (fd < 0)
        return fd;
    return add_conn(s, fd, true, id, peer, now_ms, out);
}

void conn_set_flush(struct conn_set *s)
{
    assert(!s->flushing);
    s->flushing = s->flush_head;
    s->flush_head = NULL;
    struct conn *c;
    while ((c = s->flushing) != NULL) {
        s->flushing = c->next_flush;
        c->in_flush_list = false;
        c->hold_output = false;
        /* Armed: the socket is full, or (dialing) the connect is still
         * under way; the writable event writes. */
        if (!c->closing && !c->write_armed)
            set_write_interest(c, write_out(c) == RMQ_EAGAIN);
    }
    conn_set_sanity(s);
}

static void free_conn(struct conn_set *s, struct conn *c)
{
    assert(c->closing && c->set == s);
    if (s->opt.on_close)
        s->opt.on_close(s->opt.ctx, c);
    /* Best effort: an error reply queued just before closing should still
     * reach the peer (on a dialed socket, if the kernel completed the
     * connect meanwhile). */
    if (buf_live(&c->out) > 0)
        (void)!send(c->fd, buf_head(&c->out), buf_live(&c->out), MSG_NOSIGNAL);
    loop_del_fd(s->loop, c->fd);
    close(c->fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->all = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->count--;
    rmq_frame_decoder_free(&c->dec);
    buf_free(&c->out);
    account(c);
    rmq_free(c);
}

size_t conn_set_reap(struct conn_set *s)
{
    assert(!s->reaping && !s->flushing);
    size_t freed = 0;
    /* on_close may close other connections (e.g. expiry); loop until quiet. */
    while (s->close_head) {
        s->reaping = s->close_head;
        s->close_head = NULL;
        struct conn *c;
        while ((c = s->reaping) != NULL) {
            struct conn *next = c->next_close;
            if (c->in_flush_list) {
                /* Unlink from the flush list before freeing. */
                struct conn **pp = &s->flush_head;
                while (*pp && *pp != c)
                    pp = &(*pp)->next_flush;
                if (*pp)
                    *pp = c->next_flush;
            }
            free_conn(s, c);
            s->reaping = next;
            freed++;
        }
    }
    conn_set_sanity(s);
    return freed;
}

void conn_set_free(struct conn_set *s)
{
    if (!s)
        return;
    for (struct conn *c = s->all; c; c = c->next)
        if (!c->closing)
            conn_close_async(c, "server shutting down");
    conn_set_reap(s);
    assert(s->count == 0 && !s->all && s->budget.input_bytes == 0 && s->budget.output_bytes == 0);
    rmq_free(s);
}

/* Full walks past this many connections would make a debug build
 * quadratic in them. */
#define CONN_SANITY_FULL_MAX 64

void conn_set_sanity(const struct conn_set *s)
{
#ifndef NDEBUG
    assert((s->all == NULL) == (s->count == 0));
    assert(!s->all || !s->all->prev);
    assert(!s->flush_head || s->flush_head->in_flush_list);
    assert(!s->close_head || s->close_head->closing);
    if (s->count > CONN_SANITY_FULL_MAX)
        return;
    size_t n = 0, closing = 0, flushing = 0, in = 0, out = 0;
    for (const struct conn *c = s->all; c; c = c->next) {
        assert(++n <= s->count);
        assert(c->set == s && c->fd >= 0);
        assert(!c->next || c->next->prev == c);
        assert(!c->connecting || (c->dialed && c->write_armed));
        assert(!c->bulk || !c->dialed);
        assert(c->out_counted == buf_live(&c->out));
        closing += c->closing;
        flushing += c->in_flush_list;
        in += c->in_counted;
        out += c->out_counted;
    }
    assert(n == s->count);
    assert(in == s->budget.input_bytes && out == s->budget.output_bytes);
    /* The closing ones are each once in the reap list (or the batch being
     * reaped); the queued ones once in the flush list (or the batch being
     * flushed). */
    size_t listed = 0;
    for (const struct conn *h = s->close_head; h; h = h->next_close, listed++)
        assert(h->closing && listed < n);
    for (const struct conn *h = s->reaping; h; h = h->next_close, listed++)
        assert(h->closing && listed < n);
    assert(listed == closing);
    listed = 0;
    for (const struct conn *h = s->flush_head; h; h = h->next_flush, listed++)
        assert(h->in_flush_list && listed < n);
    for (const struct conn *h = s->flushing; h; h = h->next_flush, listed++)
        assert(h->in_flush_list && listed < n);
    assert(listed == flushing);
#else
    (void)s;
#endif
}
