/* test_store_read.c — the read-only connection (server/store/store_read.c).
 *
 * A real database in a temporary directory is written through store.c and
 * read back through store_reader_events: paging by since/limit, the group
 * filter, limit clamping, the JSON shape, WAL snapshot visibility, opening
 * bad files, lossy UTF-8, and a fail-the-Nth-allocation loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "store.h"
#include "store_read.h"
#include "test_support.h"

#include <fcntl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct fx {
    char dir[4096];
    char path[4200];
    struct store *s;
    struct store_reader *r;
};

static int setup(void **state)
{
    static struct fx fx;
    const char *dir = test_tmpdir();
    if (!dir)
        return -1;
    memset(&fx, 0, sizeof fx);
    snprintf(fx.dir, sizeof fx.dir, "%s", dir);
    snprintf(fx.path, sizeof fx.path, "%s/store.db", dir);
    char err[256];
    if (store_open(fx.path, &fx.s, err, sizeof err) != 0 ||
        store_reader_open(fx.path, &fx.r, err, sizeof err) != 0)
        return -1;
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    store_reader_close(fx->r);
    store_close(fx->s);
    return test_rmdir_all(fx->dir);
}

/* Appends n join events, group "g<i % groups>", client "c<i>". */
static void append_events(struct store *s, int n, int groups)
{
    for (int i = 0; i < n; i++) {
        char group[16], client[16], after[32];
        snprintf(group, sizeof group, "g%d", i % groups);
        snprintf(client, sizeof client, "c%d", i);
        snprintf(after, sizeof after, "[\"%s\"]", client);
        struct store_event ev = {.ts_ms = 1000 + i,
                                 .group = group,
                                 .kind = "join",
                                 .client_id = client,
                                 .channel_id = i + 1,
                                 .before_json = "[]",
                                 .after_json = after};
        assert_int_equal(store_append_event(s, &ev, NULL), 0);
    }
    assert_int_equal(store_commit(s), 0);
}

static json_t *events_ok(struct store_reader *r, const char *group, int64_t since, int limit)
{
    char err[256] = "";
    json_t *v = store_reader_events(r, group, since, limit, err, sizeof err);
    if (!v)
        print_error("store_reader_events: %s\n", err);
    assert_non_null(v);
    assert_true(json_is_array(json_object_get(v, "events")));
    assert_true(json_is_integer(json_object_get(v, "next")));
    return v;
}

static size_t n_events(const json_t *v)
{
    return json_array_size(json_object_get(v, "events"));
}
static json_int_t next_of(const json_t *v)
{
    return json_integer_value(json_object_get(v, "next"));
}
static json_int_t event_int(const json_t *v, size_t i, const char *key)
{
    return json_integer_value(json_object_get(json_array_get(json_object_get(v, "events"), i), key));
}

static void test_paging_since_limit(void **state)
{
    struct fx *fx = *state;
    append_events(fx->s, 25, 2);
    int64_t since = 0;
    size_t want[] = {10, 10, 5, 0};
    for (int page = 0; page < 4; page++) {
        json_t *v = events_ok(fx->r, NULL, since, 10);
        assert_int_equal(n_events(v), want[page]);
        for (size_t i = 0; i < n_events(v); i++)
            assert_int_equal(event_int(v, i, "id"), since + 1 + (int64_t)i); /* oldest first, no gaps */
        assert_int_equal(next_of(v), since + (int64_t)want[page]);
        since = next_of(v);
        json_decref(v);
    }
    assert_int_equal(since, 25);
    json_t *v = events_ok(fx->r, NULL, -5, 3); /* negative since reads from the start */
    assert_int_equal(event_int(v, 0, "id"), 1);
    json_decref(v);
}

static void test_group_filter(void **state)
{
    struct fx *fx = *state;
    append_events(fx->s, 30, 3); /* g1 gets ids 2, 5, 8, ... */
    json_t *v = events_ok(fx->r, "g1", 0, 4);
    assert_int_equal(n_events(v), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *ev = json_array_get(json_object_get(v, "events"), i);
        assert_string_equal(json_string_value(json_object_get(ev, "group")), "g1");
        assert_int_equal(event_int(v, i, "id"), 2 + 3 * (int64_t)i);
    }
    assert_int_equal(next_of(v), 11);
    json_decref(v);
    v = events_ok(fx->r, "g1", 11, 100);
    assert_int_equal(n_events(v), 6);
    assert_int_equal(next_of(v), 29);
    json_decref(v);
    v = events_ok(fx->r, "nosuch", 0, 100);
    assert_int_equal(n_events(v), 0);
    assert_int_equal(next_of(v), 0);
    json_decref(v);
}

