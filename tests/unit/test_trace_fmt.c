/* test_trace_fmt.c — the trace line codec: round trips for every kind,
 * bodies as JSON and as base64, UTF-8 repair, a malformed-line table,
 * truncation at every byte, and failing allocations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "remoting_cmd.h"
#include "test_support.h"
#include "trace_fmt.h"
#include "trace_fmt_scan.h"

#include <stdio.h>
#include <string.h>

/* Encodes ev, decodes it back into *out (borrowed from d), and checks that
 * re-encoding gives the same bytes. Returns the first encoding (new). */
static char *round_trip(struct trace_decoder *d, const struct trace_event *ev, struct trace_event *out)
{
    struct buf a, b;
    buf_init(&a, 0);
    buf_init(&b, 0);
    assert_int_equal(trace_encode_event(ev, &a), 0);
    assert_int_equal(buf_head(&a)[buf_live(&a) - 1], '\n');
    assert_null(memchr(buf_head(&a), '\n', buf_live(&a) - 1));
    assert_int_equal(trace_decode_line(d, (const char *)buf_head(&a), buf_live(&a), 1, out), 0);
    assert_int_equal(trace_encode_event(out, &b), 0);
    assert_int_equal(buf_live(&a), buf_live(&b));
    assert_memory_equal(buf_head(&a), buf_head(&b), buf_live(&a));
    buf_terminate(&a);
    char *s = rmq_strdup((const char *)buf_head(&a));
    buf_free(&a);
    buf_free(&b);
    return s;
}

static void test_round_trip_kinds(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    struct trace_event out;
    struct trace_event hdr = {.kind = TRACE_HEADER, .ts = 1700000000000};
    rmq_free(round_trip(&d, &hdr, &out));
    assert_int_equal(out.kind, TRACE_HEADER);
    assert_int_equal(out.version, 1);

    struct trace_event con = {
        .kind = TRACE_CONNECT, .ts = 5, .conn = UINT64_MAX, .peer = "1.2.3.4:5", .broker = "b"};
    rmq_free(round_trip(&d, &con, &out));
    assert_true(out.conn == UINT64_MAX);
    assert_string_equal(out.peer, "1.2.3.4:5");
    assert_string_equal(out.broker, "b");

    struct trace_kv kv[] = {{"consumerGroup", "G\"x\\"}, {"n", "12"}};
    const char *body = "{ \"clientID\" : \"c\\u00e9\",\n \"a\": [1, 2.5e3, true, null] }";
    struct trace_event req = {.kind = TRACE_REQUEST,
                              .ts = 7,
                              .conn = 3,
                              .code = 34,
                              .language = 9,
                              .cmd_version = 409,
                              .flag = 2,
                              .ext = kv,
                              .next = 2,
                              .body = (const uint8_t *)body,
                              .body_len = strlen(body)};
    char *line = round_trip(&d, &req, &out);
    assert_non_null(strstr(line, "\"body\":{\"clientID\":\"c\\u00e9\",\"a\":[1,2.5e3,true,null]}"));
    assert_int_equal(out.code, 34);
    assert_int_equal(out.language, 9);
    assert_int_equal(out.cmd_version, 409);
    assert_int_equal(out.flag, 2);
    assert_int_equal(out.next, 2);
    assert_string_equal(out.ext[0].val, "G\"x\\");
    assert_int_equal(out.body_len, strlen("{\"clientID\":\"c\\u00e9\",\"a\":[1,2.5e3,true,null]}"));
    rmq_free(line);

    struct trace_event cl = {.kind = TRACE_CLOSE, .ts = 9, .conn = 3, .reason = "expired"};
    rmq_free(round_trip(&d, &cl, &out));
    assert_string_equal(out.reason, "expired");
    struct trace_event no = {.kind = TRACE_NOTIFY, .ts = 9, .conn = 3, .group = "G"};
    rmq_free(round_trip(&d, &no, &out));
    assert_string_equal(out.group, "G");
    struct trace_broker br[] = {{"broker-a", 8, 8, 6}, {"roomA@broker-b", 4, 2, 4}};
    struct trace_event rt = {.kind = TRACE_ROUTE, .ts = 1, .topic = "%RETRY%G", .brokers = br, .nbrokers = 2};
    rmq_free(round_trip(&d, &rt, &out));
    assert_int_equal(out.nbrokers, 2);
    assert_string_equal(out.brokers[1].broker_name, "roomA@broker-b");
    assert_int_equal(out.brokers[1].write_queue_nums, 2);
    struct trace_event del = {.kind = TRACE_ROUTE, .ts = 1, .topic = "T", .deleted = true};
    rmq_free(round_trip(&d, &del, &out));
    assert_true(out.deleted);
    trace_decoder_free(&d);
}

