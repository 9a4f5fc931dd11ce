/* test_trace_fast.c — the trace decoder's fast paths against its full path:
 * the line cache (a request line equal to an earlier one but for "ts"
 * decodes from the cache) must give what a decoder without it gives, for
 * valid lines and for mutations of them (other ts texts, changed, cut or
 * extended tails), line by line, errors included; and trace_find must find
 * what memmem finds. Deterministic (fixed seeds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "test_support.h"
#include "trace_fmt.h"
#include "trace_fmt_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seeded at the start of each case that draws from it, so that a case run
 * alone sees the inputs it sees in the whole file. */
static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? (uint32_t)(rng_state % n) : 0;
}

/* Request lines as the recorder writes them (ts first), plus a few shapes
 * it does not write but the format allows. @C@ is the connection. */
static const char *const shapes[] = {
    "{\"ts\":1700000000019,\"conn\":@C@,\"peer\":\"10.18.0.1:40001\",\"event\":\"request\",\"code\":34,"
    "\"lang\":\"JAVA\",\"version\":409,\"ext\":{},\"body\":{\"clientID\":\"10.18.0.1@1001#gen\","
    "\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\",\"consumeType\":"
    "\"CONSUME_PASSIVELY\",\"groupName\":\"GID_18\",\"messageModel\":\"CLUSTERING\",\"subscriptionDataSet\":"
    "[{\"classFilterMode\":false,\"codeSet\":[],\"expressionType\":\"TAG\",\"subString\":\"*\","
    "\"subVersion\":1,"
    "\"tagsSet\":[],\"topic\":\"Topic_18\"}],\"unitMode\":false}],\"producerDataSet\":[]}}",
    "{\"ts\":5,\"conn\":@C@,\"peer\":\"1.2.3.4:5\",\"event\":\"request\",\"code\":35,\"lang\":\"GO\","
    "\"flag\":"
    "2,"
    "\"ext\":{\"consumerGroup\":\"G\\u00e9\\\"x\",\"n\":-12.5e3,\"t\":true,\"f\":false,\"z\":null},\"body\":"
    "null}",
    "{\"ts\":0,\"conn\":@C@,\"event\":\"request\",\"code\":34,\"body\":[1, 2.5, \"\\ud83d\\ude00\", {\"a\": "
    "{}}]}",
    "{\"ts\":7,\"conn\":@C@,\"event\":\"request\",\"code\":34,\"body\":\"a string body\"}",
    "{\"ts\":7,\"conn\":@C@,\"event\":\"request\",\"code\":34,\"body\":{\"k\":\"\xc3\xa9\xe2\x82\xac\"} }\n",
    "{\"ts\":7,\"conn\":@C@,\"event\":\"request\",\"code\":34,\"bodyBase64\":\"AP8=\"}",
    "{\"ts\":8,\"conn\":@C@,\"event\":\"close\",\"reason\":\"peer closed\"}",
    "{\"ts\":8,\"event\":\"request\",\"conn\":@C@,\"code\":34,\"body\":{}}",
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static char *make_line(size_t shape, int conn)
{
    char *s = malloc(4096);
    assert_non_null(s);
    const char *at = strstr(shapes[shape], "@C@");
    assert_non_null(at);
    snprintf(s, 4096, "%.*s%d%s", (int)(at - shapes[shape]), shapes[shape], conn, at + 3);
    return s;
}

static void assert_str_same(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* Everything a decode hands out, compared by value. */
static void assert_events_same(const struct trace_event *a, const struct trace_event *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_true(a->ts == b->ts);
    assert_int_equal(a->version, b->version);
    assert_true(a->conn == b->conn);
    assert_str_same(a->peer, b->peer);
    assert_str_same(a->broker, b->broker);
    assert_int_equal(a->code, b->code);
    assert_int_equal(a->language, b->language);
    assert_int_equal(a->cmd_version, b->cmd_version);
    assert_int_equal(a->flag, b->flag);
    assert_int_equal(a->next, b->next);
    for (size_t i = 0; i < a->next; i++) {
        assert_string_equal(a->ext[i].key, b->ext[i].key);
        assert_string_equal(a->ext[i].val, b->ext[i].val);
    }
    assert_int_equal(a->body_len, b->body_len);
    assert_true((a->body == NULL) == (b->body == NULL));
    if (a->body_len)
        assert_memory_equal(a->body, b->body, a->body_len);
    assert_str_same(a->group, b->group);
    assert_str_same(a->reason, b->reason);
    assert_str_same(a->topic, b->topic);
    assert_int_equal(a->nbrokers, b->nbrokers);
    assert_int_equal(a->deleted, b->deleted);
}

/* Decodes line with the warm decoder and with a cache-less one; both must
 * agree on everything. Returns the warm decoder's rc. */
static int decode_both(struct trace_decoder *warm, const char *line, size_t len)
{
    struct trace_decoder cold;
    trace_decoder_init(&cold);
    cold.line_cache_off = true;
    struct trace_event a, b;
    int ra = trace_decode_line(warm, line, len, 9, &a);
    int rb = trace_decode_line(&cold, line, len, 9, &b);
    if (ra != rb || strcmp(warm->error, cold.error) != 0)
        fail_msg("rc %d/%d error \"%s\" / \"%s\" for %.*s", ra, rb, warm->error, cold.error, (int)len, line);
    if (ra == 0)
        assert_events_same(&a, &b);
    trace_decoder_free(&cold);
    return ra;
}

static void test_repeat_hits(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    char *l1 = make_line(0, 42), *l2 = make_line(0, 43);
    struct trace_event a, b;
    assert_int_equal(trace_decode_line(&d, l1, strlen(l1), 1, &a), 0);
    uint64_t tag = a.tag;
    assert_true(tag != 0);
    assert_int_equal(d.line_hits, 0);
    /* The same tail with another ts: from the cache, same tag, new ts. */
    char *l1b = malloc(strlen(l1) + 8);
    assert_non_null(l1b);
    snprintf(l1b, strlen(l1) + 8, "{\"ts\":99%s", l1 + strlen("{\"ts\":1700000000019"));
    assert_int_equal(trace_decode_line(&d, l1b, strlen(l1b), 2, &b), 0);
    assert_int_equal(d.line_hits, 1);
    assert_true(b.tag == tag);
    assert_true(b.ts == 99);
    assert_true(b.conn == 42);
    assert_int_equal(b.body_len, a.body_len);
    /* Another connection: a line of its own, another tag. */
    assert_int_equal(trace_decode_line(&d, l2, strlen(l2), 3, &b), 0);
    assert_true(b.tag != 0 && b.tag != tag);
    assert_int_equal(d.line_hits, 1);
    /* Lines that are not kept: base64 bodies, other events. */
    char *l3 = make_line(5, 44), *l4 = make_line(6, 44);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(trace_decode_line(&d, l3, strlen(l3), 4, &b), 0);
        assert_true(b.tag == 0);
        assert_int_equal(trace_decode_line(&d, l4, strlen(l4), 5, &b), 0);
        assert_true(b.tag == 0);
    }
    assert_int_equal(d.line_hits, 1);
    /* Turned off: never from the cache. */
    d.line_cache_off = true;
    assert_int_equal(trace_decode_line(&d, l2, strlen(l2), 6, &b), 0);
    assert_int_equal(d.line_hits, 1);
    assert_true(b.tag == 0);
    free(l1);
    free(l1b);
    free(l2);
    free(l3);
    free(l4);
    trace_decoder_free(&d);
}

/* One mutation of line into out (at most cap bytes); returns its length. */
static size_t mutate(const char *line, size_t len, char *out, size_t cap)
{
    static const char *const ts_texts[] = {"0",
                                           "00",
                                           "01",
                                           "-1",
                                           "1.5",
                                           "1e3",
                                           "18446744073709551616",
                                           "999999999999999999",
                                           "2305843009213693951",
                                           "2305843009213693952",
                                           " 5",
                                           "5 ",
                                           "",
                                           "\"5\""};
    const char *tail = strchr(line, ',');
    size_t n = 0;
    switch (rnd(5)) {
    case 0: /* another ts text, same tail */
        n = (size_t)snprintf(out, cap, "{\"ts\":%s%s", ts_texts[rnd(sizeof ts_texts / sizeof *ts_texts)],
                             tail ? tail : "");
        break;
    case 1: /* one byte changed */
        memcpy(out, line, len);
        out[rnd((uint32_t)len)] = "{}[]\",:\\ 0a\x80\x01"[rnd(14)];
        n = len;
        break;
    case 2: /* cut */
        n = rnd((uint32_t)len);
        memcpy(out, line, n);
        break;
    case 3: /* extended */
        memcpy(out, line, len);
        n = len;
        for (uint32_t k = rnd(3) + 1; k > 0 && n < cap; k--)
            out[n++] = " }x,\n"[rnd(5)];
        break;
    default: /* one byte deleted */
        n = rnd((uint32_t)len);
        memcpy(out, line, n);
        memcpy(out + n, line + n + 1, len - n - 1);
        n = len - 1;
    }
    return n < cap ? n : cap;
}

static void test_mutations_agree(void **state)
{
    (void)state;
    rng_state = 0x9E3779B97F4A7C15ULL;
    struct trace_decoder warm;
    trace_decoder_init(&warm);
    char out[8192];
    for (int round = 0; round < 4000; round++) {
        size_t shape = rnd(NSHAPES);
        char *line = make_line(shape, (int)rnd(6));
        size_t len = strlen(line);
        /* Warm: the unchanged line is in the cache when its mutation comes. */
        assert_int_equal(decode_both(&warm, line, len), 0);
        assert_int_equal(decode_both(&warm, line, len), 0);
        size_t n = mutate(line, len, out, sizeof out);
        (void)decode_both(&warm, out, n);
        free(line);
    }
    assert_true(warm.line_hits > 1000);
    trace_decoder_free(&warm);
}

/* More connections than slots, and lines over the per-line bound: every
 * line still decodes as the full path decodes it. */
static void test_bounds(void **state)
{
    (void)state;
    struct trace_decoder warm;
    trace_decoder_init(&warm);
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0; c < TRACE_FMT_LINE_SLOTS + 500; c += 7) {
            char *line = make_line(0, c);
            assert_int_equal(decode_both(&warm, line, strlen(line)), 0);
            free(line);
        }
    size_t big = TRACE_FMT_LINE_CACHE_MAX + 100;
    char *line = malloc(big + 200);
    assert_non_null(line);
    int n = snprintf(line, big + 200, "{\"ts\":1,\"conn\":1,\"event\":\"request\",\"code\":34,\"body\":\"");
    memset(line + n, 'a', big);
    strcpy(line + n + big, "\"}");
    uint64_t hits = warm.line_hits;
    for (int i = 0; i < 2; i++)
        assert_int_equal(decode_both(&warm, line, strlen(line)), 0);
    assert_true(warm.line_hits == hits);
    free(line);
    trace_decoder_free(&warm);
}

