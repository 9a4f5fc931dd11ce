/* test_metrics.c — the Prometheus text helpers: cumulative buckets from
 * stats.h's per-bucket counts, +Inf equal to the count, label escaping and
 * UTF-8 repair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "metrics_text.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *text_of(struct buf *b)
{
    assert_int_equal(buf_terminate(b), 0);
    return (char *)buf_head(b);
}

/* Every one of the lines must appear in text. */
static void assert_has_lines(const char *text, const char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strstr(text, lines[i]))
            fail_msg("missing \"%s\" in:\n%s", lines[i], text);
}

/* metrics_histogram of h into b (initialised here), as text. */
static char *histogram_text(struct buf *b, const char *name, const char *labels,
                            const struct stats_histogram *h)
{
    buf_init(b, 0);
    assert_int_equal(metrics_histogram(b, name, labels, h), 0);
    return text_of(b);
}

static void test_histogram_is_cumulative(void **state)
{
    (void)state;
    struct stats_histogram h = {0};
    uint64_t samples[] = {5, 5, 30, 200, 2000, 2000, 2000, 50000000};
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
        stats_histogram_add(&h, samples[i]);
    struct buf b;
    char *t = histogram_text(&b, "x_seconds", "code=\"34\"", &h);
    static const char *const want[] = {
        "x_seconds_bucket{code=\"34\",le=\"1e-05\"} 2\n",
        "x_seconds_bucket{code=\"34\",le=\"5e-05\"} 3\n",
        "x_seconds_bucket{code=\"34\",le=\"0.00025\"} 4\n",
        "x_seconds_bucket{code=\"34\",le=\"0.0025\"} 7\n",
        "x_seconds_bucket{code=\"34\",le=\"0.1\"} 7\n",
        "x_seconds_bucket{code=\"34\",le=\"+Inf\"} 8\n",
        "x_seconds_count{code=\"34\"} 8\n",
        "x_seconds_sum{code=\"34\"} 50.006240\n",
    };
    assert_has_lines(t, want, sizeof want / sizeof want[0]);
    /* counts never go down from one bucket to the next */
    unsigned long prev = 0, v, lines = 0;
    for (char *p = strstr(t, "_bucket"); p; p = strstr(p + 1, "_bucket")) {
        char *sp = strchr(p, ' ');
        v = strtoul(sp + 1, NULL, 10);
        assert_true(v >= prev);
        prev = v;
        lines++;
    }
    assert_int_equal(lines, STATS_BUCKETS);
    buf_free(&b);
}

static void test_histogram_without_labels(void **state)
{
    (void)state;
    struct stats_histogram h = {0};
    struct buf b;
    char *t = histogram_text(&b, "c", "", &h);
    static const char *const want[] = {"c_bucket{le=\"+Inf\"} 0\n", "c_sum 0.000000\nc_count 0\n"};
    assert_has_lines(t, want, 2);
    buf_free(&b);
}

static void test_label_escaping(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(metrics_label_value(&b, "a\"b\\c\nd \xc3\xa9 \xff\xc3 \xed\xa0\x80"), 0);
    assert_string_equal(text_of(&b), "a\\\"b\\\\c\\nd \xc3\xa9 ?? ???");
    buf_reset(&b);
    assert_int_equal(metrics_header(&b, "n_total", "counter", "help text"), 0);
    assert_int_equal(metrics_sample(&b, "n_total", "", 3), 0);
    assert_int_equal(metrics_sample(&b, "n_total", "k=\"v\"", 4), 0);
    assert_string_equal(text_of(&b),
                        "# HELP n_total help text\n# TYPE n_total counter\nn_total 3\nn_total{k=\"v\"} 4\n");
    buf_free(&b);
}

TEST_MAIN(cmocka_unit_test(test_histogram_is_cumulative), cmocka_unit_test(test_histogram_without_labels),
          cmocka_unit_test(test_label_escaping))
