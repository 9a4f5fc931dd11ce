/* test_registry.c — server/model/registry.c: hooks fire once per real change,
 * channels and groups stay consistent through close, unregister and expiry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mem.h"
#include "registry.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct log {
    int joined, left, subs, beats, empty;
    enum reg_leave_reason last_why;
    size_t last_index;
    char last_left[64];
};

static void on_joined(void *ctx, struct reg_group *g, const struct mship_member *m)
{
    (void)g;
    (void)m;
    ((struct log *)ctx)->joined++;
}
static void on_left(void *ctx, struct reg_group *g, const struct mship_member *m, size_t index,
                    enum reg_leave_reason why)
{
    (void)g;
    struct log *l = ctx;
    l->left++;
    l->last_why = why;
    l->last_index = index;
    strncpy(l->last_left, m->client_id, sizeof l->last_left - 1);
}
static void on_subs(void *ctx, struct reg_group *g, unsigned flags)
{
    (void)g;
    (void)flags;
    ((struct log *)ctx)->subs++;
}
static void on_beat(void *ctx, struct reg_group *g, const struct mship_member *m, unsigned flags)
{
    (void)g;
    (void)m;
    (void)flags;
    ((struct log *)ctx)->beats++;
}
static void on_empty(void *ctx, struct reg_group *g)
{
    (void)g;
    ((struct log *)ctx)->empty++;
}

/* A registry logging its hooks into l. */
static void setup(struct registry *r, struct log *l)
{
    memset(l, 0, sizeof *l);
    struct registry_hooks h = {l, on_joined, on_left, on_subs, on_beat, on_empty};
    registry_init(r, &h);
}

/* A test's registry and hook log (cmocka state). */
struct world {
    struct registry r;
    struct log l;
};

static int world_setup(void **state)
{
    struct world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    setup(&w->r, &w->l);
    *state = w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;
    registry_free(&w->r);
    free(w);
    return 0;
}

/* Opens channels first..last (peers "p1", "p2"...). */
static void open_channels(struct registry *r, uint64_t first, uint64_t last)
{
    for (uint64_t ch = first; ch <= last; ch++) {
        char peer[32];
        snprintf(peer, sizeof peer, "p%llu", (unsigned long long)ch);
        assert_int_equal(registry_channel_open(r, ch, NULL, peer, 0), 0);
    }
}

/* A heartbeat of cid on channel ch for group (none if NULL) on topic (none
 * if NULL), with its raw body (NULL: none) so the repeat path can be
 * exercised, at now. */
static void beat_body(struct registry *r, uint64_t ch, const char *cid, const char *group, const char *topic,
                      const char *body, int64_t now)
{
    struct rmq_subscription sub = {
        .topic = (char *)topic, .sub_string = (char *)"*", .expression_type = (char *)"TAG"};
    struct rmq_consumer_data cd = {
        .group = (char *)group, .message_model = RMQ_MODEL_CLUSTERING, .subs = &sub, .nsubs = topic ? 1 : 0};
    struct rmq_heartbeat hb = {.client_id = (char *)cid, .consumers = &cd, .nconsumers = group ? 1 : 0};
    struct registry_hb_result res;
    assert_int_equal(
        registry_heartbeat(r, ch, 0, 409, &hb, (const uint8_t *)body, body ? strlen(body) : 0, now, &res), 0);
}

static void beat(struct registry *r, uint64_t ch, const char *cid, const char *group, const char *topic)
{
    beat_body(r, ch, cid, group, topic, NULL, 1000);
}

static void test_join_close_removes_from_every_group(void **state)
{
    struct world *w = *state;
    open_channels(&w->r, 1, 2);
    beat(&w->r, 1, "a", "G1", "T");
    beat(&w->r, 1, "a", "G2", "T");
    beat(&w->r, 2, "b", "G1", "T");
    assert_int_equal(w->l.joined, 3);
    beat(&w->r, 1, "a", "G1", "T");
    assert_int_equal(w->l.joined, 3);
    assert_true(registry_sanity(&w->r));
    registry_channel_close(&w->r, 1);
    assert_true(registry_sanity(&w->r));
    assert_int_equal(w->l.left, 2);
    assert_int_equal(w->l.last_why, REG_LEAVE_CLOSE);
    assert_null(registry_group(&w->r, "G2")); /* emptied and removed */
    assert_int_equal(w->l.empty, 1);
    assert_true(registry_group_known(&w->r, "G2"));
    assert_int_equal(registry_group(&w->r, "G1")->g.nmembers, 1);
    assert_null(registry_channel(&w->r, 1));
}

