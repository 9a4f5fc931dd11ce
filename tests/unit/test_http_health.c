/* test_http_health.c — /healthz and /metrics of the HTTP admin API: the
 * loop's answer merged with what the HTTP thread knows itself, and a
 * healthz that still answers when the loop no longer does.
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

#include <stdlib.h>
#include <string.h>

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

#define T(fn) cmocka_unit_test_setup_teardown(fn, http_fx_setup, http_fx_teardown)

TEST_MAIN(T(test_metrics_merges_http_counters), T(test_healthz_merges_stats),
          T(test_healthz_without_loop_is_ok))
