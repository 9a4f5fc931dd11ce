/* test_http_admin.c — routing and request decoding of the HTTP admin API
 * over real loopback sockets: every route reaches its op with the decoded
 * arguments, percent-decoding and name limits, bodies (JSON objects only,
 * 1 MiB cap), 404/405, the bearer token, the OpenAPI document and the
 * dashboard. The fixture (fake loop, minimal client) is in http_fixture.c;
 * other groups: test_http_health.c, test_http_mailbox.c, test_http_events.c.
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
#include <unistd.h>

/* The query parameter key of an op's request, decoded, is want. */
static void assert_query(const json_t *v, const char *key, const char *want)
{
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "query"), key)), want);
}

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
    assert_query(v, "topic", "T 1");
    assert_query(v, "strategy", "AVG");
    assert_query(v, "inner", "a b");
    assert_query(v, "flag", "");
    assert_int_equal(json_object_size(json_object_get(v, "query")), 4);
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
    assert_query(v, "clientId", "c/1");
    json_decref(v);
    v = expect_op(f, "GET", "/api/groups/G1/clients/c1/running-info?timeout_ms=5", NULL,
                  ADMIN_OP_CLIENT_RUNNING_INFO, "G1");
    assert_query(v, "clientId", "c1");
    assert_query(v, "timeout_ms", "5");
    json_decref(v);
    v = expect_op(f, "GET", "/api/groups/G1/consistency?topic=T", NULL, ADMIN_OP_GROUP_CONSISTENCY, "G1");
    assert_query(v, "topic", "T");
    json_decref(v);
    json_decref(expect_op(f, "GET", "/api/groups/G1/converged", NULL, ADMIN_OP_GROUP_CONVERGED, "G1"));
    v = expect_op(f, "POST", "/api/clock/advance", "{\"ms\":120000}", ADMIN_OP_CLOCK_ADVANCE, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "body"), "ms")), 120000);
    json_decref(v);
    int before = atomic_load(&f->handled);
    expect_error(f, "POST", "/api/clock/advance", "{\"ms\":-5}", 400, "bad body");
    expect_error(f, "POST", "/api/clock/advance", "", 400, "bad json");
    expect_error(f, "POST", "/api/reset", "[]", 400, "bad json");
    static const char *const paths[] = {"/api/groups/G1/converged?timeout_ms=61000", "/api/groups?limit=0",
                                        "/api/clients?cursor=zzzz"};
    expect_errors(f, "GET", paths, sizeof paths / sizeof paths[0], NULL, 400, "bad parameter");
    expect_error(f, "PUT", "/api/topics/a.b", "{}", 400, "bad topic name");
    expect_error(f, "GET", "/api/groups/a%0Ab", NULL, 400, "bad parameter");
    assert_int_equal(atomic_load(&f->handled), before); /* all refused before posting */
    expect_error(f, "GET", "/api/reset", NULL, 405, "method not allowed");
    expect_error(f, "GET", "/api/groups/G/clients/c", NULL, 405, "method not allowed");
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

static void test_percent_decoding(void **state)
{
    struct fixture *f = *state;
    json_decref(expect_op(f, "GET", "/api/groups/%25RETRY%25G1", NULL, ADMIN_OP_GROUP_GET, "%RETRY%G1"));
    json_decref(
        expect_op(f, "GET", "/api/groups/%25DLQ%25g/allocation", NULL, ADMIN_OP_GROUP_ALLOCATION, "%DLQ%g"));
    /* An encoded slash stays inside the name instead of making a new segment. */
    json_decref(expect_op(f, "GET", "/api/topics/a%2Fb", NULL, ADMIN_OP_TOPIC_GET, "a/b"));
    json_decref(expect_op(f, "GET", "/api/topics/x+y", NULL, ADMIN_OP_TOPIC_GET, "x+y"));
    static const char *const paths[] = {"/api/groups/%zz", "/api/groups/%2", "/api/groups/a%00b"};
    expect_errors(f, "GET", paths, sizeof paths / sizeof paths[0], NULL, 400, "bad path");
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
    static const char *const paths[] = {"/index.html",
                                        "/nope",
                                        "/ui/nope.js",
                                        "/api",
                                        "/api/groups/G1/members",
                                        "/api/groups/G1/allocation/x",
                                        "/healthz/"};
    expect_errors(f, "GET", paths, sizeof paths / sizeof paths[0], NULL, 404, "not found");
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

#define T(fn) cmocka_unit_test_setup_teardown(fn, http_fx_setup, http_fx_teardown)

TEST_MAIN(T(test_routes_reach_ops), T(test_new_routes_reach_ops), T(test_openapi_and_dashboard),
          T(test_admin_token), T(test_percent_decoding), T(test_name_length_limits),
          T(test_put_requires_json_object), T(test_unknown_route_404), T(test_wrong_method_405),
          T(test_body_over_limit_413))
