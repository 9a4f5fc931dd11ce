/* test_http_mailbox.c — the HTTP thread's handoff to the loop through the
 * mailbox: the loop's status and a missing reply, a closed mailbox, 100
 * requests in flight at once, clients that vanish while their request is
 * suspended, stopping with requests still queued, and a bad listen host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "http_admin.h"
#include "http_fixture.h"
#include "mailbox.h"
#include "test_support.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <threads.h>
#include <unistd.h>

static void test_loop_status_and_null_reply(void **state)
{
    struct fixture *f = *state;
    expect_error(f, "GET", "/api/groups/missing", NULL, 404, "not found");
    expect_error(f, "GET", "/api/groups/null-reply", NULL, 500, "internal error");
}

static void test_mailbox_closed_503(void **state)
{
    struct fixture *f = *state;
    mailbox_close(f->mb);
    expect_error(f, "GET", "/api/groups", NULL, 503, "shutting down");
    expect_error(f, "PUT", "/api/topics/T", "{}", 503, "shutting down");
}

static void test_concurrent_requests(void **state)
{
    struct fixture *f = *state;
    enum { N = 100 };
    int fds[N];
    char path[64];
    /* All 100 are in flight at once: every request is sent before any is read. */
    for (int i = 0; i < N; i++) {
        fds[i] = client_connect(f->port);
        snprintf(path, sizeof path, "/api/groups/g%d", i);
        send_request(fds[i], "GET", path, NULL, NULL, 0);
    }
    for (int i = 0; i < N; i++) {
        struct resp r;
        read_response(fds[i], &r);
        close(fds[i]);
        assert_int_equal(r.status, 200);
        json_t *v = json_body(&r);
        snprintf(path, sizeof path, "g%d", i);
        assert_string_equal(json_string_value(json_object_get(v, "arg")), path);
        json_decref(v);
        free(r.body);
    }
}

static void wait_handled(struct fixture *f, int target)
{
    for (int i = 0; i < 1000 && atomic_load(&f->handled) < target; i++)
        thrd_sleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
    assert_true(atomic_load(&f->handled) >= target);
}

static void test_client_gone_while_suspended(void **state)
{
    struct fixture *f = *state;
    enum { N = 10 };
    int fds[N];
    atomic_store(&f->paused, 1);
    int before = atomic_load(&f->handled);
    for (int i = 0; i < N; i++) {
        fds[i] = client_connect(f->port);
        send_request(fds[i], "GET", "/api/groups", NULL, NULL, 0);
    }
    thrd_sleep(&(struct timespec){.tv_nsec = 200000000}, NULL); /* let them all suspend */
    for (int i = 0; i < N; i++) {
        struct linger lg = {1, 0}; /* RST, like a client that crashed */
        setsockopt(fds[i], SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fds[i]);
    }
    atomic_store(&f->paused, 0);
    wait_handled(f, before + N);
    json_decref(expect_op(f, "GET", "/api/groups/after", NULL, ADMIN_OP_GROUP_GET, "after"));
}

/* http_admin_stop with requests still in the mailbox: their connections are
 * resumed and closed (MHD would abort otherwise), and when the loop drains
 * the messages later their done() must not touch the freed server. */
static void test_stop_while_suspended(void **state)
{
    struct fixture *f = *state;
    enum { N = 5 };
    int fds[N];
    atomic_store(&f->paused, 1);
    for (int i = 0; i < N; i++) {
        fds[i] = client_connect(f->port);
        send_request(fds[i], "GET", "/api/topics", NULL, NULL, 0);
    }
    thrd_sleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
    http_admin_stop(f->h);
    f->h = NULL;
    for (int i = 0; i < N; i++) {
        struct resp r;
        read_response(fds[i], &r);
        close(fds[i]);
        if (r.status != 0 && r.status != 503)
            fail_msg("after stop: status %d, body %s", r.status, r.body);
        free(r.body);
    }
    int before = atomic_load(&f->handled);
    atomic_store(&f->paused, 0);
    wait_handled(f, before + N);
}

static void test_start_rejects_bad_host(void **state)
{
    (void)state;
    struct mailbox *mb = NULL;
    assert_int_equal(mailbox_new(&mb), 0);
    struct http_admin *h = NULL;
    char err[256] = "";
    struct http_admin_options opt = {"256.1.1.1.invalid", 0, NULL, mb, NULL};
    assert_true(http_admin_start(&opt, &h, err, sizeof err) < 0);
    assert_true(strlen(err) > 0);
    http_admin_stop(NULL);
    mailbox_free(mb);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, http_fx_setup, http_fx_teardown)

TEST_MAIN(T(test_loop_status_and_null_reply), T(test_mailbox_closed_503), T(test_concurrent_requests),
          T(test_client_gone_while_suspended), T(test_stop_while_suspended),
          cmocka_unit_test(test_start_rejects_bad_host))
