/* test_array_parse_int.c — the shared helpers of common/base: array.c
 * (rmq_grow, rmq_strp_cmp), parse_int.c (rmq_parse_i64*),
 * hashmap_sorted_keys, error_json.c (rmq_error_json). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "array.h"
#include "err.h"
#include "error_json.h"
#include "hashmap.h"
#include "mem.h"
#include "parse_int.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_grow_doubles_from_first(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    assert_int_equal(RMQ_GROW(v, cap, 0, 4), RMQ_OK);
    assert_null(v); /* nothing needed, nothing allocated */
    assert_int_equal(RMQ_GROW(v, cap, 1, 4), RMQ_OK);
    assert_int_equal(cap, 4);
    for (int i = 0; i < 4; i++)
        v[i] = i;
    assert_int_equal(RMQ_GROW(v, cap, 4, 4), RMQ_OK);
    assert_int_equal(cap, 4);
    assert_int_equal(RMQ_GROW(v, cap, 5, 4), RMQ_OK);
    assert_int_equal(cap, 8);
    assert_int_equal(RMQ_GROW(v, cap, 100, 4), RMQ_OK);
    assert_int_equal(cap, 128);
    for (int i = 0; i < 4; i++)
        assert_int_equal(v[i], i); /* contents survive */
    rmq_free(v);
}

static void test_grow_failure_leaves_array(void **state)
{
    (void)state;
    char *v = NULL;
    size_t cap = 0;
    assert_int_equal(RMQ_GROW(v, cap, 3, 2), RMQ_OK);
    char *before = v;
    rmq_mem_fail_after(0);
    assert_int_equal(RMQ_GROW(v, cap, 3000, 2), RMQ_ENOMEM);
    rmq_mem_fail_after(-1);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 4);
    /* A byte size past SIZE_MAX is refused before any allocation. */
    assert_int_equal(rmq_grow((void **)&v, &cap, SIZE_MAX / 2, 4, 1), RMQ_ENOMEM);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 4);
    rmq_free(v);
}

static void test_parse_i64(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t min, max;
        int rc;
        int64_t val;
    } cases[] = {
        {"0", 0, 10, RMQ_OK, 0},
        {"10", 0, 10, RMQ_OK, 10},
        {"11", 0, 10, RMQ_EINVAL, 0},
        {"-1", 0, 10, RMQ_EINVAL, 0},
        {"-1", -5, 10, RMQ_OK, -1},
        {"+7", 0, 10, RMQ_OK, 7}, /* as Java's Long.parseLong */
        {"007", 0, 10, RMQ_OK, 7},
        {"9223372036854775807", INT64_MIN, INT64_MAX, RMQ_OK, INT64_MAX},
        {"-9223372036854775808", INT64_MIN, INT64_MAX, RMQ_OK, INT64_MIN},
        {"9223372036854775808", INT64_MIN, INT64_MAX, RMQ_EINVAL, 0},
        {"-9223372036854775809", INT64_MIN, INT64_MAX, RMQ_EINVAL, 0},
        {"18446744073709551615", 0, INT64_MAX, RMQ_EINVAL, 0},
        {"", 0, 10, RMQ_EINVAL, 0},
        {"-", -10, 10, RMQ_EINVAL, 0},
        {"+", 0, 10, RMQ_EINVAL, 0},
        {"+-1", -10, 10, RMQ_EINVAL, 0},
        {" 5", 0, 10, RMQ_EINVAL, 0},
        {"5 ", 0, 10, RMQ_EINVAL, 0},
        {"5x", 0, 10, RMQ_EINVAL, 0},
        {"0x5", 0, 10, RMQ_EINVAL, 0},
        {"1.0", 0, 10, RMQ_EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = 12345;
        int rc = rmq_parse_i64_range(cases[i].text, cases[i].min, cases[i].max, &v);
        if (rc != cases[i].rc)
            fail_msg("\"%s\": rc %d, want %d", cases[i].text, rc, cases[i].rc);
        if (rc == RMQ_OK && v != cases[i].val)
            fail_msg("\"%s\": parsed %lld", cases[i].text, (long long)v);
        if (rc != RMQ_OK && v != 12345)
            fail_msg("\"%s\": *out written on failure", cases[i].text);
    }
    int64_t v;
    assert_int_equal(rmq_parse_i64_range(NULL, 0, 1, &v), RMQ_EINVAL);
    assert_int_equal(rmq_parse_i64("-42", &v), RMQ_OK);
    assert_int_equal(v, -42);
    /* The span form reads exactly n bytes. */
    assert_int_equal(rmq_parse_i64_n("123456", 3, 0, 1000, &v), RMQ_OK);
    assert_int_equal(v, 123);
    assert_int_equal(rmq_parse_i64_n("12,", 3, 0, 1000, &v), RMQ_EINVAL);
    assert_int_equal(rmq_parse_i64_n("1", 0, 0, 1000, &v), RMQ_EINVAL);
}

static void test_sorted_keys_and_strp_cmp(void **state)
{
    (void)state;
    struct hashmap m;
    hashmap_init(&m);
    const char **keys = hashmap_sorted_keys(&m);
    assert_non_null(keys); /* an empty map still gives an array to free */
    rmq_free(keys);
    static const char *names[] = {"pear", "apple", "fig", "Banana", "apple2"};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(hashmap_put_str(&m, names[i], NULL, NULL), 0);
    keys = hashmap_sorted_keys(&m);
    assert_non_null(keys);
    static const char *want[] = {"Banana", "apple", "apple2", "fig", "pear"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(keys[i], want[i]);
    rmq_free(keys);
    const char *a = "a", *b = "b";
    assert_true(rmq_strp_cmp(&a, &b) < 0);
    assert_true(rmq_strp_cmp(&b, &a) > 0);
    assert_int_equal(rmq_strp_cmp(&a, &a), 0);
    rmq_mem_fail_after(0);
    assert_null(hashmap_sorted_keys(&m));
    rmq_mem_fail_after(-1);
    hashmap_free(&m, NULL);
}

static void test_error_json(void **state)
{
    (void)state;
    json_t *v = rmq_error_json("not found", "no such group");
    assert_non_null(v);
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"detail\":\"no such group\",\"error\":\"not found\"}");
    free(text);
    json_decref(v);
}

TEST_MAIN(cmocka_unit_test(test_grow_doubles_from_first), cmocka_unit_test(test_grow_failure_leaves_array),
          cmocka_unit_test(test_parse_i64), cmocka_unit_test(test_sorted_keys_and_strp_cmp),
          cmocka_unit_test(test_error_json))
