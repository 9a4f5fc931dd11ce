/* test_hash_ring.c — the consistent-hash ring: hash function, ceiling
 * lookup with wrap-around, replica numbering, collision overwrite, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "hash_ring.h"
#include "mem.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

static uint32_t h(const char *s)
{
    return hash_ring_hash(s, strlen(s));
}

/* The node owning x; the lookup must succeed. */
static size_t owner(const struct hash_ring *r, uint32_t x)
{
    size_t node = (size_t)-1;
    assert_int_equal(hash_ring_lookup(r, x, &node), 0);
    return node;
}

static void test_hash_is_md5_prefix(void **state)
{
    (void)state;
    assert_true(h("abc") == 0x90015098u);                /* protocol.md §5.8 */
    assert_true(h("192.168.0.1@1001-0") == 0x8b4127dbu); /* a virtual node */
    assert_true(h("MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=0]") == 0x767d59fcu);
}

static void test_empty_and_unsealed(void **state)
{
    (void)state;
    struct hash_ring *r;
    size_t node;
    assert_int_equal(hash_ring_new(&r, 2, 0), 0);
    assert_int_equal(hash_ring_lookup(r, 5, &node), RMQ_ESTATE);
    assert_int_equal(hash_ring_seal(r), 0);
    assert_int_equal(hash_ring_lookup(r, 5, &node), RMQ_ENOTFOUND);
    assert_int_equal(hash_ring_add(r, "a", 0, 0), 0); /* 0 replicas: still empty */
    assert_int_equal(hash_ring_seal(r), 0);
    assert_int_equal(hash_ring_lookup(r, 5, &node), RMQ_ENOTFOUND);
    assert_int_equal(hash_ring_add(r, "a", 2, 1), RMQ_EINVAL); /* id out of range */
    assert_int_equal(hash_ring_add(r, "a", 0, -1), RMQ_EINVAL);
    assert_int_equal(hash_ring_add(r, NULL, 0, 1), RMQ_EINVAL);
    assert_int_equal(hash_ring_add(r, "a", 0, 1), 0);
    assert_int_equal(hash_ring_lookup(r, 5, &node), RMQ_ESTATE); /* adding unseals */
    hash_ring_free(r);
    hash_ring_free(NULL);
}

/* Owner = first key >= x; past the last key, the first key's owner. */
static void test_ceiling_and_wrap(void **state)
{
    (void)state;
    struct hash_ring *r;
    assert_int_equal(hash_ring_new(&r, 2, 2), 0);
    assert_int_equal(hash_ring_add(r, "a", 0, 1), 0); /* key "a-0" */
    assert_int_equal(hash_ring_add(r, "b", 1, 1), 0); /* key "b-0" */
    assert_int_equal(hash_ring_seal(r), 0);
    uint32_t ka = h("a-0"), kb = h("b-0");
    uint32_t lo = ka < kb ? ka : kb, hi = ka < kb ? kb : ka;
    size_t lo_node = ka < kb ? 0 : 1, hi_node = 1 - lo_node;
    assert_int_equal(owner(r, lo), lo_node); /* equal key counts */
    assert_int_equal(owner(r, lo + 1), hi_node);
    assert_int_equal(owner(r, hi), hi_node);
    if (hi < UINT32_MAX) {
        assert_int_equal(owner(r, hi + 1), lo_node); /* wrap */
    }
    assert_int_equal(owner(r, 0), lo_node);
    hash_ring_free(r);
}

/* Adding a node again continues its replica numbering. */
static void test_replica_numbering(void **state)
{
    (void)state;
    struct hash_ring *r;
    assert_int_equal(hash_ring_new(&r, 2, 4), 0);
    assert_int_equal(hash_ring_add(r, "a", 0, 2), 0);
    assert_int_equal(hash_ring_add(r, "a", 0, 2), 0); /* keys a-2, a-3 */
    assert_int_equal(hash_ring_replicas(r, 0), 4);
    assert_int_equal(hash_ring_size(r), 4);
    assert_int_equal(hash_ring_add(r, "b", 1, 1), 0);
    assert_int_equal(hash_ring_seal(r), 0);
    assert_int_equal(owner(r, h("a-3")), 0);
    assert_int_equal(owner(r, h("b-0")), 1);
    hash_ring_free(r);
}