static void test_unregister_keeps_channel(void **state)
{
    struct world *w = *state;
    open_channels(&w->r, 1, 2);
    beat(&w->r, 1, "a", "G", "T");
    beat(&w->r, 2, "b", "G", "T");
    assert_int_equal(registry_unregister(&w->r, 1, "G"), 1);
    assert_int_equal(w->l.last_why, REG_LEAVE_UNREGISTER);
    assert_string_equal(w->l.last_left, "a");
    assert_int_equal(w->l.last_index, 0);
    assert_int_equal(registry_unregister(&w->r, 1, "G"), 0);
    assert_true(registry_sanity(&w->r));
    assert_non_null(registry_channel(&w->r, 1));
    /* a later close of that channel is not a second leave */
    registry_channel_close(&w->r, 1);
    assert_int_equal(w->l.left, 1);
}

static void test_expire_reports_channels_once(void **state)
{
    struct world *w = *state;
    open_channels(&w->r, 1, 2);
    beat(&w->r, 1, "a", "G1", "T");
    beat(&w->r, 1, "a", "G2", "T");
    beat(&w->r, 2, "b", "G1", "T");
    uint64_t ids[8];
    assert_int_equal(registry_expire(&w->r, 1000 + 50, 100, ids, 8), 0);
    size_t n = registry_expire(&w->r, 1000 + 200, 100, ids, 8);
    assert_int_equal(n, 2); /* channel 1 lost two memberships but is listed once */
    assert_int_equal(w->l.left, 3);
    assert_int_equal(w->l.last_why, REG_LEAVE_EXPIRE);
    assert_null(registry_group(&w->r, "G1"));
    assert_int_equal(registry_channel(&w->r, 1)->ngroups, 0);
}

static void test_notify_pending_is_coalesced_and_safe(void **state)
{
    struct world *w = *state;
    open_channels(&w->r, 1, 1);
    beat(&w->r, 1, "a", "G", "T");
    struct reg_group *g = registry_group(&w->r, "G");
    registry_mark_notify(&w->r, g);
    registry_mark_notify(&w->r, g);
    /* the group empties while flagged: it must leave the pending list */
    registry_channel_close(&w->r, 1);
    assert_null(registry_take_pending(&w->r));
    open_channels(&w->r, 2, 2);
    beat(&w->r, 2, "b", "G", "T");
    g = registry_group(&w->r, "G");
    registry_mark_notify(&w->r, g);
    registry_mark_notify(&w->r, g);
    struct reg_group *p = registry_take_pending(&w->r);
    assert_ptr_equal(p, g);
    assert_null(p->next_pending);
}

static void hb_oom_setup(void *ctx)
{
    struct world *w = ctx;
    setup(&w->r, &w->l);
    assert_int_equal(registry_channel_open(&w->r, 1, NULL, "p", 0), 0);
}

static int hb_oom_run(void *ctx)
{
    struct world *w = ctx;
    struct rmq_subscription sub = {
        .topic = (char *)"T", .sub_string = (char *)"*", .expression_type = (char *)"TAG"};
    struct rmq_consumer_data cd = {.group = (char *)"G", .subs = &sub, .nsubs = 1};
    struct rmq_heartbeat hb = {.client_id = (char *)"a", .consumers = &cd, .nconsumers = 1};
    struct registry_hb_result res;
    return registry_heartbeat(&w->r, 1, 0, 409, &hb, NULL, 0, 0, &res);
}

static void hb_oom_check(void *ctx, int rc)
{
    struct world *w = ctx;
    struct reg_group *g = registry_group(&w->r, "G");
    struct reg_channel *ch = registry_channel(&w->r, 1);
    /* channel and group agree about the membership whatever failed */
    bool in_group = g && mship_find(&g->g, 1) >= 0;
    assert_int_equal(in_group, ch->ngroups == 1);
    registry_free(&w->r);
    if (rc == 0)
        assert_true(in_group);
}

static void test_out_of_memory_heartbeat(void **state)
{
    (void)state;
    struct world w;
    test_oom_loop(
        &(struct test_oom){.setup = hb_oom_setup, .run = hb_oom_run, .check = hb_oom_check, .max = 64}, &w);
}

static bool repeat(struct registry *r, uint64_t ch, const char *body, int64_t now)
{
    struct registry_hb_result res;
    return registry_heartbeat_repeat(r, ch, 0, 409, (const uint8_t *)body, strlen(body), now, &res);
}

