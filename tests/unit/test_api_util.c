/* test_api_util.c — the admin API's pure parts: the route table and matcher,
 * cursors, page slicing, RocketMQ name rules, bearer tokens, and the OpenAPI
 * document built from the table (one entry per route, methods as served). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api_openapi.h"
#include "api_params.h"
#include "api_routes.h"
#include "err.h"
#include "mailbox.h"
#include "mem.h"
#include "test_support.h"

#include <string.h>

static void test_match_routes_and_params(void **state)
{
    (void)state;
    struct api_match m;
    assert_int_equal(api_routes_match("/", &m), API_ROUTE_DASHBOARD);
    assert_int_equal(api_routes_match("/healthz", &m), API_ROUTE_HEALTHZ);
    assert_int_equal(api_routes_match("/metrics", &m), API_ROUTE_METRICS);
    assert_int_equal(api_routes_match("/api/openapi.json", &m), API_ROUTE_OPENAPI);
    assert_int_equal(api_routes_match("/api/groups", &m), API_ROUTE_GROUPS);
    assert_int_equal(api_routes_match("/api/events/stream", &m), API_ROUTE_EVENTS_STREAM);
    assert_int_equal(api_routes_match("/api/clock/advance", &m), API_ROUTE_CLOCK_ADVANCE);
    assert_int_equal(api_routes_match("/api/groups/%25RETRY%25G/history", &m), API_ROUTE_GROUP_HISTORY);
    assert_int_equal(m.nparams, 1);
    assert_string_equal(m.param_name[0], "group");
    assert_int_equal(m.param_len[0], strlen("%25RETRY%25G"));
    assert_memory_equal(m.param[0], "%25RETRY%25G", m.param_len[0]);
    assert_int_equal(api_routes_match("/api/groups/G/clients/c%401/running-info", &m),
                     API_ROUTE_GROUP_CLIENT_RUNNING_INFO);
    assert_int_equal(m.nparams, 2);
    assert_string_equal(m.param_name[1], "clientId");
    assert_memory_equal(m.param[1], "c%401", m.param_len[1]);
    assert_int_equal(api_routes_match("/api/groups/G/clients/c1", &m), API_ROUTE_GROUP_CLIENT);
    /* an empty trailing name matches (the router answers 400, not 404) */
    assert_int_equal(api_routes_match("/api/groups/", &m), API_ROUTE_GROUP);
    assert_int_equal(m.param_len[0], 0);
    const char *none[] = {"",
                          "api",
                          "/api",
                          "/api/",
                          "/api/nope",
                          "/api/groups/G/nope",
                          "/healthz/",
                          "/api/groups/G/clients",
                          "/api/groups/G/clients/c/x",
                          "//",
                          "/ui",
                          "/a/b/c/d/e/f/g"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        assert_int_equal(api_routes_match(none[i], &m), API_ROUTE_NONE);
}

static void test_methods_and_ops(void **state)
{
    (void)state;
    static const struct {
        enum api_route route;
        const char *method;
        bool allowed;
    } methods[] = {
        {API_ROUTE_TOPIC, "PUT", true},     {API_ROUTE_TOPIC, "HEAD", true},
        {API_ROUTE_GROUPS, "POST", false},  {API_ROUTE_RESET, "GET", false},
        {API_ROUTE_RESET, "POST", true},    {API_ROUTE_GROUP_CLIENT, "GET", false},
        {API_ROUTE_GROUPS, "PATCH", false},
    };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (api_routes_method_allowed(methods[i].route, methods[i].method) != methods[i].allowed)
            fail_msg("route %d %s: allowed should be %d", (int)methods[i].route, methods[i].method,
                     methods[i].allowed);
    assert_true(api_routes_mutating("DELETE"));
    assert_false(api_routes_mutating("HEAD"));
    assert_int_equal(api_routes_op(API_ROUTE_TOPIC, "DELETE"), ADMIN_OP_TOPIC_DELETE);
    assert_int_equal(api_routes_op(API_ROUTE_GROUP_CLIENT, "DELETE"), ADMIN_OP_GROUP_EVICT);
    assert_int_equal(api_routes_op(API_ROUTE_GROUP_CONVERGED, "GET"), ADMIN_OP_GROUP_CONVERGED);
    assert_int_equal(api_routes_op(API_ROUTE_EVENTS, "GET"), 0);
    /* the new ops come after ADMIN_OP_EXTRA_FIRST, where admin_live forwards them */
    assert_true(ADMIN_OP_CLIENTS_LIST > ADMIN_OP_EXTRA_FIRST && ADMIN_OP_METRICS > ADMIN_OP_CLIENTS_LIST);
    size_t n;
    const struct api_route_def *t = api_routes_table(&n);
    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(api_routes_def(t[i].id), &t[i]);
        for (int b = 0; b < 4; b++)
            if (t[i].methods & (1u << b))
                assert_non_null(t[i].summary[b]);
    }
}

