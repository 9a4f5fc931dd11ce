/* test_store_admin.c — the store additions of the admin surface: store_reset
 * (every table but runs emptied, event ids keep growing) and the read
 * queries behind history, membership at t, clients and diagnostics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store.h"
#include "store_read.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

static void event(struct store *s, int64_t ts, const char *group, const char *kind, const char *client,
                  const char *before, const char *after)
{
    struct store_event ev = {ts, group, kind, client, 0, before, after, false, 0};
    assert_int_equal(store_append_event(s, &ev, NULL), 0);
}

static void test_queries_and_reset(void **state)
{
    (void)state;
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/s.db", test_tmpdir());
    struct store *s = NULL;
    assert_int_equal(store_open(path, &s, err, sizeof err), 0);
    assert_int_equal(store_put_client(s, "cA", "JAVA", 409, 1000), 0);
    assert_int_equal(store_put_client(s, "cA", "JAVA", 410, 2500), 0);
    event(s, 1000, "G", "join", "cA", "[]", "[\"cA\"]");
    event(s, 2000, "G", "join", "cB", "[\"cA\"]", "[\"cA\",\"cB\"]");
    event(s, 2500, "H", "join", "cC", "[]", "[\"cC\"]");
    event(s, 3000, "G", "subscription", NULL, "[\"cA\",\"cB\"]", "[\"cA\",\"cB\"]");
    event(s, 4000, "G", "close", "cA", "[\"cA\",\"cB\"]", "[\"cB\"]");
    assert_int_equal(store_commit(s), 0);

    struct store_reader *r = NULL;
    assert_int_equal(store_reader_open(path, &r, err, sizeof err), 0);
    int64_t last = 0, n = 0;
    assert_int_equal(store_reader_last_event_id(r, &last, err, sizeof err), 0);
    assert_int_equal(last, 5);

    json_t *h = store_reader_group_history(r, "G", 1500, 3500, 0, 100, err, sizeof err);
    assert_non_null(h);
    json_t *evs = json_object_get(h, "events");
    assert_int_equal(json_array_size(evs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 1), "kind")), "subscription");
    assert_int_equal(json_integer_value(json_object_get(h, "lastId")), 4);
    json_decref(h);
    h = store_reader_group_history(r, "G", 0, 10000, 2, 1, err, sizeof err); /* after id 2, one row */
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(h, "events"), 0), "id")), 4);
    json_decref(h);

    const struct {
        int64_t t;
        const char *members;
    } at[] = {{999, "[]"}, {1000, "[\"cA\"]"}, {2999, "[\"cA\",\"cB\"]"}, {4000, "[\"cB\"]"}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        json_t *v = store_reader_members_at(r, "G", at[i].t, err, sizeof err);
        assert_non_null(v);
        char *m = json_dumps(json_object_get(v, "members"), JSON_COMPACT);
        assert_string_equal(m, at[i].members);
        free(m);
        assert_true(at[i].t < 1000 ? json_is_null(json_object_get(v, "eventId"))
                                   : json_is_integer(json_object_get(v, "eventId")));
        json_decref(v);
    }

    json_t *c = store_reader_client(r, "cA", err, sizeof err);
    assert_int_equal(json_integer_value(json_object_get(c, "firstSeenMs")), 1000);
    assert_int_equal(json_integer_value(json_object_get(c, "lastHeartbeatMs")), 2500);
    assert_int_equal(json_integer_value(json_object_get(c, "version")), 410);
    json_decref(c);
    c = store_reader_client(r, "nobody", err, sizeof err);
    assert_true(json_is_null(c));
    json_decref(c);

    assert_int_equal(store_reader_count_events(r, "G", "subscription", 0, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(store_reader_count_events(r, "G", "subscription", 3001, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);

    /* reset: everything gone, the id sequence kept */
    assert_int_equal(store_reset(s), 0);
    assert_int_equal(store_commit(s), 0);
    json_t *all = store_reader_events(r, NULL, 0, 100, err, sizeof err);
    assert_int_equal(json_array_size(json_object_get(all, "events")), 0);
    json_decref(all);
    c = store_reader_client(r, "cA", err, sizeof err);
    assert_true(json_is_null(c));
    json_decref(c);
    event(s, 5000, "G", "join", "cZ", "[]", "[\"cZ\"]");
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(store_reader_last_event_id(r, &last, err, sizeof err), 0);
    assert_int_equal(last, 6);
    store_reader_close(r);
    store_close(s);
}

TEST_MAIN(cmocka_unit_test(test_queries_and_reset))
