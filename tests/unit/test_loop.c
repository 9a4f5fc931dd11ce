/* test_loop.c — server/core/loop.c: fd events, timers, before-sleep, removal of
 * an fd whose event is still in the current batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "clocks.h"
#include "err.h"
#include "loop.h"
#include "test_support.h"

#include <string.h>
#include <unistd.h>

struct ctx {
    struct loop *l;
    int reads, timer_fires, oneshot_fires, sleeps;
    int fds[2][2];
};

static void on_read_a(struct loop *l, int fd, uint32_t ev, void *p)
{
    struct ctx *c = p;
    char b[16];
    (void)ev;
    (void)!read(fd, b, sizeof b);
    c->reads++;
    /* Removing the other fd while its event may be in this batch must be safe. */
    loop_del_fd(l, c->fds[1][0]);
}

static void on_read_b(struct loop *l, int fd, uint32_t ev, void *p)
{
    (void)l;
    (void)fd;
    (void)ev;
    ((struct ctx *)p)->reads += 100; /* must never run after removal */
}

static void on_periodic(struct loop *l, int id, void *p)
{
    struct ctx *c = p;
    (void)id;
    if (++c->timer_fires == 3)
        loop_stop(l);
}

static void on_oneshot(struct loop *l, int id, void *p)
{
    (void)l;
    (void)id;
    ((struct ctx *)p)->oneshot_fires++;
}

static void before(struct loop *l, void *p)
{
    (void)l;
    ((struct ctx *)p)->sleeps++;
}

static void test_events_timers_and_removal(void **state)
{
    (void)state;
    struct ctx c = {0};
    assert_int_equal(loop_new(&c.l), 0);
    assert_int_equal(pipe(c.fds[0]), 0);
    assert_int_equal(pipe(c.fds[1]), 0);
    assert_int_equal(loop_add_fd(c.l, c.fds[0][0], LOOP_READ, on_read_a, &c), 0);
    assert_int_equal(loop_add_fd(c.l, c.fds[1][0], LOOP_READ, on_read_b, &c), 0);
    assert_int_not_equal(loop_add_fd(c.l, c.fds[0][0], LOOP_READ, on_read_a, &c), 0);
    /* b first in fd order? Either way: a removes b, b must not fire after that. */
    assert_int_equal(write(c.fds[1][1], "x", 1), 1);
    assert_int_equal(write(c.fds[0][1], "x", 1), 1);
    int id = 0;
    assert_int_equal(loop_add_timer(c.l, 5, 0, on_oneshot, &c, &id), 0);
    assert_int_equal(loop_add_timer(c.l, 20, 20, on_periodic, &c, NULL), 0);
    loop_set_before_sleep(c.l, before, &c);
    int64_t t0 = rmq_mono_ms();
    assert_int_equal(loop_run(c.l), 0);
    int64_t took = rmq_mono_ms() - t0;
    assert_true(c.reads == 1 || c.reads == 101); /* b may have run before a removed it, never after */
    assert_int_equal(c.timer_fires, 3);
    assert_int_equal(c.oneshot_fires, 1);
    assert_true(c.sleeps >= 3);
    assert_true(took >= 55);
    assert_true(took < 2000);
    for (int i = 0; i < 2; i++) {
        close(c.fds[i][0]);
        close(c.fds[i][1]);
    }
    loop_free(c.l);
}

static void test_cancel_and_rearm(void **state)
{
    (void)state;
    struct ctx c = {0};
    assert_int_equal(loop_new(&c.l), 0);
    int once;
    assert_int_equal(loop_add_timer(c.l, 10, 0, on_oneshot, &c, &once), 0);
    loop_timer_cancel(c.l, once);
    int per;
    assert_int_equal(loop_add_timer(c.l, 100000, 10, on_periodic, &c, &per), 0);
    loop_timer_set(c.l, per, rmq_mono_ms()); /* due now instead of in 100 s */
    assert_int_equal(loop_run(c.l), 0);
    assert_int_equal(c.oneshot_fires, 0);
    assert_int_equal(c.timer_fires, 3);
    loop_free(c.l);
}