static void test_parse_uint_bounds(void **state)
{
    (void)state;
    int64_t v = -1;
    assert_int_equal(api_routes_parse_uint("0", 0, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(api_routes_parse_uint("1", 0, &v), RMQ_EINVAL); /* max below one digit */
    assert_int_equal(api_routes_parse_uint("5", 4, &v), RMQ_EINVAL);
    assert_int_equal(api_routes_parse_uint("1000", 1000, &v), 0);
    assert_int_equal(api_routes_parse_uint("1001", 1000, &v), RMQ_EINVAL);
    assert_int_equal(api_routes_parse_uint("9223372036854775807", INT64_MAX, &v), 0);
    assert_int_equal(v, INT64_MAX);
    assert_int_equal(api_routes_parse_uint("9223372036854775808", INT64_MAX, &v), RMQ_EINVAL);
    assert_int_equal(api_routes_parse_uint("", 10, &v), RMQ_EINVAL);
    assert_int_equal(api_routes_parse_uint("-1", 10, &v), RMQ_EINVAL);
    assert_int_equal(api_routes_parse_uint("1x", 10, &v), RMQ_EINVAL);
}

static void test_cursor_round_trip(void **state)
{
    (void)state;
    const char *values[] = {"G", "%RETRY%G", "a b/c?d=é", "127.0.0.1@123#456", "xy", "xyz", "wxyz"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char *c = api_cursor_encode('n', values[i]), *back = NULL;
        assert_non_null(c);
        for (const char *p = c; *p; p++) /* URL-safe without escaping */
            assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *p));
        assert_int_equal(api_cursor_decode(c, 'n', &back), 0);
        assert_string_equal(back, values[i]);
        rmq_free(back);
        assert_int_equal(api_cursor_decode(c, 'e', &back), RMQ_EINVAL); /* another list's cursor */
        rmq_free(c);
    }
    char *v = NULL;
    const char *bad[] = {"", "a", "ab", "!!!!", "a b c d", "AAAAA"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(api_cursor_decode(bad[i], 'n', &v), RMQ_EINVAL);
}

static json_t *list_of(const char *key, const char *field, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        char name[8];
        snprintf(name, sizeof name, "g%02d", i);
        json_array_append_new(arr, json_pack("{s:s,s:i}", field, name, "i", i));
    }
    return json_pack("{s:o}", key, arr);
}

static void test_page_slice(void **state)
{
    (void)state;
    int seen = 0, pages = 0;
    char *after = NULL;
    for (;;) {
        json_t *reply = list_of("groups", "group", 7);
        assert_int_equal(api_page_slice(reply, "groups", "group", after, 3), 0);
        json_t *page = json_object_get(reply, "groups");
        for (size_t i = 0; i < json_array_size(page); i++)
            assert_int_equal(json_integer_value(json_object_get(json_array_get(page, i), "i")), seen++);
        pages++;
        rmq_free(after);
        after = NULL;
        json_t *next = json_object_get(reply, "next");
        if (json_is_null(next)) {
            json_decref(reply);
            break;
        }
        assert_int_equal(api_cursor_decode(json_string_value(next), 'n', &after), 0);
        json_decref(reply);
        assert_true(pages < 10);
    }
    assert_int_equal(seen, 7);
    assert_int_equal(pages, 3);
    /* an exact fit has no next page */
    json_t *reply = list_of("groups", "group", 3);
    assert_int_equal(api_page_slice(reply, "groups", "group", NULL, 3), 0);
    assert_true(json_is_null(json_object_get(reply, "next")));
    assert_int_equal(api_page_slice(reply, "nope", "group", NULL, 3), RMQ_EINVAL);
    json_decref(reply);
}