/* The ring holds one key, node winner's only replica (loser has none),
 * and once sealed winner owns every point. */
static void expect_sole_owner(struct hash_ring *r, size_t winner, size_t loser)
{
    assert_int_equal(hash_ring_size(r), 1);
    assert_int_equal(hash_ring_replicas(r, winner), 1);
    assert_int_equal(hash_ring_replicas(r, loser), 0);
    assert_int_equal(hash_ring_seal(r), 0);
    assert_int_equal(owner(r, 1), winner);
}

/* "n11593-0" and "n38145-0" share the hash 0x6fd56d8c (found offline): the
 * later put wins and the loser's replica count drops, which changes the
 * numbering of its next add. */
static void test_collision_overwrites(void **state)
{
    (void)state;
    assert_true(h("n11593-0") == 0x6fd56d8cu);
    assert_true(h("n38145-0") == 0x6fd56d8cu);
    struct hash_ring *r;
    assert_int_equal(hash_ring_new(&r, 2, 0), 0);
    assert_int_equal(hash_ring_add(r, "n11593", 0, 1), 0);
    assert_int_equal(hash_ring_add(r, "n38145", 1, 1), 0);
    expect_sole_owner(r, 1, 0);
    /* n11593 owns nothing, so its next replica is numbered 0 again and takes
     * the key back. */
    assert_int_equal(hash_ring_add(r, "n11593", 0, 1), 0);
    expect_sole_owner(r, 0, 1);
    hash_ring_free(r);
}

/* Many nodes: the table grows and every key stays findable. */
static void test_growth(void **state)
{
    (void)state;
    struct hash_ring *r;
    enum { NODES = 300, REPL = 7 };
    assert_int_equal(hash_ring_new(&r, NODES, 0), 0);
    char name[32];
    for (size_t i = 0; i < NODES; i++) {
        snprintf(name, sizeof name, "10.0.%zu.1@%zu", i % 256, i);
        assert_int_equal(hash_ring_add(r, name, i, REPL), 0);
    }
    assert_int_equal(hash_ring_seal(r), 0);
    size_t total = 0;
    for (size_t i = 0; i < NODES; i++)
        total += hash_ring_replicas(r, i);
    assert_int_equal(total, hash_ring_size(r));
    for (size_t i = 0; i < NODES; i++) {
        char key[48];
        snprintf(key, sizeof key, "10.0.%zu.1@%zu-%d", i % 256, i, REPL - 1);
        assert_int_equal(owner(r, h(key)), i);
    }
    hash_ring_free(r);
}

static int ring_oom_run(void *ctx)
{
    struct hash_ring **r = ctx;
    int rc = hash_ring_new(r, 4, 0);
    for (size_t i = 0; !rc && i < 4; i++)
        rc = hash_ring_add(*r, (const char *[]){"n0", "n1", "n2", "n3"}[i], i, 20);
    return rc ? rc : hash_ring_seal(*r);
}

static void ring_oom_check(void *ctx, int rc)
{
    (void)rc;
    struct hash_ring **r = ctx;
    hash_ring_free(*r);
    *r = NULL;
}

static void test_limits_and_oom(void **state)
{
    (void)state;
    struct hash_ring *r;
    assert_int_equal(hash_ring_new(&r, 1, HASH_RING_MAX_VNODES + 1), RMQ_E2BIG);
    assert_null(r);
    assert_int_equal(hash_ring_new(&r, 1, 0), 0);
    assert_int_equal(hash_ring_add(r, "a", 0, (long)HASH_RING_MAX_VNODES + 1), RMQ_E2BIG);
    hash_ring_free(r);
    /* Fail each allocation in turn: only RMQ_ENOMEM, never a crash or leak. */
    test_oom_loop(&(struct test_oom){.run = ring_oom_run, .check = ring_oom_check, .max = 100}, &r);
}

TEST_MAIN(cmocka_unit_test(test_hash_is_md5_prefix), cmocka_unit_test(test_empty_and_unsealed),
          cmocka_unit_test(test_ceiling_and_wrap), cmocka_unit_test(test_replica_numbering),
          cmocka_unit_test(test_collision_overwrites), cmocka_unit_test(test_growth),
          cmocka_unit_test(test_limits_and_oom))