struct decode_oom {
    const char *l;
    struct trace_decoder d;
    int r1, r2;
};

static void decode_oom_setup(void *ctx)
{
    trace_decoder_init(&((struct decode_oom *)ctx)->d);
}

/* The same line twice: a miss, then a hit if the cache kept it. */
static int decode_oom_run(void *ctx)
{
    struct decode_oom *x = ctx;
    struct trace_event ev;
    x->r1 = trace_decode_line(&x->d, x->l, strlen(x->l), 1, &ev);
    x->r2 = trace_decode_line(&x->d, x->l, strlen(x->l), 2, &ev);
    return x->r1 ? x->r1 : x->r2;
}

static void decode_oom_check(void *ctx, int rc)
{
    (void)rc;
    struct decode_oom *x = ctx;
    assert_true(x->r1 == 0 || x->r1 == RMQ_ENOMEM);
    assert_true(x->r2 == 0 || x->r2 == RMQ_ENOMEM);
    assert_int_equal(decode_both(&x->d, x->l, strlen(x->l)), 0);
    trace_decoder_free(&x->d);
}

/* Failing the Nth allocation: the decode fails cleanly or succeeds, the
 * cache only misses what it could not keep, nothing leaks. */
static void test_alloc_failures(void **state)
{
    (void)state;
    char *l = make_line(1, 3);
    struct decode_oom x = {.l = l};
    test_oom_loop(&(struct test_oom){.setup = decode_oom_setup,
                                     .run = decode_oom_run,
                                     .check = decode_oom_check,
                                     .absorbs = 1,
                                     .max = 1000},
                  &x);
    free(l);
}

