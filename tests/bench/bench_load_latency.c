/* bench_load_latency.c — bench_load's latency sample: a uniform reservoir
 * of at most SAMPLE_CAP latencies (a long run must not grow without
 * bound), and the percentiles printed from it. One thread.
 */
#include "bench_load_internal.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_next(void)
{
    g_st.rng ^= g_st.rng << 13;
    g_st.rng ^= g_st.rng >> 7;
    g_st.rng ^= g_st.rng << 17;
    return g_st.rng;
}

/* Keeps a uniform sample of at most SAMPLE_CAP latencies (reservoir). */
void record_latency(double secs)
{
    double units = secs * 1e7;
    uint32_t v = units > 4e9 ? 4000000000u : (uint32_t)units;
    g_st.seen++;
    if (g_st.nsamples < SAMPLE_CAP) {
        g_st.samples[g_st.nsamples++] = v;
        return;
    }
    uint64_t j = rng_next() % g_st.seen;
    if (j < SAMPLE_CAP)
        g_st.samples[j] = v;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Latency percentile q (0..1) in microseconds from the sorted sample. */
static double pct_us(const uint32_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return (double)v[i] / 10.0;
}

void print_latency(const char *prefix)
{
    qsort(g_st.samples, g_st.nsamples, sizeof *g_st.samples, cmp_u32);
    printf(" %sp50_us=%.1f %sp99_us=%.1f %sp999_us=%.1f %smax_us=%.1f", prefix,
           pct_us(g_st.samples, g_st.nsamples, 0.5), prefix, pct_us(g_st.samples, g_st.nsamples, 0.99),
           prefix, pct_us(g_st.samples, g_st.nsamples, 0.999), prefix,
           g_st.nsamples ? (double)g_st.samples[g_st.nsamples - 1] / 10.0 : 0.0);
}
