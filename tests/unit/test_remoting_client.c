/* test_remoting_client.c — server/client/remoting_client.c over real
 * loopback sockets: several independent connections to one address, the
 * owner's close (pending requests cancelled, queued output still sent, no
 * reconnect), on_down for a peer close and for a refused connect, and the
 * reconnect an owner that keeps the connection gets. The peer is a small
 * server on the same loop: it answers every request with its own socket's
 * number in the remark, except code CODE_SILENT (no answer) and CODE_BYE
 * (it closes that socket). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buf.h"
#include "clocks.h"
#include "err.h"
#include "loop.h"
#include "remoting_client.h"
#include "remoting_frame.h"
#include "test_support.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CODE_ECHO 11
#define CODE_SILENT 12
#define CODE_BYE 13
#define MAX_PEERS 8
#define MAX_SEEN 16

/* One socket the server accepted. */
struct peer {
    int fd;
    bool eof;
    struct rmq_frame_decoder dec;
    int32_t seen[MAX_SEEN]; /* request codes, in arrival order */
    size_t nseen;
};

/* What one client connection's owner heard. */
struct owner {
    struct rclient_conn *c;
    bool close_on_down;
    int ups, reconnects, downs;
    bool down_was_up;
};

/* One request's outcome. */
struct outcome {
    bool done;
    int status;
    char remark[32];
};

struct fx;
/* A test is a list of steps run on the loop: each waits until wait(f)
 * holds (NULL: at once), then runs act(f), which may assert. */
struct step {
    bool (*wait)(const struct fx *f);
    void (*act)(struct fx *f);
};

struct fx {
    struct loop *l;
    struct rclient *net;
    int listen_fd;
    char addr[64];
    struct peer peers[MAX_PEERS];
    size_t npeers;
    int32_t opaque;
    const struct step *steps;
    size_t nsteps, at;
    int64_t deadline, mark;
    /* The test's own state. */
    struct owner o[2];
    struct outcome r[3];
    int pa, pb; /* the peer sockets of o[0] and o[1] */
};
static void peer_send(struct peer *p, const struct rmq_cmd *req, const char *remark)
{
    struct rmq_cmd resp;
    struct buf out;
    buf_init(&out, 0);
    assert_int_equal(rmq_cmd_init_response(&resp, req, 0, remark), 0);
    assert_int_equal(rmq_frame_encode(&resp, &out), 0);
    assert_int_equal(send(p->fd, buf_head(&out), buf_live(&out), MSG_NOSIGNAL), (ssize_t)buf_live(&out));
    rmq_cmd_clear(&resp);
    buf_free(&out);
}

static void peer_close(struct fx *f, struct peer *p)
{
    loop_del_fd(f->l, p->fd);
    close(p->fd);
    p->fd = -1;
    p->eof = true;
}

static void on_peer(struct loop *l, int fd, uint32_t events, void *ctx)
{
    struct fx *f = ctx;
    struct peer *p = NULL;
    for (size_t i = 0; i < f->npeers; i++)
        if (f->peers[i].fd == fd)
            p = &f->peers[i];
    assert_non_null(p);
    uint8_t chunk[4096];
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
        peer_close(f, p);
        return;
    }
    assert_int_equal(rmq_frame_decoder_feed(&p->dec, chunk, (size_t)n), 0);
    struct rmq_cmd req;
    rmq_cmd_init(&req);
    while (p->fd >= 0 && rmq_frame_decoder_next(&p->dec, &req) == 0) {
        assert_true(p->nseen < MAX_SEEN);
        p->seen[p->nseen++] = req.code;
        char remark[16];
        snprintf(remark, sizeof remark, "peer%zu", (size_t)(p - f->peers));
        if (req.code == CODE_BYE)
            peer_close(f, p);
        else if (req.code != CODE_SILENT && !rmq_cmd_is_oneway(&req))
            peer_send(p, &req, remark);
        rmq_cmd_clear(&req);
        rmq_cmd_init(&req);
    }
    rmq_cmd_clear(&req);
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *ctx)
{
    struct fx *f = ctx;
    int a = accept(fd, NULL, NULL);
    assert_true(a >= 0);
    assert_true(f->npeers < MAX_PEERS);
    struct peer *p = &f->peers[f->npeers++];
    p->fd = a;
    rmq_frame_decoder_init(&p->dec, RMQ_FRAME_MAX_DEFAULT, 0);
    assert_int_equal(loop_add_fd(l, a, LOOP_READ, on_peer, f), 0);
}

static void before_sleep(struct loop *l, void *ctx)
{
    rclient_before_sleep(((struct fx *)ctx)->net);
}

