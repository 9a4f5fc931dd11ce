/* test_http_admin.c — the HTTP admin API over real loopback sockets.
 *
 * Each test starts http_admin on 127.0.0.1:0 with a real mailbox and a fake
 * "loop" thread that polls mailbox_fd and drains with echo_handler, which
 * replies {"op":N,"arg":...,"query":{...},"body":...} so a test can check
 * from the response alone which op the route reached with which decoded
 * arguments. The client is a minimal HTTP/1.1 one written here (one request
 * per connection, Connection: close, read to EOF). /api/events runs against
 * a real SQLite file written with store.h. Threads come from C11
 * <threads.h> (pthread.h stays in mailbox.c and http_admin.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "http_admin.h"
#include "mailbox.h"
#include "store.h"
#include "test_support.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <threads.h>
#include <unistd.h>

struct fixture {
    struct mailbox *mb;
    struct http_admin *h;
    uint16_t port;
    thrd_t loop;
    atomic_int stop;    /* ask the loop thread to exit */
    atomic_int paused;  /* loop leaves the mailbox alone while set */
    atomic_int handled; /* messages the fake loop has answered */
    char dir[4096];
    char db[4200];
};

struct resp {
    int status; /* 0 = no response (connection closed first) */
    char head[8192];
    char *body; /* malloc'd, NUL-terminated */
    size_t body_len;
};

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

static int setup(void **state)
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

static int teardown(void **state)
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

/* ---- the minimal HTTP/1.1 client --------------------------------------- */

static int client_connect(uint16_t port)
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
static int send_all(int fd, const void *buf, size_t n)
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

static void send_request(int fd, const char *method, const char *path, const char *extra, const char *body,
                         size_t body_len)
{
    char head[2048];
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s",
                     method, path, extra ? extra : "");
    if (body)
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    assert_int_equal(send_all(fd, head, (size_t)n), 0);
    if (body && body_len)
        send_all(fd, body, body_len);
}

/* Reads a whole response (until EOF) and parses status, head and body. */
static void read_response(int fd, struct resp *r)
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

static void http(struct fixture *f, const char *method, const char *path, const char *body, struct resp *r)
{
    int fd = client_connect(f->port);
    send_request(fd, method, path, NULL, body, body ? strlen(body) : 0);
    read_response(fd, r);
    close(fd);
}

/* Value of header name in r (static copy), or NULL. */
static const char *header(const struct resp *r, const char *name)
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
static json_t *json_body(const struct resp *r)
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
static json_t *call(struct fixture *f, const char *method, const char *path, const char *body, int status)
{
    struct resp r;
    http(f, method, path, body, &r);
    if (r.status != status)
        fail_msg("%s %s: status %d, want %d; body %s", method, path, r.status, status, r.body);
    json_t *v = json_body(&r);
    free(r.body);
    return v;
}

static void expect_error(struct fixture *f, const char *method, const char *path, const char *body,
                         int status, const char *code)
{
    json_t *v = call(f, method, path, body, status);
    assert_string_equal(json_string_value(json_object_get(v, "error")), code);
    const char *detail = json_string_value(json_object_get(v, "detail"));
    assert_non_null(detail);
    assert_true(strlen(detail) > 0);
    json_decref(v);
}

/* Asserts that the echo reply names op and arg (arg NULL = JSON null). */
static json_t *expect_op(struct fixture *f, const char *method, const char *path, const char *body,
                         enum admin_op op, const char *arg)
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

/* ---- tests -------------------------------------------------------------- */

