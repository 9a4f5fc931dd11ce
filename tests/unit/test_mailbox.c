/* test_mailbox.c — the cross-thread mailbox: FIFO order per poster under
 * concurrent posts, eventfd wakeups seen by poll(), close refusing posts,
 * and mailbox_free completing whatever is still queued with 503.
 * Threads come from C11 <threads.h> (house rule: pthread.h stays in
 * mailbox.c and http_admin.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mailbox.h"
#include "test_support.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#define POSTERS 4
#define PER_POSTER 2000

struct tmsg {
    struct mailbox_msg msg; /* first, so a mailbox_msg * casts back */
    int poster;
    int seq;
    int done_calls;
};

struct order_state {
    int next_seq[POSTERS];
    int handled;
    int out_of_order;
};

struct poster_arg {
    struct mailbox *mb;
    struct tmsg *msgs; /* PER_POSTER of them */
    int poster;
    int failures;
};

static void count_done(struct mailbox_msg *msg)
{
    ((struct tmsg *)msg)->done_calls++;
}

static void order_handler(void *ctx, struct mailbox_msg *msg)
{
    struct order_state *st = ctx;
    struct tmsg *m = (struct tmsg *)msg;
    if (m->seq != st->next_seq[m->poster])
        st->out_of_order++;
    st->next_seq[m->poster] = m->seq + 1;
    st->handled++;
    msg->status = 200;
}

static int poster_main(void *arg)
{
    struct poster_arg *pa = arg;
    for (int i = 0; i < PER_POSTER; i++) {
        struct tmsg *m = &pa->msgs[i];
        m->poster = pa->poster;
        m->seq = i;
        m->msg.op = ADMIN_OP_STATS;
        m->msg.done = count_done;
        if (mailbox_post(pa->mb, &m->msg) != 0)
            pa->failures++;
    }
    return 0;
}

/* Blocks in poll() on the eventfd; returns 1 when readable. */
static int wait_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n = poll(&pfd, 1, timeout_ms);
    return n == 1 && (pfd.revents & POLLIN);
}

static void test_many_posters_keep_order(void **state)
{
    (void)state;
    struct mailbox *mb = NULL;
    assert_int_equal(mailbox_new(&mb), 0);
    struct tmsg *msgs = calloc(POSTERS * PER_POSTER, sizeof *msgs);
    assert_non_null(msgs);
    struct poster_arg pa[POSTERS];
    thrd_t th[POSTERS];
    for (int p = 0; p < POSTERS; p++) {
        pa[p] = (struct poster_arg){mb, msgs + p * PER_POSTER, p, 0};
        assert_int_equal(thrd_create(&th[p], poster_main, &pa[p]), thrd_success);
    }
    struct order_state st = {{0}, 0, 0};
    int rounds = 0;
    while (st.handled < POSTERS * PER_POSTER) {
        assert_true(wait_readable(mailbox_fd(mb), 5000));
        mailbox_drain(mb, order_handler, &st);
        rounds++;
    }
    for (int p = 0; p < POSTERS; p++) {
        assert_int_equal(thrd_join(th[p], NULL), thrd_success);
        assert_int_equal(pa[p].failures, 0);
    }
    assert_int_equal(st.out_of_order, 0);
    for (int i = 0; i < POSTERS * PER_POSTER; i++)
        assert_int_equal(msgs[i].done_calls, 1);
    /* Everything was drained: the eventfd must be quiet again. */
    assert_false(wait_readable(mailbox_fd(mb), 0));
    assert_true(rounds >= 1);
    mailbox_free(mb);
    free(msgs);
}

static void noop_handler(void *ctx, struct mailbox_msg *msg)
{
    (void)ctx;
    msg->status = 204;
}