static void on_tick(struct loop *l, int id, void *ctx)
{
    rclient_tick(((struct fx *)ctx)->net);
}

/* A loopback socket on a port the kernel picks, listening unless backlog
 * is 0; "127.0.0.1:port" in f->addr. */
static int loopback_socket(struct fx *f, int backlog)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0 && bind(fd, (struct sockaddr *)&sa, len) == 0);
    assert_true(backlog == 0 || listen(fd, backlog) == 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(f->addr, sizeof f->addr, "127.0.0.1:%u", ntohs(sa.sin_port));
    return fd;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(loop_new(&f->l), 0);
    assert_int_equal(rclient_new(f->l, &f->net), 0);
    f->listen_fd = loopback_socket(f, 16);
    assert_int_equal(loop_add_fd(f->l, f->listen_fd, LOOP_READ, on_accept, f), 0);
    assert_int_equal(loop_add_timer(f->l, 10, 10, on_tick, f, NULL), 0);
    loop_set_before_sleep(f->l, before_sleep, f);
    f->opaque = 1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    rclient_free(f->net);
    for (size_t i = 0; i < f->npeers; i++) {
        if (f->peers[i].fd >= 0)
            close(f->peers[i].fd);
        rmq_frame_decoder_free(&f->peers[i].dec);
    }
    close(f->listen_fd);
    loop_free(f->l);
    free(f);
    return 0;
}

static void on_check(struct loop *l, int id, void *ctx)
{
    struct fx *f = ctx;
    while (f->at < f->nsteps && (!f->steps[f->at].wait || f->steps[f->at].wait(f))) {
        const struct step *s = &f->steps[f->at++];
        if (s->act)
            s->act(f);
    }
    if (f->at == f->nsteps || rmq_mono_ms() >= f->deadline)
        loop_stop(l);
}

/* Runs the steps (within 5 s) and asserts that each was reached. */
static void run_steps(struct fx *f, const struct step *steps, size_t n)
{
    f->steps = steps;
    f->nsteps = n;
    f->deadline = rmq_mono_ms() + 5000;
    assert_int_equal(loop_add_timer(f->l, 0, 1, on_check, f, NULL), 0);
    assert_int_equal(loop_run(f->l), 0);
    assert_int_equal(f->at, n);
}

static void on_up(void *ctx, struct rclient_conn *c, bool reconnected)
{
    struct owner *o = ctx;
    o->ups++;
    o->reconnects += reconnected;
}

static void on_down(void *ctx, struct rclient_conn *c, bool was_up, const char *why)
{
    struct owner *o = ctx;
    assert_non_null(why);
    o->downs++;
    o->down_was_up = was_up;
    if (o->close_on_down)
        rclient_conn_close(c);
}

static void on_reply(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct outcome *o = ctx;
    assert_false(o->done); /* exactly once */
    o->done = true;
    o->status = status;
    if (resp)
        snprintf(o->remark, sizeof o->remark, "%s", resp->remark ? resp->remark : "");
}

static void open_conn(struct fx *f, struct owner *o)
{
    struct rclient_conn_handler h = {.on_up = on_up, .ctx = o, .on_down = on_down};
    assert_int_equal(rclient_conn_new(f->net, f->addr, &h, &f->opaque, &o->c), 0);
}

static void request(struct owner *o, int32_t code, struct outcome *out)
{
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, code, 0, 0);
    memset(out, 0, sizeof *out);
    assert_int_equal(rclient_conn_request(o->c, &req, 5000, 0, on_reply, out), 0);
    rmq_cmd_clear(&req);
}

static void oneway(struct owner *o, int32_t code)
{
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, code, 0, 0);
    assert_int_equal(rclient_conn_oneway(o->c, &req), 0);
    rmq_cmd_clear(&req);
}

/* The peer socket that saw code first; -1 when none did. */
static int peer_of(const struct fx *f, int32_t code)
{
    for (size_t i = 0; i < f->npeers; i++)
        for (size_t k = 0; k < f->peers[i].nseen; k++)
            if (f->peers[i].seen[k] == code)
                return (int)i;
    return -1;
}

static bool two_peers(const struct fx *f)
{
    return f->npeers >= 2;
}

static bool one_peer(const struct fx *f)
{
    return f->npeers >= 1;
}

static bool r01_done(const struct fx *f)
{
    return f->r[0].done && f->r[1].done;
}

static bool r1_done(const struct fx *f)
{
    return f->r[1].done;
}

static bool pa_eof(const struct fx *f)
{
    return f->peers[f->pa].eof;
}

static bool peer0_eof(const struct fx *f)
{
    return f->npeers >= 1 && f->peers[0].eof;
}