static void test_routes_reach_ops(void **state)
{
    struct fixture *f = *state;
    json_decref(expect_op(f, "GET", "/api/groups", NULL, ADMIN_OP_GROUPS_LIST, NULL));
    json_decref(expect_op(f, "GET", "/api/groups/G1", NULL, ADMIN_OP_GROUP_GET, "G1"));
    json_decref(expect_op(f, "GET", "/api/topics", NULL, ADMIN_OP_TOPICS_LIST, NULL));
    json_decref(expect_op(f, "GET", "/api/topics/T1", NULL, ADMIN_OP_TOPIC_GET, "T1"));
    json_decref(expect_op(f, "DELETE", "/api/topics/T1", NULL, ADMIN_OP_TOPIC_DELETE, "T1"));
    struct resp r;
    http(f, "HEAD", "/api/groups/G1", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    free(r.body);

    json_t *v = expect_op(f, "PUT", "/api/topics/T1", "{\"readQueueNums\":8,\"brokers\":[\"b\"]}",
                          ADMIN_OP_TOPIC_PUT, "T1");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "body"), "readQueueNums")), 8);
    json_decref(v);

    v = expect_op(f, "GET", "/api/groups/G1/allocation?topic=T%201&strategy=AVG&inner=a+b&flag", NULL,
                  ADMIN_OP_GROUP_ALLOCATION, "G1");
    json_t *q = json_object_get(v, "query");
    assert_string_equal(json_string_value(json_object_get(q, "topic")), "T 1");
    assert_string_equal(json_string_value(json_object_get(q, "strategy")), "AVG");
    assert_string_equal(json_string_value(json_object_get(q, "inner")), "a b");
    assert_string_equal(json_string_value(json_object_get(q, "flag")), "");
    assert_int_equal(json_object_size(q), 4);
    json_decref(v);
}

/* The admin surface's routes reach their ops with the decoded arguments. */
static void test_new_routes_reach_ops(void **state)
{
    struct fixture *f = *state;
    json_decref(expect_op(f, "GET", "/api/clients", NULL, ADMIN_OP_CLIENTS_LIST, NULL));
    json_decref(expect_op(f, "GET", "/api/clients/c%40h%231", NULL, ADMIN_OP_CLIENT_GET, "c@h#1"));
    json_decref(expect_op(f, "GET", "/api/groups/G1/diagnostics", NULL, ADMIN_OP_GROUP_DIAGNOSTICS, "G1"));
    json_decref(expect_op(f, "GET", "/api/clock", NULL, ADMIN_OP_CLOCK_GET, NULL));
    json_decref(expect_op(f, "POST", "/api/reset", NULL, ADMIN_OP_RESET, NULL));
    json_t *v = expect_op(f, "DELETE", "/api/groups/%25RETRY%25G/clients/c%2F1", NULL, ADMIN_OP_GROUP_EVICT,
                          "%RETRY%G");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "query"), "clientId")), "c/1");
    json_decref(v);
    v = expect_op(f, "GET", "/api/groups/G1/clients/c1/running-info?timeout_ms=5", NULL,
                  ADMIN_OP_CLIENT_RUNNING_INFO, "G1");
    json_t *q = json_object_get(v, "query");
    assert_string_equal(json_string_value(json_object_get(q, "clientId")), "c1");
    assert_string_equal(json_string_value(json_object_get(q, "timeout_ms")), "5");
    json_decref(v);
    v = expect_op(f, "GET", "/api/groups/G1/consistency?topic=T", NULL, ADMIN_OP_GROUP_CONSISTENCY, "G1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "query"), "topic")), "T");
    json_decref(v);
    json_decref(expect_op(f, "GET", "/api/groups/G1/converged", NULL, ADMIN_OP_GROUP_CONVERGED, "G1"));
    v = expect_op(f, "POST", "/api/clock/advance", "{\"ms\":120000}", ADMIN_OP_CLOCK_ADVANCE, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "body"), "ms")), 120000);
    json_decref(v);
    int before = atomic_load(&f->handled);
    expect_error(f, "POST", "/api/clock/advance", "{\"ms\":-5}", 400, "bad body");
    expect_error(f, "POST", "/api/clock/advance", "", 400, "bad json");
    expect_error(f, "POST", "/api/reset", "[]", 400, "bad json");
    expect_error(f, "GET", "/api/groups/G1/converged?timeout_ms=61000", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/groups?limit=0", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/clients?cursor=zzzz", NULL, 400, "bad parameter");
    expect_error(f, "PUT", "/api/topics/a.b", "{}", 400, "bad topic name");
    expect_error(f, "GET", "/api/groups/a%0Ab", NULL, 400, "bad parameter");
    assert_int_equal(atomic_load(&f->handled), before); /* all refused before posting */
    expect_error(f, "GET", "/api/reset", NULL, 405, "method not allowed");
    expect_error(f, "GET", "/api/groups/G/clients/c", NULL, 405, "method not allowed");
}

/* The loop's /metrics text is served as text/plain with the HTTP thread's
 * request counters appended. */