static void test_limit_clamped(void **state)
{
    struct fx *fx = *state;
    append_events(fx->s, 1005, 1);
    int limits[] = {0, -7, 1, 1000, 1001, 5000};
    size_t want[] = {1, 1, 1, 1000, 1000, 1000};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        json_t *v = events_ok(fx->r, NULL, 0, limits[i]);
        assert_int_equal(n_events(v), want[i]);
        json_decref(v);
    }
}

/* The documented shape, with before/after as real arrays and absent
 * client/channel as null. */
static void test_event_shape(void **state)
{
    struct fx *fx = *state;
    struct store_event a = {.ts_ms = 123,
                            .group = "G",
                            .kind = "leave",
                            .client_id = "c1",
                            .channel_id = 42,
                            .before_json = "[\"c1\",\"c2\"]",
                            .after_json = "[\"c2\"]"};
    struct store_event b = {.ts_ms = 124, .group = "G", .kind = "restart"};
    assert_int_equal(store_append_event(fx->s, &a, NULL), 0);
    assert_int_equal(store_append_event(fx->s, &b, NULL), 0);
    assert_int_equal(store_commit(fx->s), 0);
    json_t *v = events_ok(fx->r, "G", 0, 10);
    json_t *ev = json_array_get(json_object_get(v, "events"), 0);
    json_t *want = json_pack("{s:I,s:I,s:s,s:s,s:s,s:I,s:[ss],s:[s]}", "id", (json_int_t)1, "ts",
                             (json_int_t)123, "group", "G", "kind", "leave", "clientId", "c1", "channelId",
                             (json_int_t)42, "before", "c1", "c2", "after", "c2");
    assert_non_null(want);
    assert_true(json_equal(ev, want));
    json_decref(want);
    ev = json_array_get(json_object_get(v, "events"), 1);
    want = json_pack("{s:I,s:I,s:s,s:s,s:n,s:n,s:[],s:[]}", "id", (json_int_t)2, "ts", (json_int_t)124,
                     "group", "G", "kind", "restart", "clientId", "channelId", "before", "after");
    assert_non_null(want);
    assert_true(json_equal(ev, want));
    json_decref(want);
    json_decref(v);
}

/* The reader sees a WAL snapshot of the last commit: an open batch is
 * invisible, and visible as a whole after store_commit. */
static void test_uncommitted_invisible_to_reader(void **state)
{
    struct fx *fx = *state;
    struct store_event ev = {.ts_ms = 1, .group = "g", .kind = "join"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(store_append_event(fx->s, &ev, NULL), 0);
    json_t *v = events_ok(fx->r, NULL, 0, 10);
    assert_int_equal(n_events(v), 0);
    json_decref(v);
    assert_int_equal(store_commit(fx->s), 0);
    v = events_ok(fx->r, NULL, 0, 10);
    assert_int_equal(n_events(v), 3);
    json_decref(v);
}

/* Restart events written by store_recover come back with parsed arrays. */
static void test_reads_recovery_events(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(store_open_channel(fx->s, 1, "a:1", 1), 0);
    assert_int_equal(store_put_group(fx->s, "g", "PUSH", "CLUSTERING", "LAST", 1), 0);
    assert_int_equal(store_member_join(fx->s, "g", 1, "c\"quoted\"", 1), 0);
    assert_int_equal(store_commit(fx->s), 0);
    store_close(fx->s);
    char err[256];
    assert_int_equal(store_open(fx->path, &fx->s, err, sizeof err), 0);
    int groups = 0;
    assert_int_equal(store_recover(fx->s, 99, &groups), 0);
    assert_int_equal(groups, 1);
    json_t *v = events_ok(fx->r, "g", 0, 10);
    json_t *ev = json_array_get(json_object_get(v, "events"), 0);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "restart");
    json_t *before = json_object_get(ev, "before");
    assert_int_equal(json_array_size(before), 1);
    assert_string_equal(json_string_value(json_array_get(before, 0)), "c\"quoted\"");
    assert_int_equal(json_array_size(json_object_get(ev, "after")), 0);
    json_decref(v);
}

/* A name with invalid UTF-8 (stored as a client sent it) comes back with
 * the bad bytes replaced instead of failing the whole page. */
