/* test_loop.c — server/loop.c: fd events, timers, before-sleep, removal of
 * an fd whose event is still in the current batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "loop.h"

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
    int64_t t0 = loop_clock_ms();
    assert_int_equal(loop_run(c.l), 0);
    int64_t took = loop_clock_ms() - t0;
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
    loop_timer_set(c.l, per, loop_clock_ms()); /* due now instead of in 100 s */
    assert_int_equal(loop_run(c.l), 0);
    assert_int_equal(c.oneshot_fires, 0);
    assert_int_equal(c.timer_fires, 3);
    loop_free(c.l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_timers_and_removal),
        cmocka_unit_test(test_cancel_and_rearm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
