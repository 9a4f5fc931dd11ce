/* test_http_events.c — /api/events of the HTTP admin API, read by the HTTP
 * thread itself from a real SQLite file written with store.h (a WAL
 * snapshot per query), and its answer when the file does not exist yet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "http_admin.h"
#include "http_fixture.h"
#include "mailbox.h"
#include "store.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>

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

    static const char *const paths[] = {
        "/api/events?limit=-1",  "/api/events?limit=abc", "/api/events?limit=99999999999",
        "/api/events?since=1.5", "/api/events?since=",    "/api/events?group="};
    expect_errors(f, "GET", paths, sizeof paths / sizeof paths[0], NULL, 400, "bad parameter");
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

#define T(fn) cmocka_unit_test_setup_teardown(fn, http_fx_setup, http_fx_teardown)

TEST_MAIN(T(test_events_from_store), T(test_events_without_store_file))