static bool both_down(const struct fx *f)
{
    return f->o[0].downs > 0 && f->o[1].downs > 0;
}

static bool o1_reconnected(const struct fx *f)
{
    return f->o[1].reconnects > 0;
}

static bool o0_down(const struct fx *f)
{
    return f->o[0].downs > 0;
}

static bool mark_passed(const struct fx *f)
{
    return rmq_mono_ms() >= f->mark + 300;
}

/* Two connections to one address are two sockets: each request travels on
 * its own, in order, and each reply comes back to its own; closing one
 * cancels its pending request and leaves the other working. */
static void two_open(struct fx *f)
{
    open_conn(f, &f->o[0]);
    open_conn(f, &f->o[1]);
    assert_string_equal(rclient_conn_addr(f->o[0].c), rclient_conn_addr(f->o[1].c));
    assert_int_equal(rclient_conn_connect(f->o[0].c), 0);
    assert_int_equal(rclient_conn_connect(f->o[1].c), 0);
}

static void two_send(struct fx *f)
{
    assert_int_equal(f->npeers, 2);
    request(&f->o[0], CODE_ECHO, &f->r[0]);
    oneway(&f->o[1], CODE_SILENT);
    request(&f->o[1], CODE_ECHO, &f->r[1]);
}

static void two_check_and_close(struct fx *f)
{
    assert_int_equal(f->r[0].status, 0);
    assert_int_equal(f->r[1].status, 0);
    f->pb = peer_of(f, CODE_SILENT);
    assert_true(f->pb == 0 || f->pb == 1);
    f->pa = 1 - f->pb;
    assert_int_equal(f->peers[f->pb].nseen, 2); /* b's oneway, then b's request, on b's socket */
    assert_int_equal(f->peers[f->pb].seen[1], CODE_ECHO);
    assert_int_equal(f->peers[f->pa].nseen, 1);
    char want[16];
    snprintf(want, sizeof want, "peer%d", f->pa);
    assert_string_equal(f->r[0].remark, want);
    snprintf(want, sizeof want, "peer%d", f->pb);
    assert_string_equal(f->r[1].remark, want);
    assert_int_equal(rclient_stats(f->net)->connects, 2);
    request(&f->o[0], CODE_SILENT, &f->r[2]);
    assert_int_equal(rclient_pending(f->net), 1);
    rclient_conn_close(f->o[0].c);
}

static void two_after_close(struct fx *f)
{
    assert_true(f->r[2].done);
    assert_int_equal(f->r[2].status, -ECANCELED);
    assert_int_equal(rclient_pending(f->net), 0);
    assert_int_equal(f->o[0].downs, 0); /* the owner's close is not a loss */
    request(&f->o[1], CODE_ECHO, &f->r[1]);
}

static void two_last(struct fx *f)
{
    assert_int_equal(f->r[1].status, 0);
    assert_false(f->peers[f->pb].eof);
    assert_int_equal(f->npeers, 2); /* the closed one did not come back */
}

static void test_two_connections_one_address(void **state)
{
    static const struct step steps[] = {
        {NULL, two_open},          {two_peers, two_send}, {r01_done, two_check_and_close},
        {pa_eof, two_after_close}, {r1_done, two_last},
    };
    run_steps(*state, steps, sizeof steps / sizeof steps[0]);
}

/* A close right after a request, before the loop ever polled the new
 * socket: the request still reaches the peer (the loopback connect has
 * completed), then the socket closes. */
static void close_at_once(struct fx *f)
{
    open_conn(f, &f->o[0]);
    request(&f->o[0], CODE_SILENT, &f->r[0]);
    rclient_conn_close(f->o[0].c);
}

static void close_check(struct fx *f)
{
    assert_int_equal(f->peers[0].nseen, 1);
    assert_int_equal(f->peers[0].seen[0], CODE_SILENT);
    assert_true(f->r[0].done);
    assert_int_equal(f->r[0].status, -ECANCELED);
    assert_int_equal(f->o[0].ups, 0); /* no callback after the close */
}

static void test_close_sends_queued_output(void **state)
{
    static const struct step steps[] = {{NULL, close_at_once}, {one_peer, NULL}, {peer0_eof, close_check}};
    run_steps(*state, steps, sizeof steps / sizeof steps[0]);
}

/* The peer closes: the pending request fails, then on_down (was_up). An
 * owner that closes there gets no reconnect; one that keeps it does. */
static void peer_close_send(struct fx *f)
{
    f->o[0].close_on_down = true;
    for (int i = 0; i < 2; i++) {
        open_conn(f, &f->o[i]);
        request(&f->o[i], CODE_SILENT, &f->r[i]);
        oneway(&f->o[i], CODE_BYE);
    }
}