/* A body that is not JSON keeps its exact bytes through base64. */
static void test_body_base64(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    for (size_t len = 1; len < 8; len++) {
        uint8_t body[8] = {0x00, 0xff, '{', 'x', '\n', 0x80, 'z', 0x01};
        struct trace_event req = {.kind = TRACE_REQUEST,
                                  .ts = 1,
                                  .conn = 1,
                                  .code = 34,
                                  .body = body,
                                  .body_len = len},
                           out;
        char *line = round_trip(&d, &req, &out);
        if (len > 1 || body[0] != '{')
            assert_non_null(strstr(line, "\"bodyBase64\":\""));
        assert_int_equal(out.body_len, len);
        assert_memory_equal(out.body, body, len);
        rmq_free(line);
    }
    trace_decoder_free(&d);
}

/* Strings that are not UTF-8 are repaired, never written raw. */
static void test_utf8_repair(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    struct trace_event con = {.kind = TRACE_CONNECT,
                              .ts = 1,
                              .conn = 1,
                              .peer = "a\xff"
                                      "b\xc3\xa9\x01"},
                       out;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(trace_encode_event(&con, &b), 0);
    buf_terminate(&b);
    assert_non_null(strstr((const char *)buf_head(&b), "\"peer\":\"a\\ufffdb\xc3\xa9\\u0001\""));
    assert_int_equal(trace_decode_line(&d, (const char *)buf_head(&b), buf_live(&b), 1, &out), 0);
    assert_string_equal(out.peer, "a\xef\xbf\xbd"
                                  "b\xc3\xa9\x01");
    buf_free(&b);
    trace_decoder_free(&d);
}

static void test_escapes_decode(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    struct trace_event ev;
    const char *l = "{\"ts\":1,\"conn\":2,\"event\":\"notify\",\"group\":\"\\u00e9\\ud83d\\ude00\\n\\/\"}";
    assert_int_equal(trace_decode_line(&d, l, strlen(l), 1, &ev), 0);
    assert_string_equal(ev.group, "\xc3\xa9\xf0\x9f\x98\x80\n/");
    trace_decoder_free(&d);
}

struct bad_case {
    const char *line, *why;
};

