/* test_trace_holdings.c — the holdings event of the trace format: a
 * client's answer (queues) and its absence (null with a reason) round-trip
 * byte for byte, malformed holdings lines are refused with a reason naming
 * the problem, every truncation of a good line is refused, and failing
 * allocations while decoding are reported, never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "test_support.h"
#include "trace_fmt.h"

#include <stdio.h>
#include <string.h>

static const char answered[] =
    "{\"ts\":1500,\"conn\":4294967297,\"peer\":\"127.0.0.1:5000\",\"event\":\"holdings\",\"group\":\"G\","
    "\"clientId\":\"10.0.0.2@slow-0\",\"asked\":1499,\"queues\":[{\"topic\":\"T\",\"brokerName\":\"broker-"
    "a\","
    "\"queueId\":0},{\"topic\":\"%RETRY%G\",\"brokerName\":\"b\\u00e9\",\"queueId\":7}]}\n";

static void test_answered_round_trip(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    struct trace_event ev;
    assert_int_equal(trace_decode_line(&d, answered, strlen(answered), 1, &ev), 0);
    assert_int_equal(ev.kind, TRACE_HOLDINGS);
    assert_string_equal(trace_kind_name(ev.kind), "holdings");
    assert_true(ev.conn == 4294967297ULL);
    assert_int_equal(ev.ts, 1500);
    assert_int_equal(ev.asked, 1499);
    assert_string_equal(ev.group, "G");
    assert_string_equal(ev.client_id, "10.0.0.2@slow-0");
    assert_true(ev.answered);
    assert_null(ev.reason);
    assert_int_equal(ev.nqueues, 2);
    assert_string_equal(ev.queues[1].topic, "%RETRY%G");
    assert_string_equal(ev.queues[1].broker_name, "b\xc3\xa9");
    assert_int_equal(ev.queues[1].queue_id, 7);
    /* Re-encoded: the same bytes but for the escape, which is written as UTF-8. */
    struct buf out;
    buf_init(&out, 0);
    assert_int_equal(trace_encode_event(&ev, &out), 0);
    assert_int_equal(buf_terminate(&out), 0);
    char want[sizeof answered];
    snprintf(want, sizeof want, "%s", answered);
    char *esc = strstr(want, "b\\u00e9");
    assert_non_null(esc);
    memcpy(esc, "b\xc3\xa9", 3);
    memmove(esc + 3, esc + 7, strlen(esc + 7) + 1);
    assert_string_equal((const char *)buf_head(&out), want);
    buf_free(&out);
    trace_decoder_free(&d);
}