static void test_invalid_utf8_is_lossy(void **state)
{
    struct fx *fx = *state;
    struct store_event ev = {.ts_ms = 1, .group = "bad\xff\xc0name\xe2\x82", .kind = "join"};
    assert_int_equal(store_append_event(fx->s, &ev, NULL), 0);
    ev.group = "ok\xe2\x82\xac";    /* a valid euro sign passes through */
    ev.before_json = "[\"c\xff\"]"; /* as store_recover's json_group_array embeds a client id */
    assert_int_equal(store_append_event(fx->s, &ev, NULL), 0);
    assert_int_equal(store_commit(fx->s), 0);
    json_t *v = events_ok(fx->r, NULL, 0, 10);
    json_t *evs = json_object_get(v, "events");
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "group")), "bad??name??");
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 1), "group")),
                        "ok\xe2\x82\xac");
    json_t *before = json_object_get(json_array_get(evs, 1), "before");
    assert_int_equal(json_array_size(before), 1);
    assert_string_equal(json_string_value(json_array_get(before, 0)), "c?");
    json_decref(v);
}

/* The reader opens after the writer closed (WAL files removed by the last
 * close) and reads what was committed. */
static void test_reader_after_writer_closed(void **state)
{
    struct fx *fx = *state;
    append_events(fx->s, 2, 1);
    store_close(fx->s);
    fx->s = NULL;
    store_reader_close(fx->r);
    fx->r = NULL;
    char err[256] = "";
    assert_int_equal(store_reader_open(fx->path, &fx->r, err, sizeof err), 0);
    json_t *v = events_ok(fx->r, NULL, 0, 10);
    assert_int_equal(n_events(v), 2);
    json_decref(v);
}

static void expect_reader_fails(const char *path)
{
    struct store_reader *r = (struct store_reader *)1;
    char err[256] = "";
    int rc = store_reader_open(path, &r, err, sizeof err);
    assert_int_equal(rc, RMQ_EIO);
    assert_null(r);
    assert_true(strlen(err) > 0);
}

