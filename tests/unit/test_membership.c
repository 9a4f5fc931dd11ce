/* test_membership.c — the broker's change-detection rules (common/broker/membership.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mem.h"
#include "membership.h"
#include "test_support.h"

#include <string.h>

static struct rmq_subscription sub(const char *topic, int64_t ver)
{
    struct rmq_subscription s;
    memset(&s, 0, sizeof s);
    s.topic = (char *)topic;
    s.sub_string = (char *)"*";
    s.expression_type = (char *)"TAG";
    s.sub_version = ver;
    return s;
}

static struct mship_outcome beat(struct mship_group *g, uint64_t ch, const char *cid,
                                 struct rmq_subscription *subs, size_t n, int64_t now)
{
    struct rmq_consumer_data cd = {.group = g->name,
                                   .consume_type = RMQ_CONSUME_PASSIVELY,
                                   .message_model = RMQ_MODEL_CLUSTERING,
                                   .subs = subs,
                                   .nsubs = n};
    struct mship_heartbeat_in in = {.channel_id = ch, .client_id = cid, .cd = &cd, .now_ms = now};
    struct mship_outcome out;
    assert_int_equal(mship_apply_heartbeat(g, &in, &out), 0);
    return out;
}

static void test_new_channel_is_a_change_reheartbeat_is_not(void **state)
{
    (void)state;
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    struct rmq_subscription s[] = {sub("T", 1)};
    struct mship_outcome o = beat(&g, 1, "a", s, 1, 100);
    assert_true(o.changed);
    assert_true(o.flags & MSHIP_JOINED);
    assert_true(o.flags & MSHIP_SUB_ADDED);
    o = beat(&g, 1, "a", s, 1, 200);
    assert_false(o.changed);
    assert_int_equal(g.members[0].last_hb_ms, 200);
    assert_int_equal(g.members[0].joined_ms, 100);
    /* same client id on a second connection: a new member */
    o = beat(&g, 2, "a", s, 1, 300);
    assert_true(o.changed);
    assert_int_equal(g.nmembers, 2);
    mship_group_clear(&g);
}

static void test_newer_sub_version_replaces_without_change(void **state)
{
    (void)state;
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    struct rmq_subscription s1[] = {sub("T", 5)};
    beat(&g, 1, "a", s1, 1, 0);
    struct rmq_subscription s2[] = {sub("T", 9)};
    s2[0].sub_string = (char *)"TagA";
    struct mship_outcome o = beat(&g, 1, "a", s2, 1, 1);
    assert_false(o.changed);
    assert_true(o.flags & MSHIP_SUB_REPLACED);
    assert_string_equal(mship_find_sub(&g, "T")->sub_string, "TagA");
    /* an older version does not replace */
    struct rmq_subscription s3[] = {sub("T", 7)};
    s3[0].sub_string = (char *)"Old";
    o = beat(&g, 1, "a", s3, 1, 2);
    assert_false(o.flags & MSHIP_SUB_REPLACED);
    assert_string_equal(mship_find_sub(&g, "T")->sub_string, "TagA");
    mship_group_clear(&g);
}

static void test_topic_added_and_removed_are_changes(void **state)
{
    (void)state;
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    struct rmq_subscription s1[] = {sub("T", 1)};
    beat(&g, 1, "a", s1, 1, 0);
    struct rmq_subscription s2[] = {sub("T", 1), sub("U", 1)};
    struct mship_outcome o = beat(&g, 1, "a", s2, 2, 1);
    assert_true(o.changed);
    assert_true(o.flags & MSHIP_SUB_ADDED);
    assert_int_equal(g.nsubs, 2);
    o = beat(&g, 1, "a", s1, 1, 2);
    assert_true(o.changed);
    assert_true(o.flags & MSHIP_SUB_REMOVED);
    assert_int_equal(g.nsubs, 1);
    assert_null(mship_find_sub(&g, "U"));
    /* PROTOCOL (docs/protocol.md §4.1): the table is per group: another member listing other topics flips it
     */
    struct rmq_subscription s3[] = {sub("V", 1)};
    o = beat(&g, 2, "b", s3, 1, 3);
    assert_true(o.flags & MSHIP_SUB_REMOVED);
    assert_true(o.flags & MSHIP_SUB_ADDED);
    assert_non_null(mship_find_sub(&g, "V"));
    assert_null(mship_find_sub(&g, "T"));
    mship_group_clear(&g);
}

