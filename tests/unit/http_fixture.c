/* http_fixture.c — what the HTTP admin tests share (test_http_*.c).
 *
 * Each test starts http_admin on 127.0.0.1:0 with a real mailbox and a fake
 * "loop" thread that polls mailbox_fd and drains with echo_handler, which
 * replies {"op":N,"arg":...,"query":{...},"body":...} so a test can check
 * from the response alone which op the route reached with which decoded
 * arguments. The client is a minimal HTTP/1.1 one written here (one request
 * per connection, Connection: close, read to EOF). Threads come from C11
 * <threads.h> (pthread.h stays in mailbox.c and http_admin.c).
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

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <threads.h>
#include <unistd.h>

/* ---- the fake loop ------------------------------------------------------ */

static void echo_handler(void *ctx, struct mailbox_msg *msg)
{
    struct fixture *f = ctx;
    msg->status = 200;
    if (msg->op == ADMIN_OP_STATS) {
        msg->reply = json_pack("{s:i}", "uptimeMs", 42);
    } else if (msg->op == ADMIN_OP_METRICS) {
        msg->reply = json_pack("{s:s}", "text", "# TYPE loop_metric gauge\nloop_metric 1\n");
    } else if (msg->arg && !strcmp(msg->arg, "null-reply")) {
        msg->reply = NULL;
    } else if (msg->arg && !strcmp(msg->arg, "missing")) {
        msg->status = 404;
        msg->reply = json_pack("{s:s,s:s}", "error", "not found", "detail", "no such group");
    } else {
        /* Deep copies: query/body stay owned by the HTTP side. */
        msg->reply = json_pack("{s:i,s:s?,s:o?,s:o?}", "op", (int)msg->op, "arg", msg->arg, "query",
                               json_deep_copy(msg->query), "body", json_deep_copy(msg->body));
    }
    atomic_fetch_add(&f->handled, 1);
}

static int loop_main(void *arg)
{
    struct fixture *f = arg;
    while (!atomic_load(&f->stop)) {
        if (atomic_load(&f->paused)) {
            thrd_sleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
            continue;
        }
        struct pollfd pfd = {.fd = mailbox_fd(f->mb), .events = POLLIN};
        /* Re-check paused: it may have been set while we slept in poll(). */
        if (poll(&pfd, 1, 20) == 1 && !atomic_load(&f->paused))
            mailbox_drain(f->mb, echo_handler, f);
    }
    return 0;
}

static int start_server(struct fixture *f, const char *store_path)
{
    char err[256] = "";
    struct http_admin_options opt = {"127.0.0.1", 0, store_path, f->mb, NULL};
    int rc = http_admin_start(&opt, &f->h, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "http_admin_start: %s\n", err);
    else
        f->port = http_admin_port(f->h);
    return rc;
}

int http_fx_setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f || mailbox_new(&f->mb) != 0)
        return -1;
    const char *dir = test_tmpdir();
    if (!dir)
        return -1;
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    snprintf(f->db, sizeof f->db, "%s/store.db", dir);
    if (thrd_create(&f->loop, loop_main, f) != thrd_success)
        return -1;
    if (start_server(f, f->db) != 0)
        return -1;
    *state = f;
    return 0;
}

int http_fx_teardown(void **state)
{
    struct fixture *f = *state;
    http_admin_stop(f->h); /* NULL when a test stopped it already */
    atomic_store(&f->stop, 1);
    thrd_join(f->loop, NULL);
    mailbox_free(f->mb);
    unlink(f->db);
    char side[4300];
    snprintf(side, sizeof side, "%s-wal", f->db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", f->db);
    unlink(side);
    rmdir(f->dir);
    free(f);
    return 0;
}

int client_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Writes all of buf; returns 0, or -1 when the peer closed (that is fine
 * for the over-limit tests, where the server answers before the body). */
int send_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

void send_request(int fd, const char *method, const char *path, const char *extra, const char *body,
                  size_t body_len)
{
    char head[2048];
    /* Mutations need the JSON type (or the token); a test sending its own
     * Content-Type keeps it. */
    bool mutating = !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "DELETE");
    const char *ct =
        mutating && !(extra && strstr(extra, "Content-Type:")) ? "Content-Type: application/json\r\n" : "";
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s",
                     method, path, ct, extra ? extra : "");
    if (body)
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    assert_int_equal(send_all(fd, head, (size_t)n), 0);
    if (body && body_len)
        send_all(fd, body, body_len);
}