static void test_reader_open_errors(void **state)
{
    struct fx *fx = *state;
    char p[4300];
    snprintf(p, sizeof p, "%s/missing.db", fx->dir);
    expect_reader_fails(p); /* read-only never creates */
    assert_int_equal(access(p, F_OK), -1);

    snprintf(p, sizeof p, "%s/empty.db", fx->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE other (x)", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    expect_reader_fails(p); /* no events table: refused at open, not at the first query */

    snprintf(p, sizeof p, "%s/junk.db", fx->dir);
    assert_int_equal(test_write_junk(p, 4096), 0);
    expect_reader_fails(p);

    struct store_reader *r = NULL;
    assert_int_equal(store_reader_open(NULL, &r, NULL, 0), RMQ_EINVAL);
    char err[64] = "";
    assert_null(store_reader_events(NULL, NULL, 0, 10, err, sizeof err));
    assert_true(strlen(err) > 0);
    store_reader_close(NULL);
}

/* store_reader_events under test_oom_loop: the arguments, and the page. */
struct events_oom {
    struct store_reader *r;
    const char *group;
    int64_t since;
    int limit;
    json_t *v;
    char err[128];
};

static int events_oom_run(void *ctx)
{
    struct events_oom *x = ctx;
    x->err[0] = 0;
    x->v = store_reader_events(x->r, x->group, x->since, x->limit, x->err, sizeof x->err);
    return x->v ? 0 : RMQ_ENOMEM;
}

/* A failure says it ran out of memory; the page is kept for the caller. */
static void events_oom_check(void *ctx, int rc)
{
    struct events_oom *x = ctx;
    if (rc != 0)
        assert_non_null(strstr(x->err, "memory"));
}

/* With jansson on the allocation funnel, failing each allocation in turn
 * yields NULL with an error, never a partial result or a leak. */
static void test_events_oom(void **state)
{
    struct fx *fx = *state;
    append_events(fx->s, 5, 1);
    rmq_mem_install_jansson();
    struct events_oom x = {.r = fx->r, .limit = 10};
    const struct test_oom t = {.run = events_oom_run, .check = events_oom_check, .max = 1000};
    assert_true(test_oom_loop(&t, &x) > 0);
    json_t *v = x.v;
    assert_non_null(v);
    assert_int_equal(n_events(v), 5);
    json_decref(v);
    struct store_reader *r = NULL;
    rmq_mem_fail_after(0);
    int rc = store_reader_open(fx->path, &r, NULL, 0);
    rmq_mem_fail_after(-1);
    assert_int_equal(rc, RMQ_ENOMEM);
    assert_null(r);
}

static void put_event(struct store *s, const char *kind, const char *client, const char *before,
                      const char *after, bool delta, int64_t index)
{
    struct store_event ev = {.ts_ms = 5000,
                             .group = "d",
                             .kind = kind,
                             .client_id = client,
                             .channel_id = 1,
                             .before_json = before,
                             .after_json = after,
                             .delta = delta,
                             .delta_index = index};
    assert_int_equal(store_append_event(s, &ev, NULL), 0);
}

/* Lists of event i of the "d" group, as JSON text. */
static void lists_of(json_t *v, size_t i, char *before, char *after, size_t cap)
{
    json_t *ev = json_array_get(json_object_get(v, "events"), i);
    char *b = json_dumps(json_object_get(ev, "before"), JSON_COMPACT | JSON_ENCODE_ANY);
    char *a = json_dumps(json_object_get(ev, "after"), JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(b);
    assert_non_null(a);
    snprintf(before, cap, "%s", b);
    snprintf(after, cap, "%s", a);
    free(b);
    free(a);
}

/* A snapshot, then deltas (joins at positions, leaves, an unchanged list),
 * another snapshot, more deltas: every event reads back with the lists a
 * full row would have held, from a whole page, from pages of one, and
 * through the OOM loop. A delta that does not fit reads as null lists. */
static void test_delta_events_rebuilt(void **state)
{
    struct fx *fx = *state;
    struct store *s = fx->s;
    static const char *const want[][2] = {
        {"[]", "[\"b\"]"},
        {"[\"b\"]", "[\"a\",\"b\"]"},
        {"[\"a\",\"b\"]", "[\"a\",\"b\",\"c\"]"},
        {"[\"a\",\"b\",\"c\"]", "[\"a\",\"c\"]"},
        {"[\"a\",\"c\"]", "[\"a\",\"c\"]"},
        {"[\"x\"]", "[\"x\",\"y\"]"},
        {"[\"x\",\"y\"]", "[\"y\"]"},
        {"null", "null"},
    };
    put_event(s, "join", "b", "[]", "[\"b\"]", false, 0);
    put_event(s, "join", "a", NULL, NULL, true, 0);
    put_event(s, "join", "c", NULL, NULL, true, 2);
    put_event(s, "close", "b", NULL, NULL, true, 1);
    put_event(s, "subscription", NULL, NULL, NULL, true, -1);
    put_event(s, "join", "y", "[\"x\"]", "[\"x\",\"y\"]", false, 0); /* a snapshot */
    put_event(s, "expire", "x", NULL, NULL, true, 0);
    put_event(s, "expire", "z", NULL, NULL, true, 5); /* out of range */
    struct store_event bad = {.ts_ms = 1, .group = "d", .kind = "join", .delta = true, .delta_index = -2};
    assert_int_equal(store_append_event(s, &bad, NULL), RMQ_EINVAL);
    assert_int_equal(store_commit(s), 0);
    char b[256], a[256];
    json_t *v = events_ok(fx->r, "d", 0, 100);
    assert_int_equal(n_events(v), 8);
    for (size_t i = 0; i < 8; i++) {
        lists_of(v, i, b, a, sizeof b);
        assert_string_equal(b, want[i][0]);
        assert_string_equal(a, want[i][1]);
    }
    json_decref(v);
    for (int64_t since = 0; since < 8; since++) { /* each page starts the rebuild afresh */
        v = events_ok(fx->r, NULL, since, 1);
        lists_of(v, 0, b, a, sizeof b);
        assert_string_equal(b, want[since][0]);
        assert_string_equal(a, want[since][1]);
        json_decref(v);
    }
    rmq_mem_install_jansson();
    struct events_oom x = {.r = fx->r, .group = "d", .since = 2, .limit = 100};
    test_oom_loop(&(struct test_oom){.run = events_oom_run, .check = events_oom_check, .max = 3000}, &x);
    v = x.v;
    assert_non_null(v);

    assert_int_equal(n_events(v), 6);
    lists_of(v, 0, b, a, sizeof b);
    assert_string_equal(b, want[2][0]);
    json_decref(v);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

TEST_MAIN(T(test_paging_since_limit), T(test_group_filter), T(test_limit_clamped), T(test_event_shape),
          T(test_uncommitted_invisible_to_reader), T(test_reads_recovery_events),
          T(test_invalid_utf8_is_lossy), T(test_reader_after_writer_closed), T(test_reader_open_errors),
          T(test_events_oom), T(test_delta_events_rebuilt))