static void test_client_id_change_on_known_channel(void **state)
{
    (void)state;
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    struct rmq_subscription s[] = {sub("T", 1)};
    beat(&g, 1, "a", s, 1, 0);
    struct mship_outcome o = beat(&g, 1, "b", s, 1, 1);
    assert_false(o.changed);
    assert_true(o.flags & MSHIP_CLIENT_ID_CHANGED);
    assert_string_equal(g.members[0].client_id, "b");
    mship_group_clear(&g);
}

static void test_v2_without_sub_keeps_subscriptions(void **state)
{
    (void)state;
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    struct rmq_subscription s[] = {sub("T", 1)};
    struct rmq_consumer_data cd = {
        .group = g.name, .subs = s, .nsubs = 1, .message_model = RMQ_MODEL_CLUSTERING};
    struct mship_heartbeat_in in = {
        .channel_id = 1, .client_id = "a", .cd = &cd, .fingerprint = 77, .now_ms = 1};
    struct mship_outcome o;
    assert_int_equal(mship_apply_heartbeat(&g, &in, &o), 0);
    assert_false(o.sub_change);
    struct rmq_consumer_data empty = {.group = g.name, .message_model = RMQ_MODEL_CLUSTERING};
    in.cd = &empty;
    in.without_sub = true;
    in.now_ms = 2;
    assert_int_equal(mship_apply_heartbeat(&g, &in, &o), 0);
    assert_false(o.changed);
    assert_false(o.sub_change);
    assert_int_equal(g.nsubs, 1);
    in.fingerprint = 78;
    assert_int_equal(mship_apply_heartbeat(&g, &in, &o), 0);
    assert_true(o.sub_change);
    assert_int_equal(g.nsubs, 1);
    /* v1 (fingerprint 0) with an empty list really unsubscribes */
    in.fingerprint = 0;
    in.without_sub = false;
    assert_int_equal(mship_apply_heartbeat(&g, &in, &o), 0);
    assert_true(o.changed);
    assert_int_equal(g.nsubs, 0);
    mship_group_clear(&g);
}

static void test_remove_and_expire(void **state)
{
    (void)state;
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    struct rmq_subscription s[] = {sub("T", 1)};
    beat(&g, 1, "a", s, 1, 0);
    beat(&g, 2, "b", s, 1, 50);
    beat(&g, 3, "c", s, 1, 100);
    uint64_t ids[4];
    assert_int_equal(mship_collect_expired(&g, 140, 100, ids, 4), 1);
    assert_int_equal(ids[0], 1);
    assert_int_equal(mship_collect_expired(&g, 160, 100, ids, 4), 2);
    assert_int_equal(ids[1], 2);
    assert_int_equal(mship_collect_expired(&g, 160, 100, ids, 1), 1);
    assert_int_equal(mship_collect_expired(&g, 100, 100, ids, 4), 0);
    struct mship_member m;
    size_t idx;
    assert_int_equal(mship_remove_channel(&g, 2, &m, &idx), 1);
    assert_int_equal(idx, 1);
    assert_string_equal(m.client_id, "b");
    rmq_free(m.client_id);
    assert_int_equal(mship_remove_channel(&g, 2, NULL, NULL), 0);
    assert_int_equal(g.nmembers, 2);
    assert_string_equal(g.members[1].client_id, "c");
    mship_group_clear(&g);
}

static void test_broadcast_does_not_notify(void **state)
{
    (void)state;
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    struct rmq_consumer_data cd = {.group = g.name, .message_model = RMQ_MODEL_BROADCASTING};
    struct mship_heartbeat_in in = {.channel_id = 1, .client_id = "a", .cd = &cd};
    struct mship_outcome o;
    assert_int_equal(mship_apply_heartbeat(&g, &in, &o), 0);
    assert_true(o.changed);
    assert_false(mship_notifies(&g));
    mship_group_clear(&g);
}

struct hb_oom {
    struct rmq_subscription s[2];
    struct mship_group g;
};