static const struct bad_case bad_cases[] = {
    {"", "a line must be one JSON object"},
    {"[]", "a line must be one JSON object"},
    {"{}", "empty object"},
    {"{\"ts\":1}", "missing \"event\""},
    {"{\"event\":\"connect\",\"conn\":1}", "missing \"ts\""},
    {"{\"ts\":1,\"event\":\"bogus\",\"conn\":1}", "unknown event \"bogus\""},
    {"{\"ts\":1,\"event\":\"connect\"}", "missing \"conn\""},
    {"{\"ts\":1.5,\"event\":\"connect\",\"conn\":1}", "\"ts\" must be an integer"},
    {"{\"ts\":-1,\"event\":\"connect\",\"conn\":1}", "\"ts\" is out of range"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":-1}", "\"conn\" must be a non-negative integer"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":18446744073709551616}", "\"conn\" is out of range"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"x\":1}", "unknown key \"x\" in a connect event"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"group\":\"G\"}",
     "unknown key \"group\" in a connect event"},
    {"{\"ts\":1,\"ts\":2,\"event\":\"connect\",\"conn\":1}", "duplicate key"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":5}", "\"peer\" must be a string"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1} x", "text after the object"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,}", "expected a string key"},
    {"{\"ts\":1 \"event\":\"connect\"}", "expected ',' or '}'"},
    {"{\"ts\":01,\"event\":\"connect\",\"conn\":1}", "expected ',' or '}'"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"a\tb\"}", "control character in a string"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"\\x\"}", "bad escape in a string"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"\\u12\"}", "bad \\u escape"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"\\ud800\"}", "unpaired high surrogate"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"\\udc00\"}", "lone low surrogate"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"\\u0000\"}", "\\u0000 in a string"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"\xc3\"}", "invalid UTF-8 in a string"},
    {"{\"ts\":1,\"event\":\"connect\",\"conn\":1,\"peer\":\"\xed\xa0\x80\"}", "invalid UTF-8 in a string"},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1}", "missing \"code\""},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":99999999999}", "\"code\" is out of range"},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":34,\"ext\":[]}", "\"ext\" must be an object"},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":34,\"ext\":{\"a\":{}}}",
     "ext value \"a\" must be a string"},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":34,\"body\":{},\"bodyBase64\":\"\"}",
     "both \"body\""},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":34,\"bodyBase64\":\"abc\"}", "not a multiple of 4"},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":34,\"bodyBase64\":\"ab!=\"}", "invalid character"},
    {"{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":34,\"body\":{\"a\":tru}}", "unexpected character"},
    {"{\"ts\":1,\"event\":\"notify\",\"conn\":1}", "missing \"group\""},
    {"{\"ts\":1,\"event\":\"notify\",\"conn\":1,\"group\":\"\"}", "empty \"group\""},
    {"{\"ts\":1,\"event\":\"route\",\"topic\":\"T\"}", "missing \"brokers\""},
    {"{\"ts\":1,\"event\":\"route\",\"brokers\":null}", "missing \"topic\""},
    {"{\"ts\":1,\"event\":\"route\",\"topic\":\"T\",\"brokers\":{}}", "\"brokers\" must be an array"},
    {"{\"ts\":1,\"event\":\"route\",\"topic\":\"T\",\"brokers\":[{\"brokerName\":\"b\"}]}", "a broker needs"},
    {"{\"ts\":1,\"event\":\"route\",\"topic\":\"T\",\"brokers\":[{\"brokerName\":\"b\",\"readQueueNums\":-1,"
     "\"writeQueueNums\":1}]}",
     "\"readQueueNums\" is out of range"},
    {"{\"ts\":1,\"event\":\"route\",\"topic\":\"T\",\"brokers\":[{\"brokerName\":\"b\",\"readQueueNums\":1,"
     "\"writeQueueNums\":1,\"perm\":9}]}",
     "\"perm\" is out of range"},
    {"{\"ts\":1,\"event\":\"route\",\"topic\":\"T\",\"brokers\":[{\"brokerName\":\"b\",\"readQueueNums\":1,"
     "\"writeQueueNums\":1,\"x\":1}]}",
     "unknown key \"x\" in a broker"},
    {"{\"rmqcoordTrace\":2,\"ts\":1}", "unsupported trace format version 2"},
    {"{\"rmqcoordTrace\":1}", "missing \"ts\""},
};

static void test_malformed_table(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        struct trace_event ev;
        int rc = trace_decode_line(&d, bad_cases[i].line, strlen(bad_cases[i].line), 42, &ev);
        if (rc != RMQ_EPROTO || !strstr(d.error, bad_cases[i].why) || strncmp(d.error, "line 42: ", 9) != 0)
            fail_msg("case %zu %s: rc %d error \"%s\", want \"%s\"", i, bad_cases[i].line, rc, d.error,
                     bad_cases[i].why);
    }
    /* A deeply nested body is refused, not recursed into without bound. */
    char deep[400];
    int n = snprintf(deep, sizeof deep, "{\"ts\":1,\"event\":\"request\",\"conn\":1,\"code\":34,\"body\":");
    for (int i = 0; i < 100; i++)
        deep[n++] = '[';
    deep[n] = '\0';
    struct trace_event ev;
    assert_int_equal(trace_decode_line(&d, deep, (size_t)n, 1, &ev), RMQ_EPROTO);
    assert_non_null(strstr(d.error, "nested too deeply"));
    trace_decoder_free(&d);
}