static void test_unanswered_and_empty(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    struct trace_event ev = {.kind = TRACE_HOLDINGS,
                             .ts = 9,
                             .conn = 3,
                             .group = "G",
                             .client_id = "c",
                             .asked = 8,
                             .reason = "no answer"};
    struct buf out;
    buf_init(&out, 0);
    assert_int_equal(trace_encode_event(&ev, &out), 0);
    assert_int_equal(buf_terminate(&out), 0);
    const char *line = (const char *)buf_head(&out);
    assert_string_equal(line,
                        "{\"ts\":9,\"conn\":3,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\","
                        "\"asked\":8,\"queues\":null,\"reason\":\"no answer\"}\n");
    struct trace_event back;
    assert_int_equal(trace_decode_line(&d, line, strlen(line), 1, &back), 0);
    assert_false(back.answered);
    assert_int_equal(back.nqueues, 0);
    assert_string_equal(back.reason, "no answer");
    /* An answer with no queues is not the absence of one. */
    ev.answered = true;
    ev.reason = NULL;
    buf_reset(&out);
    assert_int_equal(trace_encode_event(&ev, &out), 0);
    assert_int_equal(buf_terminate(&out), 0);
    line = (const char *)buf_head(&out);
    assert_non_null(strstr(line, "\"queues\":[]}\n"));
    assert_int_equal(trace_decode_line(&d, line, strlen(line), 1, &back), 0);
    assert_true(back.answered);
    assert_int_equal(back.nqueues, 0);
    /* Unusable events are refused and leave the buffer as it was. */
    size_t len = out.len;
    ev.group = "";
    assert_int_equal(trace_encode_event(&ev, &out), RMQ_EINVAL);
    ev.group = "G";
    ev.client_id = NULL;
    assert_int_equal(trace_encode_event(&ev, &out), RMQ_EINVAL);
    ev.client_id = "c";
    ev.nqueues = 2; /* queues missing */
    assert_int_equal(trace_encode_event(&ev, &out), RMQ_EINVAL);
    assert_int_equal(out.len, len);
    buf_free(&out);
    trace_decoder_free(&d);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *line, *why;
    } bad[] = {
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"clientId\":\"c\",\"asked\":1,\"queues\":[]}",
         "missing \"group\""},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":[]}",
         "empty \"group\""},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"asked\":1,\"queues\":[]}",
         "missing \"clientId\""},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"queues\":[]}",
         "missing \"asked\""},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":-1,"
         "\"queues\":[]}",
         "\"asked\" is out of range"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1}",
         "missing \"queues\""},
        {"{\"ts\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,\"queues\":[]}",
         "missing \"conn\""},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":{}}",
         "\"queues\" must be an array"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":[{\"topic\":\"T\",\"brokerName\":\"b\"}]}",
         "a queue needs topic, brokerName and queueId"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":[{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":1,\"x\":1}]}",
         "unknown key \"x\" in a queue"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":[{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":-1}]}",
         "\"queueId\" is out of range"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":[{\"topic\":\"\",\"brokerName\":\"b\",\"queueId\":1}]}",
         "empty topic or brokerName in a queue"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":[{\"topic\":\"T\",\"topic\":\"U\",\"brokerName\":\"b\",\"queueId\":1}]}",
         "duplicate \"topic\" in a queue"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":\"c\",\"asked\":1,"
         "\"queues\":[],"
         "\"code\":34}",
         "unknown key \"code\" in a holdings event"},
        {"{\"ts\":1,\"conn\":1,\"event\":\"holdings\",\"group\":\"G\",\"clientId\":7,\"asked\":1,\"queues\":["
         "]}",
         "\"clientId\" must be a string"},
        /* a request line may not borrow the holdings keys */
        {"{\"ts\":1,\"conn\":1,\"event\":\"request\",\"code\":34,\"asked\":1}",
         "unknown key \"asked\" in a request"},
    };
    struct trace_decoder d;
    trace_decoder_init(&d);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct trace_event ev;
        int rc = trace_decode_line(&d, bad[i].line, strlen(bad[i].line), 12, &ev);
        if (rc != RMQ_EPROTO || !strstr(d.error, bad[i].why) || strncmp(d.error, "line 12: ", 9) != 0)
            fail_msg("case %zu: rc %d, error \"%s\", want \"%s\"", i, rc, d.error, bad[i].why);
    }
    trace_decoder_free(&d);
}

/* Every proper prefix of a good line is refused (and never read past). */
static void test_truncation(void **state)
{
    (void)state;
    struct trace_decoder d;
    trace_decoder_init(&d);
    size_t n = strlen(answered) - 1; /* without the newline */
    for (size_t len = 0; len < n; len++) {
        struct trace_event ev;
        char *copy = rmq_malloc(len + 1);
        assert_non_null(copy);
        memcpy(copy, answered, len);
        assert_int_not_equal(trace_decode_line(&d, copy, len, 1, &ev), 0);
        rmq_free(copy);
    }
    trace_decoder_free(&d);
}

static void decode_oom_setup(void *ctx)
{
    trace_decoder_init(ctx);
}

static int decode_oom_run(void *ctx)
{
    struct trace_event ev;
    return trace_decode_line(ctx, answered, strlen(answered), 1, &ev);
}

static void decode_oom_check(void *ctx, int rc)
{
    (void)rc;
    trace_decoder_free(ctx);
}

/* Failing the Nth allocation: RMQ_ENOMEM or a decoded line (the line cache
 * absorbs its own failures), until enough allocations are allowed. */
static void test_alloc_failures(void **state)
{
    (void)state;
    struct trace_decoder d;
    test_oom_loop(&(struct test_oom){.setup = decode_oom_setup,
                                     .run = decode_oom_run,
                                     .check = decode_oom_check,
                                     .absorbs = 1,
                                     .max = 1000},
                  &d);
}

TEST_MAIN(cmocka_unit_test(test_answered_round_trip), cmocka_unit_test(test_unanswered_and_empty),
          cmocka_unit_test(test_malformed), cmocka_unit_test(test_truncation),
          cmocka_unit_test(test_alloc_failures))