static void hb_oom_setup(void *ctx)
{
    struct hb_oom *x = ctx;
    assert_int_equal(mship_group_init(&x->g, "G"), 0);
}

static int hb_oom_run(void *ctx)
{
    struct hb_oom *x = ctx;
    struct rmq_consumer_data cd = {.group = x->g.name, .subs = x->s, .nsubs = 2};
    struct mship_heartbeat_in in = {.channel_id = 1, .client_id = "a", .cd = &cd};
    struct mship_outcome o;
    return mship_apply_heartbeat(&x->g, &in, &o);
}

static void hb_oom_check(void *ctx, int rc)
{
    struct hb_oom *x = ctx;
    if (rc == 0) {
        assert_int_equal(x->g.nmembers, 1);
        assert_int_equal(x->g.nsubs, 2);
    } else {
        assert_true(x->g.nmembers <= 1);
        for (size_t i = 0; i < x->g.nmembers; i++)
            assert_non_null(x->g.members[i].client_id);
    }
    mship_group_clear(&x->g);
}

static void test_out_of_memory_leaves_group_consistent(void **state)
{
    (void)state;
    struct hb_oom x = {.s = {sub("T", 1), sub("U", 2)}};
    test_oom_loop(
        &(struct test_oom){.setup = hb_oom_setup, .run = hb_oom_run, .check = hb_oom_check, .max = 64}, &x);
}

/* The channel index against a model, through growth and backward-shift deletes. */
/* Random joins and removals; every few steps each channel must be found
 * exactly where it is, and members must stay in join order. first_seq
 * starts the join sequence near its end, so it wraps mid-test. */
static void channel_index_random(uint32_t first_seq)
{
    struct mship_group g;
    assert_int_equal(mship_group_init(&g, "G"), 0);
    g.next_join_seq = first_seq;
    struct rmq_subscription s[] = {sub("T", 1)};
    enum { N = 600 };
    static bool present[N];
    memset(present, 0, sizeof present);
    unsigned seed = 12345;
    for (int step = 0; step < 5000; step++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t ch = (uint64_t)((seed >> 8) % N) * 0x100000001ull + 7; /* spread, clustered hashes */
        size_t k = (size_t)((ch - 7) / 0x100000001ull);
        if ((seed >> 4) % 3 == 0) {
            int removed = mship_remove_channel(&g, ch, NULL, NULL);
            assert_int_equal(removed, present[k]);
            present[k] = false;
        } else {
            beat(&g, ch, "c", s, 1, step);
            present[k] = true;
        }
        if (step % 250 == 0) {
            size_t n = 0;
            for (size_t i = 0; i < N; i++) {
                uint64_t id = (uint64_t)i * 0x100000001ull + 7;
                long at = mship_find(&g, id);
                if (present[i]) {
                    assert_true(at >= 0);
                    assert_int_equal(g.members[at].channel_id, id);
                    n++;
                } else {
                    assert_int_equal(at, -1);
                }
            }
            assert_int_equal(n, g.nmembers);
            for (size_t i = 1; i < g.nmembers; i++)
                assert_true(g.members[i - 1].join_seq < g.members[i].join_seq);
        }
    }
    mship_group_clear(&g);
}

static void test_channel_index_random(void **state)
{
    (void)state;
    channel_index_random(0);
}

static void test_channel_index_join_seq_wraps(void **state)
{
    (void)state;
    channel_index_random(UINT32_MAX - 1000);
}

TEST_MAIN(cmocka_unit_test(test_new_channel_is_a_change_reheartbeat_is_not),
          cmocka_unit_test(test_newer_sub_version_replaces_without_change),
          cmocka_unit_test(test_topic_added_and_removed_are_changes),
          cmocka_unit_test(test_client_id_change_on_known_channel),
          cmocka_unit_test(test_v2_without_sub_keeps_subscriptions), cmocka_unit_test(test_remove_and_expire),
          cmocka_unit_test(test_broadcast_does_not_notify),
          cmocka_unit_test(test_out_of_memory_leaves_group_consistent),
          cmocka_unit_test(test_channel_index_random), cmocka_unit_test(test_channel_index_join_seq_wraps))
