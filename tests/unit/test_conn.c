/* test_conn.c — server/core/conn.c with a dialed connection, over real
 * loopback sockets: one conn_set dials (conn_set_dial), another adopts what
 * a listener accepts, both on one loop. A refused connect closes the dialed
 * conn through the ordinary close path with a reason; frames travel both
 * ways (output queued while the connect is under way goes out once it
 * completes); every conn is reaped exactly once; conn_set_sanity holds
 * after every loop turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "clocks.h"
#include "conn.h"
#include "err.h"
#include "loop.h"
#include "mem.h"
#include "net.h"
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

#define CODE_PING 21
#define CODE_HELLO 22 /* the accepting side's own request to the dialer */

/* What one side's callbacks saw. */
struct side {
    struct conn_set *set;
    int opens, closes, requests, responses;
    bool closed_dialed, closed_connecting;
    char reason[200];
    char remark[32];
};

struct fx {
    struct loop *l;
    int listen_fd;
    struct sockaddr_in sa;
    struct side dial, accept;
    /* Called every millisecond on the loop until it returns true; may act
     * and assert. */
    bool (*done)(struct fx *f);
    bool met; /* done(f) held */
    int phase, turns;
    struct conn *c; /* the dialed conn of the test */
    int64_t deadline;
};

static void on_frame(void *ctx, struct conn *c, struct rmq_cmd *cmd)
{
    struct side *s = ctx;
    if (rmq_cmd_is_response(cmd)) {
        s->responses++;
        snprintf(s->remark, sizeof s->remark, "%s", cmd->remark ? cmd->remark : "");
        return;
    }
    s->requests++;
    struct rmq_cmd resp;
    assert_int_equal(rmq_cmd_init_response(&resp, cmd, 0, c->dialed ? "from-dialer" : "from-acceptor"), 0);
    assert_int_equal(conn_send(c, &resp), 0);
    rmq_cmd_clear(&resp);
    if (cmd->code == CODE_PING) {
        struct rmq_cmd hello;
        rmq_cmd_init_request(&hello, CODE_HELLO, 7, 0);
        assert_int_equal(conn_send(c, &hello), 0);
        rmq_cmd_clear(&hello);
    }
}

static void on_close(void *ctx, struct conn *c)
{
    struct side *s = ctx;
    assert_true(c->closing);
    assert_true(c->close_reason[0] != '\0');
    s->closes++;
    s->closed_dialed = c->dialed;
    s->closed_connecting = c->connecting;
    snprintf(s->reason, sizeof s->reason, "%s", c->close_reason);
}

static void on_open(void *ctx, struct conn *c)
{
    struct side *s = ctx;
    assert_true(c->dialed);
    assert_false(c->connecting);
    s->opens++;
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    (void)events;
    struct fx *f = ctx;
    char peer[64];
    int a = net_accept(fd, peer, sizeof peer);
    if (a == -EAGAIN)
        return;
    assert_true(a >= 0);
    assert_int_equal(conn_set_adopt(f->accept.set, a, 1000, peer, loop_now_ms(f->l), NULL), 0);
}

static void before_sleep(struct loop *l, void *ctx)
{
    (void)l;
    struct fx *f = ctx;
    struct side *sides[] = {&f->dial, &f->accept};
    for (size_t i = 0; i < 2; i++) {
        conn_set_reap(sides[i]->set);
        conn_set_flush(sides[i]->set);
        conn_set_sanity(sides[i]->set);
    }
}

static void on_check(struct loop *l, int id, void *ctx)
{
    (void)id;
    struct fx *f = ctx;
    f->met = f->done(f);
    if (f->met || rmq_mono_ms() >= f->deadline)
        loop_stop(l);
}

/* Runs the loop until done(f) holds (asserted), within 5 s. Once per
 * test: a stopped loop stays stopped. */
static void run_until(struct fx *f, bool (*done)(struct fx *f))
{
    f->done = done;
    f->met = false;
    f->deadline = rmq_mono_ms() + 5000;
    int id;
    assert_int_equal(loop_add_timer(f->l, 0, 1, on_check, f, &id), 0);
    assert_int_equal(loop_run(f->l), 0);
    loop_timer_cancel(f->l, id);
    assert_true(f->met);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(loop_new(&f->l), 0);
    struct conn_set_options dial = {.max_frame = RMQ_FRAME_MAX_DEFAULT,
                                    .max_output = 1 << 20,
                                    .defer_output = true,
                                    .on_frame = on_frame,
                                    .on_close = on_close,
                                    .on_open = on_open,
                                    .ctx = &f->dial};
    struct conn_set_options accept = {.max_frame = RMQ_FRAME_MAX_DEFAULT,
                                      .max_output = 1 << 20,
                                      .on_frame = on_frame,
                                      .on_close = on_close,
                                      .ctx = &f->accept};
    assert_int_equal(conn_set_new(f->l, &dial, &f->dial.set), 0);
    assert_int_equal(conn_set_new(f->l, &accept, &f->accept.set), 0);
    f->listen_fd = net_listen("127.0.0.1", 0);
    assert_true(f->listen_fd >= 0);
    socklen_t len = sizeof f->sa;
    assert_int_equal(getsockname(f->listen_fd, (struct sockaddr *)&f->sa, &len), 0);
    assert_int_equal(loop_add_fd(f->l, f->listen_fd, LOOP_READ, on_accept, f), 0);
    loop_set_before_sleep(f->l, before_sleep, f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    conn_set_free(f->dial.set);
    conn_set_free(f->accept.set);
    loop_del_fd(f->l, f->listen_fd);
    close(f->listen_fd);
    loop_free(f->l);
    free(f);
    return 0;
}

/* Nothing listens on the port: the connect fails, at once (an error from
 * conn_set_dial, no conn made) or later (the conn closes with the reason,
 * never having opened), and the conn is reaped once. */
static bool refused_steps(struct fx *f)
{
    if (f->dial.closes == 0)
        return false;
    if (f->turns == 0) {
        assert_int_equal(f->dial.closes, 1);
        assert_true(f->dial.closed_dialed && f->dial.closed_connecting);
        assert_string_equal(f->dial.reason, strerror(ECONNREFUSED));
        assert_int_equal(f->dial.opens, 0);
        assert_int_equal(conn_set_count(f->dial.set), 0);
        assert_int_equal(conn_set_budget(f->dial.set)->output_bytes, 0);
    }
    return ++f->turns > 20; /* and it stays reaped once */
}

static void test_refused(void **state)
{
    struct fx *f = *state;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0 && bind(fd, (struct sockaddr *)&sa, len) == 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd); /* a port nothing listens on */
    struct conn *c = NULL;
    int rc = conn_set_dial(f->dial.set, (struct sockaddr *)&sa, len, 1, "refused", loop_now_ms(f->l), &c);
    if (rc != 0) {
        assert_int_equal(rc, -ECONNREFUSED);
        assert_int_equal(conn_set_count(f->dial.set), 0);
        return;
    }
    assert_true(c->dialed && c->connecting);
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, CODE_PING, 1, 0);
    assert_int_equal(conn_send(c, &req), 0); /* queued while connecting */
    rmq_cmd_clear(&req);
    run_until(f, refused_steps);
    assert_int_equal(f->dial.closes, 1);
}