/* Reads a whole response (until EOF) and parses status, head and body. */
void read_response(int fd, struct resp *r)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
        ssize_t n = recv(fd, buf + len, cap - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = 0;
    memset(r, 0, sizeof *r);
    char *end = strstr(buf, "\r\n\r\n");
    if (!end || sscanf(buf, "HTTP/1.1 %d", &r->status) != 1) {
        r->status = 0;
        r->body = calloc(1, 1);
        free(buf);
        return;
    }
    size_t hlen = (size_t)(end - buf) + 2;
    assert_true(hlen < sizeof r->head);
    memcpy(r->head, buf, hlen);
    r->head[hlen] = 0;
    r->body_len = len - hlen - 2;
    r->body = malloc(r->body_len + 1);
    memcpy(r->body, end + 4, r->body_len);
    r->body[r->body_len] = 0;
    free(buf);
}

void http(struct fixture *f, const char *method, const char *path, const char *body, struct resp *r)
{
    int fd = client_connect(f->port);
    send_request(fd, method, path, NULL, body, body ? strlen(body) : 0);
    read_response(fd, r);
    close(fd);
}

/* Value of header name in r (static copy), or NULL. */
const char *header(const struct resp *r, const char *name)
{
    static char val[512];
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        if (!strncasecmp(p + 2, name, nl) && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;
            while (*v == ' ')
                v++;
            size_t vl = strcspn(v, "\r");
            snprintf(val, sizeof val, "%.*s", (int)vl, v);
            return val;
        }
    }
    return NULL;
}

/* Parses the JSON body (new reference) and checks it is application/json. */
json_t *json_body(const struct resp *r)
{
    const char *ct = header(r, "Content-Type");
    assert_non_null(ct);
    assert_string_equal(ct, "application/json");
    json_error_t jerr;
    json_t *v = json_loads(r->body, 0, &jerr);
    if (!v)
        fail_msg("body is not JSON: %s (%s)", r->body, jerr.text);
    return v;
}

/* One request; asserts the status and returns the parsed body (new). */
json_t *call(struct fixture *f, const char *method, const char *path, const char *body, int status)
{
    struct resp r;
    http(f, method, path, body, &r);
    if (r.status != status)
        fail_msg("%s %s: status %d, want %d; body %s", method, path, r.status, status, r.body);
    json_t *v = json_body(&r);
    free(r.body);
    return v;
}

void expect_error(struct fixture *f, const char *method, const char *path, const char *body, int status,
                  const char *code)
{
    json_t *v = call(f, method, path, body, status);
    assert_string_equal(json_string_value(json_object_get(v, "error")), code);
    const char *detail = json_string_value(json_object_get(v, "detail"));
    assert_non_null(detail);
    assert_true(strlen(detail) > 0);
    json_decref(v);
}

void expect_errors(struct fixture *f, const char *method, const char *const *paths, size_t n,
                   const char *body, int status, const char *code)
{
    for (size_t i = 0; i < n; i++)
        expect_error(f, method, paths[i], body, status, code);
}

/* Asserts that the echo reply names op and arg (arg NULL = JSON null). */
json_t *expect_op(struct fixture *f, const char *method, const char *path, const char *body, enum admin_op op,
                  const char *arg)
{
    json_t *v = call(f, method, path, body, 200);
    assert_int_equal(json_integer_value(json_object_get(v, "op")), op);
    json_t *a = json_object_get(v, "arg");
    if (arg)
        assert_string_equal(json_string_value(a), arg);
    else
        assert_true(json_is_null(a));
    return v;
}