static void peer_close_down(struct fx *f)
{
    for (int i = 0; i < 2; i++) {
        assert_true(f->o[i].down_was_up);
        assert_int_equal(f->r[i].status, -ECONNRESET);
    }
}

static void peer_close_mark(struct fx *f)
{
    f->mark = rmq_mono_ms();
}

static void peer_close_check(struct fx *f)
{
    assert_int_equal(f->npeers, 3); /* past the backoff: only the kept one came back */
    assert_int_equal(f->o[0].reconnects, 0);
    assert_int_equal(f->o[0].downs, 1);
    assert_int_equal(rclient_stats(f->net)->disconnects, 2);
}

static void test_peer_close(void **state)
{
    static const struct step steps[] = {
        {NULL, peer_close_send},
        {both_down, peer_close_down},
        {o1_reconnected, peer_close_mark},
        {mark_passed, peer_close_check},
    };
    run_steps(*state, steps, sizeof steps / sizeof steps[0]);
}

/* Nothing listens: on_down with was_up false, or the connect fails at once. */
static void refused_open(struct fx *f)
{
    close(loopback_socket(f, 0)); /* a port nothing listens on */
    f->o[0].close_on_down = true;
    open_conn(f, &f->o[0]);
    int rc = rclient_conn_connect(f->o[0].c);
    if (rc != 0) {
        assert_int_equal(rc, -ECONNREFUSED);
        f->o[0].downs = 1; /* told by the return value instead */
        rclient_conn_close(f->o[0].c);
    }
}

static void refused_check(struct fx *f)
{
    assert_false(f->o[0].down_was_up);
    assert_int_equal(f->o[0].ups, 0);
    assert_int_equal(rclient_stats(f->net)->connects, 0);
}

static void test_refused(void **state)
{
    static const struct step steps[] = {{NULL, refused_open}, {o0_down, refused_check}};
    run_steps(*state, steps, sizeof steps / sizeof steps[0]);
}

/* Bad addresses are refused when the connection is made. */
static void test_bad_address(void **state)
{
    struct fx *f = *state;
    struct owner o = {0};
    struct rclient_conn_handler h = {.ctx = &o};
    assert_int_equal(rclient_conn_new(f->net, "no-port", &h, &f->opaque, &o.c), RMQ_EINVAL);
    assert_int_equal(rclient_conn_new(f->net, "127.0.0.1:", &h, &f->opaque, &o.c), RMQ_EINVAL);
}

/* A SYNC request that outlives its timeout fails once with -ETIMEDOUT and
 * closes the socket, as the Java client does: the other pending request
 * fails with -ECONNRESET and the owner hears of the loss. */
static void timeout_send(struct fx *f)
{
    open_conn(f, &f->o[0]);
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, CODE_SILENT, 0, 0);
    assert_int_equal(rclient_conn_request(f->o[0].c, &req, 50, SIM_REQ_SYNC, on_reply, &f->r[0]), 0);
    rmq_cmd_clear(&req);
    rmq_cmd_init_request(&req, CODE_SILENT, 0, 0);
    assert_int_equal(rclient_conn_request(f->o[0].c, &req, 5000, 0, on_reply, &f->r[1]), 0);
    rmq_cmd_clear(&req);
    assert_int_equal(rclient_pending(f->net), 2);
}

static void timeout_check(struct fx *f)
{
    assert_int_equal(f->r[0].status, -ETIMEDOUT);
    assert_true(f->r[1].done);
    assert_int_equal(f->r[1].status, -ECONNRESET);
    assert_true(f->o[0].down_was_up);
    assert_int_equal(rclient_pending(f->net), 0);
    assert_int_equal(rclient_stats(f->net)->timeouts, 1);
    assert_int_equal(rclient_stats(f->net)->disconnects, 1);
    rclient_conn_close(f->o[0].c);
}

static void test_sync_timeout(void **state)
{
    static const struct step steps[] = {{NULL, timeout_send}, {o0_down, timeout_check}};
    run_steps(*state, steps, sizeof steps / sizeof steps[0]);
}

TEST_MAIN(cmocka_unit_test_setup_teardown(test_two_connections_one_address, setup, teardown),
          cmocka_unit_test_setup_teardown(test_close_sends_queued_output, setup, teardown),
          cmocka_unit_test_setup_teardown(test_peer_close, setup, teardown),
          cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
          cmocka_unit_test_setup_teardown(test_bad_address, setup, teardown),
          cmocka_unit_test_setup_teardown(test_sync_timeout, setup, teardown))