static void test_metrics_merges_http_counters(void **state)
{
    struct fixture *f = *state;
    json_decref(call(f, "GET", "/api/groups/G1", NULL, 200));
    expect_error(f, "GET", "/nope", NULL, 404, "not found");
    struct resp r;
    http(f, "GET", "/metrics", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(header(&r, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    assert_non_null(strstr(r.body, "loop_metric 1\n"));
    assert_non_null(strstr(r.body,
                           "rmqcoord_http_requests_total{route=\"/api/groups/{group}\",method=\"GET\","
                           "status=\"200\"} 1\n"));
    assert_non_null(strstr(
        r.body, "rmqcoord_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"} 1\n"));
    assert_non_null(strstr(r.body, "rmqcoord_event_streams 0\n"));
    free(r.body);
}

static void test_openapi_and_dashboard(void **state)
{
    struct fixture *f = *state;
    json_t *doc = call(f, "GET", "/api/openapi.json", NULL, 200);
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.0.3");
    assert_non_null(json_object_get(json_object_get(doc, "paths"), "/api/events/stream"));
    json_decref(doc);
    struct resp r;
    http(f, "GET", "/", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(header(&r, "Content-Type"), "text/html; charset=utf-8");
    assert_non_null(strstr(r.body, "/ui/app.js"));
    free(r.body);
    http(f, "GET", "/ui/app.js", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "EventSource"));
    free(r.body);
}

/* Mutating routes need the bearer token once one is configured. */
static void test_admin_token(void **state)
{
    struct fixture *f = *state;
    http_admin_stop(f->h);
    char err[256] = "";
    struct http_admin_options opt = {"127.0.0.1", 0, f->db, f->mb, "tok-1"};
    assert_int_equal(http_admin_start(&opt, &f->h, err, sizeof err), 0);
    f->port = http_admin_port(f->h);
    int before = atomic_load(&f->handled);
    const char *heads[] = {NULL, "Authorization: Bearer tok-2\r\n", "Authorization: Bearer tok-\r\n",
                           "Authorization: tok-1\r\n", "Authorization: Bearer tok-11\r\n"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        struct resp r;
        int fd = client_connect(f->port);
        send_request(fd, "DELETE", "/api/topics/T1", heads[i], NULL, 0);
        read_response(fd, &r);
        close(fd);
        assert_int_equal(r.status, 401);
        assert_non_null(strstr(header(&r, "WWW-Authenticate"), "Bearer"));
        json_t *v = json_body(&r);
        assert_string_equal(json_string_value(json_object_get(v, "error")), "unauthorized");
        json_decref(v);
        free(r.body);
    }
    assert_int_equal(atomic_load(&f->handled), before);
    struct resp r;
    int fd = client_connect(f->port);
    send_request(fd, "DELETE", "/api/topics/T1", "Authorization: Bearer tok-1\r\n", NULL, 0);
    read_response(fd, &r);
    close(fd);
    assert_int_equal(r.status, 200);
    free(r.body);
    json_decref(call(f, "GET", "/api/groups/G1", NULL, 200)); /* reads need no token */
}

static void test_healthz_merges_stats(void **state)
{
    struct fixture *f = *state;
    json_t *v = call(f, "GET", "/healthz", NULL, 200);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "ok");
    assert_int_equal(json_integer_value(json_object_get(v, "uptimeMs")), 42);
    json_decref(v);
}

static void test_healthz_without_loop_is_ok(void **state)
{
    struct fixture *f = *state;
    mailbox_close(f->mb);
    json_t *v = call(f, "GET", "/healthz", NULL, 200);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "ok");
    assert_null(json_object_get(v, "uptimeMs"));
    json_decref(v);
}

static void test_percent_decoding(void **state)
{
    struct fixture *f = *state;
    json_decref(expect_op(f, "GET", "/api/groups/%25RETRY%25G1", NULL, ADMIN_OP_GROUP_GET, "%RETRY%G1"));
    json_decref(
        expect_op(f, "GET", "/api/groups/%25DLQ%25g/allocation", NULL, ADMIN_OP_GROUP_ALLOCATION, "%DLQ%g"));
    /* An encoded slash stays inside the name instead of making a new segment. */
    json_decref(expect_op(f, "GET", "/api/topics/a%2Fb", NULL, ADMIN_OP_TOPIC_GET, "a/b"));
    json_decref(expect_op(f, "GET", "/api/topics/x+y", NULL, ADMIN_OP_TOPIC_GET, "x+y"));
    expect_error(f, "GET", "/api/groups/%zz", NULL, 400, "bad path");
    expect_error(f, "GET", "/api/groups/%2", NULL, 400, "bad path");
    expect_error(f, "GET", "/api/groups/a%00b", NULL, 400, "bad path");
    expect_error(f, "GET", "/api/groups/x?topic=%zz", NULL, 400, "bad parameter");
}

static void test_name_length_limits(void **state)
{
    struct fixture *f = *state;
    char path[1200], name[300];
    memset(name, 'g', 255);
    name[255] = 0;
    snprintf(path, sizeof path, "/api/groups/%s", name);
    json_decref(expect_op(f, "GET", path, NULL, ADMIN_OP_GROUP_GET, name));
    snprintf(path, sizeof path, "/api/groups/%sg", name);
    expect_error(f, "GET", path, NULL, 400, "bad parameter");
    /* 255 decoded bytes written as 765 escaped ones are still fine. */
    char *p = path + snprintf(path, sizeof path, "/api/topics/");
    for (int i = 0; i < 255; i++)
        p += sprintf(p, "%%41");
    memset(name, 'A', 255);
    json_decref(expect_op(f, "GET", path, NULL, ADMIN_OP_TOPIC_GET, name));
    expect_error(f, "GET", "/api/groups/", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/topics/", NULL, 400, "bad parameter");
}

static void test_put_requires_json_object(void **state)
{
    struct fixture *f = *state;
    int before = atomic_load(&f->handled);
    expect_error(f, "PUT", "/api/topics/T1", "{not json", 400, "bad json");
    expect_error(f, "PUT", "/api/topics/T1", "[1,2]", 400, "bad json");
    expect_error(f, "PUT", "/api/topics/T1", "", 400, "bad json");
    expect_error(f, "PUT", "/api/topics/T1", NULL, 400, "bad json");
    assert_int_equal(atomic_load(&f->handled), before); /* refused before posting */
}

static void test_unknown_route_404(void **state)
{
    struct fixture *f = *state;
    expect_error(f, "GET", "/index.html", NULL, 404, "not found");
    expect_error(f, "GET", "/nope", NULL, 404, "not found");
    expect_error(f, "GET", "/ui/nope.js", NULL, 404, "not found");
    expect_error(f, "GET", "/api", NULL, 404, "not found");
    expect_error(f, "GET", "/api/groups/G1/members", NULL, 404, "not found");
    expect_error(f, "GET", "/api/groups/G1/allocation/x", NULL, 404, "not found");
    expect_error(f, "GET", "/healthz/", NULL, 404, "not found");
}

static void test_wrong_method_405(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    http(f, "POST", "/api/groups", "{}", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD");
    json_t *v = json_body(&r);
    assert_string_equal(json_string_value(json_object_get(v, "error")), "method not allowed");
    json_decref(v);
    free(r.body);

    http(f, "PATCH", "/api/topics/T1", NULL, &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD, PUT, DELETE");
    free(r.body);
    expect_error(f, "DELETE", "/api/groups/G1", NULL, 405, "method not allowed");
    expect_error(f, "PUT", "/healthz", "{}", 405, "method not allowed");
}

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

static void test_body_over_limit_413(void **state)
{
    struct fixture *f = *state;
    size_t big = 1024 * 1024 + 1;
    /* Announced by Content-Length: refused before the body is read. */
    int fd = client_connect(f->port);
    char extra[128];
    snprintf(extra, sizeof extra, "Content-Length: %zu\r\n", big);
    send_request(fd, "PUT", "/api/topics/T1", extra, NULL, 0);
    struct resp r;
    read_response(fd, &r);
    close(fd);
    assert_int_equal(r.status, 413);
    json_t *v = json_body(&r);
    assert_string_equal(json_string_value(json_object_get(v, "error")), "payload too large");
    json_decref(v);
    free(r.body);

    /* Chunked, so the size is only known while reading: read, capped, 413. */
    fd = client_connect(f->port);
    send_request(fd, "PUT", "/api/topics/T1", "Transfer-Encoding: chunked\r\n", NULL, 0);
    char *chunk = malloc(65536);
    assert_non_null(chunk);
    memset(chunk, ' ', 65536);
    for (size_t sent = 0; sent < big + 65536; sent += 65536) {
        char hdr[32];
        int n = snprintf(hdr, sizeof hdr, "10000\r\n");
        if (send_all(fd, hdr, (size_t)n) < 0 || send_all(fd, chunk, 65536) < 0 || send_all(fd, "\r\n", 2) < 0)
            break;
    }
    send_all(fd, "0\r\n\r\n", 5);
    free(chunk);
    read_response(fd, &r);
    close(fd);
    assert_int_equal(r.status, 413);
    free(r.body);

    /* Exactly at the cap is accepted (and then judged as JSON). */
    char *max = malloc(1024 * 1024 + 1);
    assert_non_null(max);
    memset(max, ' ', 1024 * 1024);
    max[0] = '{';
    max[1024 * 1024 - 1] = '}';
    max[1024 * 1024] = 0;
    json_decref(expect_op(f, "PUT", "/api/topics/T1", max, ADMIN_OP_TOPIC_PUT, "T1"));
    free(max);
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

static void append_event(struct store *s, int64_t ts, const char *group, const char *kind, const char *client)
{
    struct store_event ev = {ts, group, kind, client, 7, "[]", "[\"c1\"]", false, 0};
    assert_int_equal(store_append_event(s, &ev, NULL), 0);
}

static void test_events_from_store(void **state)
{
    struct fixture *f = *state;
    struct store *s = NULL;
    char err[256] = "";
    if (store_open(f->db, &s, err, sizeof err) != 0)
        fail_msg("store_open: %s", err);
    append_event(s, 1000, "G1", "join", "c1");
    append_event(s, 2000, "G2", "join", "c2");
    append_event(s, 3000, "G1", "leave", "c1");
    assert_int_equal(store_commit(s), 0);

    json_t *v = call(f, "GET", "/api/events", NULL, 200);
    json_t *evs = json_object_get(v, "events");
    assert_int_equal(json_array_size(evs), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "group")), "G1");
    json_int_t first = json_integer_value(json_object_get(json_array_get(evs, 0), "id"));
    json_decref(v);

    v = call(f, "GET", "/api/events?group=G1", NULL, 200);
    evs = json_object_get(v, "events");
    assert_int_equal(json_array_size(evs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 1), "kind")), "leave");
    json_decref(v);

    char path[128];
    snprintf(path, sizeof path, "/api/events?since=%lld&limit=1", (long long)first);
    v = call(f, "GET", path, NULL, 200);
    evs = json_object_get(v, "events");
    assert_int_equal(json_array_size(evs), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 0), "id")), first + 1);
    json_decref(v);

    /* A write after the reader opened is visible (WAL snapshot per query). */
    append_event(s, 4000, "G3", "join", "c3");
    assert_int_equal(store_commit(s), 0);
    v = call(f, "GET", "/api/events?group=G3", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(v, "events")), 1);
    json_decref(v);
    store_close(s);

    expect_error(f, "GET", "/api/events?limit=-1", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/events?limit=abc", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/events?limit=99999999999", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/events?since=1.5", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/events?since=", NULL, 400, "bad parameter");
    expect_error(f, "GET", "/api/events?group=", NULL, 400, "bad parameter");
    expect_error(f, "POST", "/api/events", "{}", 405, "method not allowed");
}

static void test_events_without_store_file(void **state)
{
    struct fixture *f = *state;
    /* The server was started on a path nobody created yet. */
    struct resp r;
    http(f, "GET", "/api/events", NULL, &r);
    assert_true(r.status == 503 || r.status == 500);
    json_t *v = json_body(&r);
    assert_non_null(json_object_get(v, "error"));
    json_decref(v);
    free(r.body);
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

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_routes_reach_ops),
        T(test_healthz_merges_stats),
        T(test_healthz_without_loop_is_ok),
        T(test_percent_decoding),
        T(test_name_length_limits),
        T(test_put_requires_json_object),
        T(test_unknown_route_404),
        T(test_new_routes_reach_ops),
        T(test_metrics_merges_http_counters),
        T(test_openapi_and_dashboard),
        T(test_admin_token),
        T(test_wrong_method_405),
        T(test_loop_status_and_null_reply),
        T(test_mailbox_closed_503),
        T(test_body_over_limit_413),
        T(test_concurrent_requests),
        T(test_client_gone_while_suspended),
        T(test_stop_while_suspended),
        T(test_events_from_store),
        T(test_events_without_store_file),
        cmocka_unit_test(test_start_rejects_bad_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