static void test_find_agrees(void **state)
{
    (void)state;
    rng_state = 0xA288785F69394894ULL; /* where test_mutations_agree left it */
    char hay[300], needle[16];
    for (int round = 0; round < 200000; round++) {
        size_t n = rnd(sizeof hay), m = rnd(sizeof needle);
        const char *alpha = round % 2 ? "ab" : "\"notify\"xyz";
        size_t na = strlen(alpha);
        for (size_t i = 0; i < n; i++)
            hay[i] = alpha[rnd((uint32_t)na)];
        for (size_t i = 0; i < m; i++)
            needle[i] = alpha[rnd((uint32_t)na)];
        if (m && n >= m && rnd(2)) /* plant it */
            memcpy(hay + rnd((uint32_t)(n - m + 1)), needle, m);
        const char *want = memmem(hay, n, needle, m), *got = trace_find(hay, n, needle, m);
        if (want != got)
            fail_msg("n=%zu m=%zu: memmem at %td, trace_find at %td", n, m, want ? want - hay : -1,
                     got ? got - hay : -1);
    }
}

TEST_MAIN(cmocka_unit_test(test_repeat_hits), cmocka_unit_test(test_mutations_agree),
          cmocka_unit_test(test_bounds), cmocka_unit_test(test_alloc_failures),
          cmocka_unit_test(test_find_agrees))