static void test_repeat_only_when_nothing_could_change(void **state)
{
    struct world *w = *state;
    open_channels(&w->r, 1, 2);
    assert_false(repeat(&w->r, 1, "B1", 10)); /* nothing applied yet */
    beat_body(&w->r, 1, "a", "G", "T", "B1", 10);
    int beats = w->l.beats;
    assert_true(repeat(&w->r, 1, "B1", 20));
    assert_int_equal(w->l.beats, beats + 1);
    assert_int_equal(registry_group(&w->r, "G")->g.members[0].last_hb_ms, 20);
    assert_false(repeat(&w->r, 1, "B2", 30));     /* another body */
    assert_false(repeat(&w->r, 2, "B1", 30));     /* another channel */
    beat_body(&w->r, 2, "b", "G", "U", "B3", 40); /* b flips the group's table to U */
    assert_false(repeat(&w->r, 1, "B1", 50));     /* a's repeat would flip it back: a real change */
    beat_body(&w->r, 1, "a", "G", "T", "B1", 50);
    assert_true(repeat(&w->r, 1, "B1", 60));
    assert_int_equal(registry_unregister(&w->r, 1, "G"), 1);
    assert_false(repeat(&w->r, 1, "B1", 70)); /* no longer a member: it must rejoin in full */
}

/* A remembered heartbeat points at its groups; once one is freed (its last
 * member unregistered) the reference dangles and must not be followed: the
 * next identical body goes the full way and re-creates the group. Under the
 * sanitizers and valgrind a followed reference is a use after free. */
static void test_repeat_after_group_freed(void **state)
{
    struct world *w = *state;
    open_channels(&w->r, 1, 1);
    beat_body(&w->r, 1, "a", "G", "T", "B1", 10);
    assert_true(repeat(&w->r, 1, "B1", 20));
    assert_int_equal(registry_unregister(&w->r, 1, "G"), 1);
    assert_null(registry_group(&w->r, "G"));
    assert_false(repeat(&w->r, 1, "B1", 30));
    beat_body(&w->r, 1, "a", "G", "T", "B1", 40);
    assert_non_null(registry_group(&w->r, "G"));
    assert_true(repeat(&w->r, 1, "B1", 50));
}

/* A scan skips a group whose oldest heartbeat cannot be past the expiry
 * (its floor), yet nothing that should expire is missed: a member that
 * stopped heartbeating, one whose peer kept beating, one that joined after
 * the scan that emptied its group. */
static void test_expire_floor_skips_but_misses_nothing(void **state)
{
    struct world *w = *state;
    open_channels(&w->r, 1, 3);
    beat_body(&w->r, 1, "a", "G", "T", "{}", 1000);
    beat_body(&w->r, 2, "b", "G", "T", "{}", 1000);
    uint64_t ids[8];
    assert_int_equal(registry_expire(&w->r, 1050, 100, ids, 8), 0);
    assert_int_equal(registry_group(&w->r, "G")->expiry_floor_ms, 1000);
    assert_int_equal(registry_expire(&w->r, 1090, 100, ids, 8), 0); /* skipped: floor 1000 is 90 ms old */
    beat_body(&w->r, 2, "b", "G", "T", "{}", 1080);
    size_t n = registry_expire(&w->r, 1101, 100, ids, 8);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 1);
    assert_int_equal(registry_group(&w->r, "G")->expiry_floor_ms, 1080);
    assert_int_equal(registry_expire(&w->r, 1181, 100, ids, 8), 1); /* b, from its beat at 1080 */
    assert_null(registry_group(&w->r, "G"));
    /* a group emptied... and joined again after a scan */
    beat_body(&w->r, 3, "c", "H", "T", "{}", 2000);
    assert_int_equal(registry_expire(&w->r, 2050, 100, ids, 8), 0);
    beat_body(&w->r, 1, "a", "H", "T", "{}", 2060);
    assert_int_equal(registry_expire(&w->r, 2101, 100, ids, 8), 1); /* c */
    assert_int_equal(ids[0], 3);
    assert_int_equal(registry_expire(&w->r, 2161, 100, ids, 8), 1); /* a */
    assert_int_equal(ids[0], 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, world_setup, world_teardown)

TEST_MAIN(T(test_join_close_removes_from_every_group), T(test_unregister_keeps_channel),
          T(test_expire_reports_channels_once), T(test_expire_floor_skips_but_misses_nothing),
          T(test_notify_pending_is_coalesced_and_safe), cmocka_unit_test(test_out_of_memory_heartbeat),
          T(test_repeat_only_when_nothing_could_change), T(test_repeat_after_group_freed))
