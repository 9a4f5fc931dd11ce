/* test_clocks.c — server/core/clocks.c: units, rounding and deadlines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "clocks.h"
#include "test_support.h"

static void test_units_agree(void **state)
{
    (void)state;
    int64_t ms0 = rmq_mono_ms();
    uint64_t us = rmq_mono_us();
    int64_t ms1 = rmq_mono_ms();
    assert_true((int64_t)(us / 1000) >= ms0 && (int64_t)(us / 1000) <= ms1);
    /* After 2020-01-01 and before 2100: a date, not an uptime. */
    int64_t wall = rmq_wall_ms();
    assert_true(wall > 1577836800000LL && wall < 4102444800000LL);
}

static void test_after_ms_is_normalised(void **state)
{
    (void)state;
    for (int64_t ms = 0; ms < 3000; ms += 7) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        struct timespec t = rmq_clock_after_ms(CLOCK_MONOTONIC, ms);
        assert_true(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L);
        int64_t d = ((int64_t)t.tv_sec - now.tv_sec) * 1000 + (t.tv_nsec - now.tv_nsec) / 1000000;
        assert_true(d >= ms && d <= ms + 50);
    }
}

TEST_MAIN(cmocka_unit_test(test_units_agree), cmocka_unit_test(test_after_ms_is_normalised))