/* Bulk fds that are always readable get at most LOOP_BULK_SLICE callbacks
 * per iteration, round robin, and a main-set fd made ready is served in the
 * very next iteration however many bulk fds wait; moving an fd back works,
 * and a bulk fd can be removed. */
enum { NBULK = 3 * LOOP_BULK_SLICE };
struct fair {
    struct loop *l;
    int pipes[NBULK + 1][2];
    int bulk_calls, main_calls, iterations, main_at, max_bulk_per_iter, bulk_this_iter;
    int served[NBULK];
};

static void on_bulk(struct loop *l, int fd, uint32_t ev, void *p)
{
    (void)l;
    (void)ev;
    struct fair *f = p;
    f->bulk_calls++;
    f->bulk_this_iter++;
    for (int i = 0; i < NBULK; i++)
        if (f->pipes[i][0] == fd)
            f->served[i]++;
    /* Leave the byte unread: the fd stays ready, like a pipelining client. */
}

static void on_main(struct loop *l, int fd, uint32_t ev, void *p)
{
    (void)l;
    (void)ev;
    struct fair *f = p;
    char b[8];
    (void)!read(fd, b, sizeof b);
    f->main_calls++;
    f->main_at = f->iterations;
}

static void fair_sleep(struct loop *l, void *p)
{
    struct fair *f = p;
    if (f->bulk_this_iter > f->max_bulk_per_iter)
        f->max_bulk_per_iter = f->bulk_this_iter;
    f->bulk_this_iter = 0;
    if (++f->iterations == 2)
        assert_int_equal(write(f->pipes[NBULK][1], "q", 1), 1); /* the query arrives */
    if (f->iterations == 12)
        loop_stop(l);
}

static void test_bulk_set_is_sliced(void **state)
{
    (void)state;
    static struct fair f;
    memset(&f, 0, sizeof f);
    assert_int_equal(loop_new(&f.l), 0);
    for (int i = 0; i <= NBULK; i++)
        assert_int_equal(pipe(f.pipes[i]), 0);
    for (int i = 0; i < NBULK; i++) {
        assert_int_equal(loop_add_fd(f.l, f.pipes[i][0], LOOP_READ, on_bulk, &f), 0);
        assert_int_equal(loop_set_bulk(f.l, f.pipes[i][0], true), 0);
        assert_int_equal(loop_set_bulk(f.l, f.pipes[i][0], true), 0); /* no-op */
        assert_int_equal(write(f.pipes[i][1], "x", 1), 1);
    }
    assert_int_equal(loop_add_fd(f.l, f.pipes[NBULK][0], LOOP_READ, on_main, &f), 0);
    assert_int_equal(loop_set_bulk(f.l, 12345, true), RMQ_ENOTFOUND);
    loop_set_before_sleep(f.l, fair_sleep, &f);
    assert_int_equal(loop_run(f.l), 0);
    assert_int_equal(f.max_bulk_per_iter, LOOP_BULK_SLICE);
    assert_int_equal(f.main_calls, 1);
    assert_int_equal(f.main_at, 2); /* the iteration right after it was written */
    for (int i = 0; i < NBULK; i++)
        assert_true(f.served[i] >= 2); /* round robin: nobody starves */
    /* back to the main set: served every iteration from now on */
    loop_del_fd(f.l, f.pipes[0][0]);
    assert_int_equal(loop_set_bulk(f.l, f.pipes[1][0], false), 0);
    for (int i = 0; i <= NBULK; i++) {
        close(f.pipes[i][0]);
        close(f.pipes[i][1]);
    }
    loop_free(f.l);
}

TEST_MAIN(cmocka_unit_test(test_events_timers_and_removal), cmocka_unit_test(test_cancel_and_rearm),
          cmocka_unit_test(test_bulk_set_is_sliced))
