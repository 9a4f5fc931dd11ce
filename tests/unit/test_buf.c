/* test_buf.c — struct buf: appends, cap, consumption and compaction,
 * big-endian helpers, printf appends, reserve/commit, allocation failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "test_support.h"

#include <string.h>

static void test_append_and_live(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_live(&b), 0);
    assert_int_equal(buf_append(&b, "abc", 3), RMQ_OK);
    assert_int_equal(buf_append_str(&b, "de"), RMQ_OK);
    assert_int_equal(buf_append(&b, NULL, 0), RMQ_OK);
    assert_buf_equal(&b, "abcde", 5);
    buf_free(&b);
    assert_null(b.data);
    buf_free(NULL);
}

static void test_big_endian_helpers(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_append_u8(&b, 0xAB), RMQ_OK);
    assert_int_equal(buf_append_be16(&b, 0x0102), RMQ_OK);
    assert_int_equal(buf_append_be32(&b, 0xDEADBEEFu), RMQ_OK);
    static const uint8_t want[] = {0xAB, 0x01, 0x02, 0xDE, 0xAD, 0xBE, 0xEF};
    assert_buf_equal(&b, want, sizeof want);
    buf_free(&b);
}

static void test_cap_refuses_and_leaves_unchanged(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "12345678", 8), RMQ_OK);
    assert_int_equal(buf_append(&b, "9", 1), RMQ_E2BIG);
    assert_int_equal(buf_append_be32(&b, 1), RMQ_E2BIG);
    assert_int_equal(buf_appendf(&b, "%d", 7), RMQ_E2BIG);
    assert_null(buf_reserve(&b, 1));
    assert_buf_equal(&b, "12345678", 8);
    /* Consuming frees room under the cap again. */
    buf_consume(&b, 3);
    assert_int_equal(buf_append(&b, "abc", 3), RMQ_OK);
    assert_buf_equal(&b, "45678abc", 8);
    buf_free(&b);
}

static void test_consume_and_compaction_keep_data(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    char chunk[100];
    size_t expect_first = 0, written = 0;
    /* Keep a rolling window: append 100, consume 97, many times, forcing
     * both growth and compaction; the live bytes must stay the sequence. */
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof chunk; i++)
            chunk[i] = (char)((written + i) & 0xFF);
        assert_int_equal(buf_append(&b, chunk, sizeof chunk), RMQ_OK);
        written += sizeof chunk;
        buf_consume(&b, 97);
        expect_first += 97;
        assert_int_equal(buf_live(&b), written - expect_first);
        for (size_t i = 0; i < buf_live(&b); i++)
            assert_int_equal(buf_head(&b)[i], (uint8_t)((expect_first + i) & 0xFF));
    }
    assert_true(b.alloc <= 2048); /* compaction, not unbounded growth */
    buf_consume(&b, buf_live(&b));
    assert_int_equal(b.pos, 0);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

static void test_appendf_small_and_large(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_appendf(&b, "x=%d,%s", 42, "y"), RMQ_OK);
    assert_buf_equal(&b, "x=42,y", 6);
    char big[1000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(buf_appendf(&b, "[%s]", big), RMQ_OK);
    assert_int_equal(buf_live(&b), 6 + 2 + 999);
    assert_int_equal(buf_head(&b)[6], '[');
    assert_int_equal(buf_head(&b)[6 + 1 + 998], 'q');
    assert_int_equal(buf_head(&b)[6 + 1 + 999], ']');
    buf_free(&b);
}

static void test_reserve_commit_terminate(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    uint8_t *w = buf_reserve(&b, 4);
    assert_non_null(w);
    memcpy(w, "wxyz", 4);
    buf_commit(&b, 3);
    assert_int_equal(buf_live(&b), 3);
    assert_int_equal(buf_terminate(&b), RMQ_OK);
    assert_int_equal(buf_live(&b), 3);
    assert_string_equal((const char *)buf_head(&b), "wxy");
    buf_reset(&b);
    assert_int_equal(buf_live(&b), 0);
    buf_free(&b);
}

static void test_allocation_failure_leaves_buffer(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    rmq_mem_fail_after(0);
    assert_int_equal(buf_append(&b, "abc", 3), RMQ_ENOMEM);
    assert_null(buf_reserve(&b, 1));
    rmq_mem_fail_after(-1);
    assert_int_equal(buf_live(&b), 0);
    assert_int_equal(buf_append(&b, "abc", 3), RMQ_OK);
    /* Growing past the first allocation fails cleanly too. */
    char big[4096] = {0};
    rmq_mem_fail_after(0);
    assert_int_equal(buf_append(&b, big, sizeof big), RMQ_ENOMEM);
    rmq_mem_fail_after(-1);
    assert_buf_equal(&b, "abc", 3);
    buf_free(&b);
}

TEST_MAIN(cmocka_unit_test(test_append_and_live), cmocka_unit_test(test_big_endian_helpers),
          cmocka_unit_test(test_cap_refuses_and_leaves_unchanged),
          cmocka_unit_test(test_consume_and_compaction_keep_data),
          cmocka_unit_test(test_appendf_small_and_large), cmocka_unit_test(test_reserve_commit_terminate),
          cmocka_unit_test(test_allocation_failure_leaves_buffer))