/* Every proper prefix of a valid line fails cleanly (a line ends in '}'). */
static void test_truncation_every_byte(void **state)
{
    (void)state;
    const char *lines[] = {
        "{\"ts\":7,\"conn\":3,\"peer\":\"1.2.3.4:5\",\"event\":\"request\",\"code\":34,\"lang\":\"JAVA\","
        "\"version\":409,\"ext\":{\"a\":\"\\u00e9\",\"b\":1},\"body\":{\"clientID\":\"c\",\"x\":[1,-2.5e-3,"
        "null]}}",
        "{\"ts\":1,\"event\":\"route\",\"topic\":\"T\",\"brokers\":[{\"brokerName\":\"b\",\"readQueueNums\":"
        "1,"
        "\"writeQueueNums\":1,\"perm\":6}]}",
        "{\"ts\":1,\"conn\":1,\"event\":\"request\",\"code\":34,\"bodyBase64\":\"AP8=\"}",
    };
    struct trace_decoder d;
    trace_decoder_init(&d);
    for (size_t k = 0; k < 3; k++) {
        struct trace_event ev;
        size_t len = strlen(lines[k]);
        assert_int_equal(trace_decode_line(&d, lines[k], len, 1, &ev), 0);
        for (size_t i = 0; i < len; i++)
            assert_int_equal(trace_decode_line(&d, lines[k], i, 1, &ev), RMQ_EPROTO);
    }
    trace_decoder_free(&d);
}

static void test_json_valid(void **state)
{
    (void)state;
    const char *good[] = {"{}", " [1, \"a\", {\"b\": null}] ", "\"s\"", "0", "-0.5E+3", "true"};
    const char *badv[] = {"", "{", "[1,]", "{\"a\"}", "01", "1.", "\"\\u00\"", "nul", "{} {}", "[\"\x01\"]"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(trace_json_valid((const uint8_t *)good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof badv / sizeof *badv; i++)
        assert_false(trace_json_valid((const uint8_t *)badv[i], strlen(badv[i])));
}

static void test_encode_rejects(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    struct trace_event rt = {.kind = TRACE_ROUTE, .ts = 1};
    assert_int_equal(trace_encode_event(&rt, &b), RMQ_EINVAL);
    struct trace_event no = {.kind = TRACE_NOTIFY, .ts = 1, .conn = 1};
    assert_int_equal(trace_encode_event(&no, &b), RMQ_EINVAL);
    /* A capped buffer: all or nothing. */
    buf_free(&b);
    buf_init(&b, 10);
    struct trace_event con = {.kind = TRACE_CONNECT, .ts = 1, .conn = 1, .peer = "1.2.3.4:5"};
    assert_int_equal(trace_encode_event(&con, &b), RMQ_E2BIG);
    assert_int_equal(buf_live(&b), 0);
    buf_free(&b);
}

struct codec_oom {
    const char *l;
    struct trace_decoder d;
    struct buf b;
    int rc;
};

static void codec_oom_setup(void *ctx)
{
    struct codec_oom *x = ctx;
    trace_decoder_init(&x->d);
    buf_init(&x->b, 0);
}

/* Decodes the line, then encodes what it decoded. */
static int codec_oom_run(void *ctx)
{
    struct codec_oom *x = ctx;
    struct trace_event ev;
    x->rc = trace_decode_line(&x->d, x->l, strlen(x->l), 1, &ev);
    return x->rc ? x->rc : trace_encode_event(&ev, &x->b);
}

static void codec_oom_check(void *ctx, int rc)
{
    (void)rc;
    struct codec_oom *x = ctx;
    if (x->rc != 0 && x->rc != RMQ_ENOMEM)
        fail_msg("rc=%d %s", x->rc, x->d.error);
    buf_free(&x->b);
    trace_decoder_free(&x->d);
}

/* Failing the Nth allocation never crashes and never leaks. */
static void test_alloc_failures(void **state)
{
    (void)state;
    struct codec_oom x = {
        .l = "{\"ts\":7,\"conn\":3,\"event\":\"request\",\"code\":35,\"ext\":{\"a\":\"b\",\"c\":\"d\"},"
             "\"bodyBase64\":\"AP8=\"}"};
    test_oom_loop(&(struct test_oom){.setup = codec_oom_setup,
                                     .run = codec_oom_run,
                                     .check = codec_oom_check,
                                     .absorbs = 1,
                                     .max = 1000},
                  &x);
}

TEST_MAIN(cmocka_unit_test(test_round_trip_kinds), cmocka_unit_test(test_body_base64),
          cmocka_unit_test(test_utf8_repair), cmocka_unit_test(test_escapes_decode),
          cmocka_unit_test(test_malformed_table), cmocka_unit_test(test_truncation_every_byte),
          cmocka_unit_test(test_json_valid), cmocka_unit_test(test_encode_rejects),
          cmocka_unit_test(test_alloc_failures))