/* A request queued before the connect completes reaches the acceptor; its
 * reply and the acceptor's own request come back; the dialer's answer to
 * that goes out too. Closing the dialed conn closes the other end; each is
 * reaped once. */
static bool both_ways_steps(struct fx *f)
{
    switch (f->phase) {
    case 0:
        if (f->dial.responses == 0 || f->accept.responses == 0)
            return false;
        assert_int_equal(f->dial.opens, 1);
        assert_false(f->c->connecting);
        assert_int_equal(f->accept.requests, 1);
        assert_int_equal(f->dial.requests, 1);
        assert_string_equal(f->dial.remark, "from-acceptor");
        assert_string_equal(f->accept.remark, "from-dialer");
        assert_int_equal(conn_set_count(f->accept.set), 1);
        assert_true(conn_set_first(f->accept.set)->last_frame_ms >= conn_set_first(f->accept.set)->opened_ms);
        conn_close_async(f->c, "done with it");
        f->phase++;
        return false;
    case 1:
        if (f->dial.closes == 0 || f->accept.closes == 0)
            return false;
        assert_string_equal(f->dial.reason, "done with it");
        assert_true(f->dial.closed_dialed && !f->dial.closed_connecting);
        assert_string_equal(f->accept.reason, "peer closed the connection");
        assert_false(f->accept.closed_dialed);
        assert_int_equal(conn_set_count(f->dial.set), 0);
        assert_int_equal(conn_set_count(f->accept.set), 0);
        f->phase++;
        return false;
    default: return ++f->turns > 20;
    }
}

static void test_frames_both_ways(void **state)
{
    struct fx *f = *state;
    assert_int_equal(conn_set_dial(f->dial.set, (struct sockaddr *)&f->sa, sizeof f->sa, 1, "acceptor",
                                   loop_now_ms(f->l), &f->c),
                     0);
    assert_true(f->c->dialed && f->c->connecting && f->c->write_armed);
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, CODE_PING, 1, 0);
    assert_int_equal(conn_send(f->c, &req), 0);
    rmq_cmd_clear(&req);
    assert_int_equal(conn_set_count(f->dial.set), 1);
    run_until(f, both_ways_steps);
    assert_int_equal(f->dial.closes, 1);
    assert_int_equal(f->accept.closes, 1);
}

static bool dial_closed(struct fx *f)
{
    return f->dial.closes > 0;
}

/* conn_try_send leaves a connection open when a frame does not fit, where
 * conn_send closes it. */
static void test_try_send_over_limit(void **state)
{
    struct fx *f = *state;
    struct conn *c = NULL;
    assert_int_equal(conn_set_dial(f->dial.set, (struct sockaddr *)&f->sa, sizeof f->sa, 1, "acceptor",
                                   loop_now_ms(f->l), &c),
                     0);
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, CODE_PING, 1, 0);
    size_t big = (1 << 20) + 1;
    req.body = rmq_malloc(big);
    assert_non_null(req.body);
    memset(req.body, 'x', big);
    req.body_len = big;
    assert_int_equal(conn_try_send(c, &req), RMQ_E2BIG);
    assert_false(c->closing);
    assert_int_equal(buf_live(&c->out), 0);
    conn_set_sanity(f->dial.set);
    assert_int_equal(conn_send(c, &req), RMQ_E2BIG);
    assert_true(c->closing);
    assert_int_equal(conn_try_send(c, &req), RMQ_ESTATE);
    rmq_cmd_clear(&req);
    run_until(f, dial_closed);
    assert_int_equal(f->dial.closes, 1);
    assert_int_equal(conn_set_count(f->dial.set), 0);
}

TEST_MAIN(cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
          cmocka_unit_test_setup_teardown(test_frames_both_ways, setup, teardown),
          cmocka_unit_test_setup_teardown(test_try_send_over_limit, setup, teardown))
