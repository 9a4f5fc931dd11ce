/* test_hashmap.c — common/base/hashmap.c against a reference model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hashmap.h"
#include "mem.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>

static void test_put_get_remove_many(void **state)
{
    (void)state;
    struct hashmap m;
    hashmap_init(&m);
    enum { N = 5000 };
    static int vals[N];
    char key[32];
    for (int i = 0; i < N; i++) {
        vals[i] = i;
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(hashmap_put_str(&m, key, &vals[i], NULL), 0);
    }
    assert_int_equal(m.count, N);
    assert_true(hashmap_sanity(&m));
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        int *v = hashmap_get_str(&m, key);
        assert_non_null(v);
        assert_int_equal(*v, i);
    }
    assert_null(hashmap_get_str(&m, "missing"));
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "k%d", i);
        assert_ptr_equal(hashmap_remove_str(&m, key), &vals[i]);
    }
    assert_int_equal(m.count, N / 2);
    assert_true(hashmap_sanity(&m));
    size_t b, seen = 0;
    for (struct hashmap_entry *e = hashmap_first(&m, &b); e; e = hashmap_next(&m, e, &b)) {
        int v = *(int *)e->val;
        assert_int_equal(v % 2, 1);
        seen++;
    }
    assert_int_equal(seen, N / 2);
    hashmap_free(&m, NULL);
}

static void test_binary_keys_and_replace(void **state)
{
    (void)state;
    struct hashmap m;
    hashmap_init(&m);
    uint64_t k1 = 1, k2 = 1ull << 40;
    int a = 1, b = 2, c = 3;
    void *old = &c;
    assert_int_equal(hashmap_put(&m, &k1, sizeof k1, &a, &old), 0);
    assert_null(old);
    assert_int_equal(hashmap_put(&m, &k2, sizeof k2, &b, NULL), 0);
    assert_int_equal(hashmap_put(&m, &k1, sizeof k1, &c, &old), 0);
    assert_ptr_equal(old, &a);
    assert_ptr_equal(hashmap_get(&m, &k1, sizeof k1), &c);
    /* keys with embedded NULs are distinct by their full length */
    assert_int_equal(hashmap_put(&m, "a\0b", 3, &a, NULL), 0);
    assert_int_equal(hashmap_put(&m, "a\0c", 3, &b, NULL), 0);
    assert_ptr_equal(hashmap_get(&m, "a\0b", 3), &a);
    assert_ptr_equal(hashmap_get(&m, "a\0c", 3), &b);
    assert_null(hashmap_get(&m, "a", 1));
    hashmap_free(&m, NULL);
}

struct put_oom {
    struct hashmap m;
    int v;
};

static int put_oom_run(void *ctx)
{
    struct put_oom *x = ctx;
    return hashmap_put_str(&x->m, "x", &x->v, NULL);
}

static void put_oom_check(void *ctx, int rc)
{
    struct put_oom *x = ctx;
    if (rc == 0)
        return;
    assert_null(hashmap_get_str(&x->m, "x"));
    assert_int_equal(x->m.count, 0);
    assert_true(hashmap_sanity(&x->m));
}

static void test_out_of_memory_leaves_map_unchanged(void **state)
{
    (void)state;
    struct put_oom x = {.v = 7};
    hashmap_init(&x.m);
    /* One map for every run: a failed put may keep the grown table. */
    const struct test_oom t = {.run = put_oom_run, .check = put_oom_check, .keeps = 1, .max = 4};
    test_oom_loop(&t, &x);
    assert_ptr_equal(hashmap_get_str(&x.m, "x"), &x.v);
    hashmap_free(&x.m, NULL);
}

static int freed;
static void count_free(void *p)
{
    (void)p;
    freed++;
}

static void test_free_calls_value_destructor(void **state)
{
    (void)state;
    struct hashmap m;
    hashmap_init(&m);
    int v;
    hashmap_put_str(&m, "a", &v, NULL);
    hashmap_put_str(&m, "b", &v, NULL);
    freed = 0;
    hashmap_free(&m, count_free);
    assert_int_equal(freed, 2);
    assert_int_equal(m.count, 0);
}

TEST_MAIN(cmocka_unit_test(test_put_get_remove_many), cmocka_unit_test(test_binary_keys_and_replace),
          cmocka_unit_test(test_out_of_memory_leaves_map_unchanged),
          cmocka_unit_test(test_free_calls_value_destructor))