static void test_page_params(void **state)
{
    (void)state;
    int64_t limit;
    char *after;
    const char *why = NULL;
    json_t *q = json_object();
    assert_int_equal(api_page_params(q, 'n', &limit, &after, &why), 0);
    assert_int_equal(limit, API_LIST_LIMIT_DEFAULT);
    assert_null(after);
    const char *bad_limits[] = {"0", "1001", "-1", "x", ""};
    for (size_t i = 0; i < sizeof bad_limits / sizeof bad_limits[0]; i++) {
        json_object_set_new(q, "limit", json_string(bad_limits[i]));
        assert_int_equal(api_page_params(q, 'n', &limit, &after, &why), RMQ_EINVAL);
        assert_non_null(why);
    }
    json_object_set_new(q, "limit", json_string("1000"));
    char *c = api_cursor_encode('n', "G1");
    json_object_set_new(q, "cursor", json_string(c));
    assert_int_equal(api_page_params(q, 'n', &limit, &after, &why), 0);
    assert_int_equal(limit, 1000);
    assert_string_equal(after, "G1");
    rmq_free(after);
    assert_int_equal(api_page_params(q, 'e', &limit, &after, &why), RMQ_EINVAL);
    rmq_free(c);
    json_decref(q);
}

static void test_names(void **state)
{
    (void)state;
    char t127[128], t128[129];
    memset(t127, 'a', 127);
    t127[127] = 0;
    memset(t128, 'a', 128);
    t128[128] = 0;
    assert_true(api_name_topic_valid("TopicTest"));
    assert_true(api_name_topic_valid("%RETRY%GID_x-1"));
    assert_true(api_name_topic_valid("%DLQ%G|x"));
    assert_true(api_name_topic_valid(t127));
    assert_false(api_name_topic_valid(t128));
    assert_false(api_name_topic_valid(""));
    assert_false(api_name_topic_valid("a.b"));
    assert_false(api_name_topic_valid("a b"));
    assert_false(api_name_topic_valid("a/b"));
    assert_false(api_name_topic_valid("\xc3\xa9"));
    assert_true(api_name_lookup_valid("GID.demo@host:1"));
    assert_false(api_name_lookup_valid("a\nb"));
    assert_false(api_name_lookup_valid(""));
}

static void test_tokens(void **state)
{
    (void)state;
    assert_true(api_token_equal("s3cret", 6, "s3cret", 6));
    assert_false(api_token_equal("s3cre", 5, "s3cret", 6));
    assert_false(api_token_equal("s3cretx", 7, "s3cret", 6));
    assert_false(api_token_equal("S3cret", 6, "s3cret", 6));
    assert_false(api_token_equal("", 0, "s3cret", 6));
    size_t n = 0;
    const char *t = api_bearer_token("Bearer abc", &n);
    assert_non_null(t);
    assert_int_equal(n, 3);
    assert_memory_equal(t, "abc", 3);
    t = api_bearer_token("bearer  abc  ", &n);
    assert_non_null(t);
    assert_int_equal(n, 3);
    assert_null(api_bearer_token("Basic abc", &n));
    assert_null(api_bearer_token("Bearer ", &n));
    assert_null(api_bearer_token(NULL, &n));
}

static void test_openapi_covers_table(void **state)
{
    (void)state;
    json_t *doc = api_openapi_document();
    assert_non_null(doc);
    json_t *paths = json_object_get(doc, "paths");
    size_t n;
    const struct api_route_def *t = api_routes_table(&n);
    assert_int_equal(json_object_size(paths), n);
    const char *keys[4] = {"get", "put", "delete", "post"};
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_object_get(paths, t[i].path);
        assert_non_null(item);
        for (int b = 0; b < 4; b++)
            assert_int_equal(json_object_get(item, keys[b]) != NULL, (t[i].methods & (1u << b)) != 0);
    }
    json_t *groups = json_object_get(json_object_get(paths, "/api/groups"), "get");
    json_t *params = json_object_get(groups, "parameters");
    int found = 0;
    for (size_t i = 0; i < json_array_size(params); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(params, i), "name"));
        found += !strcmp(name, "limit") || !strcmp(name, "cursor");
    }
    assert_int_equal(found, 2);
    json_decref(doc);
}

TEST_MAIN(cmocka_unit_test(test_match_routes_and_params), cmocka_unit_test(test_methods_and_ops),
          cmocka_unit_test(test_parse_uint_bounds), cmocka_unit_test(test_cursor_round_trip),
          cmocka_unit_test(test_page_slice), cmocka_unit_test(test_page_params), cmocka_unit_test(test_names),
          cmocka_unit_test(test_tokens), cmocka_unit_test(test_openapi_covers_table))