static void test_eventfd_wakes_poll(void **state)
{
    (void)state;
    struct mailbox *mb = NULL;
    assert_int_equal(mailbox_new(&mb), 0);
    assert_true(mailbox_fd(mb) >= 0);
    assert_false(wait_readable(mailbox_fd(mb), 0));
    assert_int_equal(mailbox_drain(mb, noop_handler, NULL), 0); /* spurious wakeup is harmless */

    struct tmsg a = {.msg = {.op = ADMIN_OP_GROUPS_LIST, .done = count_done}};
    struct tmsg b = {.msg = {.op = ADMIN_OP_TOPICS_LIST, .done = count_done}};
    assert_int_equal(mailbox_post(mb, &a.msg), 0);
    assert_int_equal(mailbox_post(mb, &b.msg), 0);
    assert_true(wait_readable(mailbox_fd(mb), 1000));
    assert_int_equal(mailbox_drain(mb, noop_handler, NULL), 2);
    assert_int_equal(a.done_calls, 1);
    assert_int_equal(b.done_calls, 1);
    assert_int_equal(a.msg.status, 204);
    assert_false(wait_readable(mailbox_fd(mb), 0));
    mailbox_free(mb);
}

struct repost_ctx {
    struct mailbox *mb;
    struct tmsg *again;
    int calls;
};

static void repost_handler(void *ctx, struct mailbox_msg *msg)
{
    struct repost_ctx *rc = ctx;
    (void)msg;
    if (rc->calls++ == 0)
        assert_int_equal(mailbox_post(rc->mb, &rc->again->msg), 0);
}

/* A handler may post (the lock is not held while it runs); the new message
 * waits for the next drain and the eventfd says so. */
static void test_post_from_handler_goes_to_next_drain(void **state)
{
    (void)state;
    struct mailbox *mb = NULL;
    assert_int_equal(mailbox_new(&mb), 0);
    struct tmsg first = {.msg = {.done = count_done}}, again = {.msg = {.done = count_done}};
    struct repost_ctx rc = {mb, &again, 0};
    assert_int_equal(mailbox_post(mb, &first.msg), 0);
    assert_int_equal(mailbox_drain(mb, repost_handler, &rc), 1);
    assert_int_equal(again.done_calls, 0);
    assert_true(wait_readable(mailbox_fd(mb), 0));
    assert_int_equal(mailbox_drain(mb, repost_handler, &rc), 1);
    assert_int_equal(again.done_calls, 1);
    mailbox_free(mb);
}

static void test_close_refuses_posts_but_drains_queue(void **state)
{
    (void)state;
    struct mailbox *mb = NULL;
    assert_int_equal(mailbox_new(&mb), 0);
    struct tmsg queued = {.msg = {.done = count_done}}, late = {.msg = {.done = count_done}};
    assert_int_equal(mailbox_post(mb, &queued.msg), 0);
    mailbox_close(mb);
    assert_int_equal(mailbox_post(mb, &late.msg), RMQ_ESTATE);
    assert_int_equal(mailbox_drain(mb, noop_handler, NULL), 1);
    assert_int_equal(queued.done_calls, 1);
    assert_int_equal(late.done_calls, 0); /* a refused post never calls done */
    mailbox_free(mb);
    assert_int_equal(late.done_calls, 0);
}

static void take_reply_done(struct mailbox_msg *msg)
{
    struct tmsg *m = (struct tmsg *)msg;
    m->done_calls++;
    assert_int_equal(msg->status, 503);
    assert_non_null(msg->reply);
    assert_string_equal(json_string_value(json_object_get(msg->reply, "error")), "shutting down");
    json_decref(msg->reply);
    msg->reply = NULL;
}

static void test_free_completes_queued_with_503(void **state)
{
    (void)state;
    struct mailbox *mb = NULL;
    assert_int_equal(mailbox_new(&mb), 0);
    struct tmsg m[3];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 3; i++) {
        m[i].msg.op = ADMIN_OP_TOPIC_DELETE;
        m[i].msg.done = take_reply_done;
        assert_int_equal(mailbox_post(mb, &m[i].msg), 0);
    }
    mailbox_free(mb);
    for (int i = 0; i < 3; i++)
        assert_int_equal(m[i].done_calls, 1);
    mailbox_free(NULL); /* accepts NULL */
}

TEST_MAIN(cmocka_unit_test(test_many_posters_keep_order), cmocka_unit_test(test_eventfd_wakes_poll),
          cmocka_unit_test(test_post_from_handler_goes_to_next_drain),
          cmocka_unit_test(test_close_refuses_posts_but_drains_queue),
          cmocka_unit_test(test_free_completes_queued_with_503))
