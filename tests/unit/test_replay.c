/* test_replay.c — the replay engine on hand-written traces
 * (tests/data/traces/NAME.jsonl) against golden outputs (NAME.expected.txt or .json):
 * join, leave, crash, expiry (notified and silent), subscription change,
 * two brokers with different member views, a client that misses a
 * NOTIFY and waits for its 20 s timer, and recorded holdings beside the
 * model. RMQ_UPDATE_GOLDEN=1 rewrites the
 * golden files (review the diff!). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "replay.h"
#include "replay_feed.h"
#include "replay_infer.h"
#include "test_support.h"
#include "trace_fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs the engine over a trace file (two passes, as the CLI does) and
 * returns the output (new, NUL-terminated), or NULL with *rc set. */
static char *run_replay(const char *trace, const struct replay_options *opt, int *rc_out)
{
    size_t len;
    char *text = test_read_file(test_data_path(trace), &len);
    assert_non_null(text);
    struct replay *rp;
    char err[200];
    int rc = replay_new(opt, &rp, err, sizeof err);
    if (rc != 0) {
        free(text);
        *rc_out = rc;
        return NULL;
    }
    struct trace_decoder d;
    trace_decoder_init(&d);
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        size_t lineno = 0;
        for (char *p = text, *nl; rc == 0 && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
            struct trace_event ev;
            rc = trace_decode_line(&d, p, (size_t)(nl - p), ++lineno, &ev);
            if (rc == 0 && pass == 0 && ev.kind == TRACE_NOTIFY)
                rc = replay_note_notify(rp, ev.conn, ev.group, ev.ts);
            else if (rc == 0 && pass == 0 && ev.kind == TRACE_REQUEST && ev.code == 38 && ev.next)
                rc = replay_note_query(rp, ev.conn, ev.ext[0].val, ev.ts); /* the CLI's pre-pass */
            else if (rc == 0 && pass == 1)
                rc = replay_feed(rp, &ev) < 0 ? RMQ_ENOMEM : 0;
        }
    }
    if (rc == 0)
        rc = replay_finish(rp);
    struct buf *o = replay_output(rp);
    char *out = rc == 0 ? strndup((const char *)buf_head(o), buf_live(o)) : NULL;
    replay_free(rp);
    trace_decoder_free(&d);
    free(text);
    *rc_out = rc;
    return out;
}

static void check_golden(const char *trace, const char *golden, const struct replay_options *opt)
{
    int rc;
    char *out = run_replay(trace, opt, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(out);
    const char *path = test_data_path(golden);
    if (getenv("RMQ_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(out, f);
        fclose(f);
    }
    size_t len;
    char *want = test_read_file(path, &len);
    if (!want)
        fail_msg("missing golden file %s (run with RMQ_UPDATE_GOLDEN=1)", path);
    if (strcmp(out, want) != 0)
        fail_msg("replay of %s differs from %s; got:\n%s", trace, golden, out);
    /* Deterministic: a second run gives the same bytes. */
    char *again = run_replay(trace, opt, &rc);
    assert_string_equal(out, again);
    free(again);
    free(want);
    free(out);
}

static struct replay_options defaults(void)
{
    struct replay_options o;
    replay_options_init(&o);
    return o;
}

static void test_join(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/join.jsonl", "traces/join.expected.txt", &o);
}

static void test_leave_unregister(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/leave.jsonl", "traces/leave.expected.txt", &o);
}

static void test_crash_close(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/crash.jsonl", "traces/crash.expected.txt", &o);
}

static void test_expiry_notified(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/expiry.jsonl", "traces/expiry.expected.txt", &o);
}

/* The broker's behaviour: no NOTIFY on expiry, 10 s scans; the survivor's
 * queues of the expired member stall until its next timer tick. */
static void test_expiry_silent(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    o.dialect.notify_on_expiry = false;
    o.scan_ms = 10000;
    check_golden("traces/expiry.jsonl", "traces/expiry_silent.expected.txt", &o);
}

static void test_subscription_change(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/subscription.jsonl", "traces/subscription.expected.txt", &o);
}

static void test_two_brokers(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/two_brokers.jsonl", "traces/two_brokers.expected.txt", &o);
}

/* cA misses the NOTIFY for cB's join (the trace shows none to its
 * connection) and holds broker-a:4-7 until its timer at +20000. */
static void test_missed_notify(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    o.explain_topic = "T";
    o.explain_broker = "broker-a";
    o.explain_qid = 5;
    check_golden("traces/missed_notify.jsonl", "traces/missed_notify.expected.txt", &o);
    int rc;
    char *out = run_replay("traces/missed_notify.jsonl", &o, &rc);
    for (int q = 4; q < 8; q++) {
        char want[200];
        snprintf(want, sizeof want,
                 "overlap G T broker-a:%d 2023-11-14T22:13:25.000Z..2023-11-14T22:13:40.000Z (+5000..+20000) "
                 "15000ms owners=C1,C2 cause: C1 (cA)",
                 q);
        assert_non_null(strstr(out, want));
    }
    assert_null(strstr(out, "broker-a:3 +"));
    free(out);
}

/* The same with the model's NOTIFYs for everyone: no overlap at all. */
static void test_missed_notify_model(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    o.notify_source = REPLAY_NOTIFY_MODEL;
    int rc;
    char *out = run_replay("traces/missed_notify.jsonl", &o, &rc);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "overlap G"));
    free(out);
    /* --ignore-notify makes any client deaf. */
    const char *ignore[] = {"cA"};
    o.ignore_notify = ignore;
    o.n_ignore = 1;
    out = run_replay("traces/join.jsonl", &o, &rc);
    assert_non_null(strstr(out, "(+5000..+20000) 15000ms owners=C1,C2 cause: C1 (cA) does not rebalance on "
                                "NOTIFY (flag)"));
    free(out);
}

/* replay_infer_behaviour on its own: who reacts, who ignores, the period. */
static void test_infer_behaviour(void **state)
{
    (void)state;
    struct replay_behaviour b;
    /* Reacts: re-queried 10 ms after the NOTIFY at 5000; its timer then runs 20 s from there. */
    int64_t n1[] = {0, 5000}, q1[] = {10, 5010, 25013};
    replay_infer_behaviour(n1, 2, q1, 3, 30000, &b);
    assert_int_equal(b.notify, 1);
    assert_int_equal(b.notifies, 1); /* the NOTIFY of its own join tells nothing */
    assert_int_equal(b.reacted, 1);
    assert_int_equal(b.period_ms, 20000); /* 25013 - 5010, rounded; the 10 -> 5010 gap is the NOTIFY's */
    assert_int_equal(b.gaps, 1);
    /* Ignores: every 8 s whatever the NOTIFYs; two topics a round (queries 2 ms apart are one round). */
    int64_t n2[] = {12000, 0, 5000, 29500}, q2[] = {100, 102, 8103, 8104, 16100, 24102};
    replay_infer_behaviour(n2, 4, q2, 6, 30000, &b);
    assert_int_equal(b.notify, 0);
    assert_int_equal(b.rounds, 4);
    assert_int_equal(b.notifies, 2); /* 0: its start; 29500: its window runs past the end */
    assert_int_equal(b.reacted, 0);
    assert_int_equal(b.period_ms, 8000);
    assert_int_equal(b.gaps, 3);
    /* Nothing recorded (an old trace): unknown. */
    replay_infer_behaviour(n1, 2, NULL, 0, 30000, &b);
    assert_int_equal(b.notify, -1);
    assert_int_equal(b.period_ms, 0);
    /* Queries but no NOTIFY after the start: the period only. */
    int64_t q3[] = {0, 3000, 6001};
    replay_infer_behaviour(NULL, 0, q3, 3, 30000, &b);
    assert_int_equal(b.notify, -1);
    assert_int_equal(b.period_ms, 3000);
    /* A majority decides: one coincidental query after a NOTIFY does not make a reacting client. */
    int64_t n4[] = {4500, 12500, 20500}, q4[] = {0, 4000, 8000, 12000, 16000, 20000, 24000}, q4b[] = {5000};
    (void)q4b;
    n4[0] = 3500; /* the 4000 round follows it: 1 of 3 */
    replay_infer_behaviour(n4, 3, q4, 7, 30000, &b);
    assert_int_equal(b.reacted, 1);
    assert_int_equal(b.notify, 0);
}

/* A trace with recorded consumer-list queries: cA ignores NOTIFY (inferred)
 * and rebalances every 8 s, cB reacts; the overlaps are found with no flag,
 * named after cA, and --client replaces what was inferred. */
static void test_infer_trace(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/infer.jsonl", "traces/infer.expected.txt", &o);
    int rc;
    char *out = run_replay("traces/infer.jsonl", &o, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out,
                           "C1 cA notify=ignored (inferred; re-queried after 0/2 NOTIFY) rebalance-ms=8000 "
                           "(inferred; measured 8000 over 3 gap(s); 4 query round(s))"));
    assert_non_null(strstr(out, "C2 cB notify=reacts (inferred; re-queried after 1/1 NOTIFY)"));
    assert_non_null(strstr(out,
                           "(+4000..+8000) 4000ms owners=C1,C2 cause: C1 (cA) does not rebalance on NOTIFY "
                           "(inferred), so it kept its queues until its timer (every 8000 ms)"));
    free(out);
    struct replay_client_override ov[] = {{"cA", 1, 0}};
    o.overrides = ov;
    o.n_overrides = 1;
    out = run_replay("traces/infer.jsonl", &o, &rc);
    assert_null(strstr(out, "overlap G"));
    assert_non_null(strstr(out, "C1 cA notify=reacts (override"));
    free(out);
    /* --infer off: the old defaults, everyone reacts: nothing found */
    o.n_overrides = 0;
    o.infer = false;
    out = run_replay("traces/infer.jsonl", &o, &rc);
    assert_null(strstr(out, "overlap G"));
    free(out);
    /* An override of the period alone keeps the inferred deafness. */
    o.infer = true;
    struct replay_client_override ov2[] = {{"cA", -1, 2000}};
    o.overrides = ov2;
    o.n_overrides = 1;
    out = run_replay("traces/infer.jsonl", &o, &rc);
    assert_non_null(strstr(out,
                           "C1 cA notify=ignored (inferred; re-queried after 0/2 NOTIFY) rebalance-ms=2000 "
                           "(override"));
    free(out);
}

/* --explain of a queue no group consumes says so instead of an empty section. */
static void test_explain_unknown(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    o.explain_topic = "T";
    o.explain_broker = "broker-z";
    o.explain_qid = 5;
    int rc;
    char *out = run_replay("traces/join.jsonl", &o, &rc);
    assert_non_null(
        strstr(out, "== explain T:broker-z:5\nwarning: no group of the trace consumes this queue"));
    free(out);
}

static void test_json_and_window(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    o.format = REPLAY_JSON;
    check_golden("traces/missed_notify.jsonl", "traces/missed_notify.expected.json", &o);
    o.format = REPLAY_TEXT;
    o.has_from = o.from_rel = o.has_to = o.to_rel = true;
    o.from_ms = 10000;
    o.to_ms = 12000;
    check_golden("traces/missed_notify.jsonl", "traces/missed_notify_window.expected.txt", &o);
}

/* Recorded holdings: real overlaps and gaps beside the model, and where
 * the two disagree, with the culprit. */
static void test_truth_trace(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    check_golden("traces/truth.jsonl", "traces/truth.expected.txt", &o);
    int rc;
    char *out = run_replay("traces/truth.jsonl", &o, &rc);
    assert_int_equal(rc, 0);
    /* cA kept queues 2-3 for a second after the model gave them to cB */
    assert_non_null(strstr(out,
                           "real-overlap G T broker-a:2 1970-01-01T00:00:03.000Z..1970-01-01T00:00:04.000Z "
                           "(+2000..+3000) 1000ms holders=C1,C2\n"));
    assert_non_null(strstr(out,
                           "disagree G C1 1970-01-01T00:00:03.000Z..1970-01-01T00:00:04.000Z (+2000..+3000) "
                           "1000ms model=T:broker-a:0-1 truth=T:broker-a:0-3: client bug: "));
    /* the round where cA did not answer judges no gap; the next one does */
    assert_non_null(strstr(out, "real-gap G T broker-a:3 1970-01-01T00:00:05.000Z..1970-01-01T00:00:05.500Z "
                                "(+4000..+4500) 500ms nobody held it\n"));
    assert_non_null(
        strstr(out, "holdingsSamples 15\nholdingsUnanswered 1\nholdingsRounds 8\nrealOverlaps 2\n"));
    free(out);
    /* A wrong override (cA ignores NOTIFY): the model keeps cA on 2-3, the clients did not. */
    struct replay_client_override ov[] = {{"cA", 0, 60000}};
    o.overrides = ov;
    o.n_overrides = 1;
    check_golden("traces/truth.jsonl", "traces/truth_override.expected.txt", &o);
    out = run_replay("traces/truth.jsonl", &o, &rc);
    assert_non_null(
        strstr(out, "disagree G C1 1970-01-01T00:00:02.500Z..1970-01-01T00:00:03.000Z (+1500..+2000) "
                    "500ms model=T:broker-a:0-3 truth=T:broker-a:0-1: model bug: C1 had already "
                    "rebalanced, the model has it waiting for its timer (notify=ignored from override"));
    assert_non_null(strstr(out, "model=C1,C2 truth=C2: model bug: "));
    free(out);
    o.format = REPLAY_JSON;
    out = run_replay("traces/truth.jsonl", &o, &rc);
    assert_non_null(strstr(out,
                           "{\"type\":\"disagreement\",\"group\":\"G\",\"label\":\"C1\",\"clientId\":\"cA\","
                           "\"from\":1500,\"to\":2000,\"ms\":500,\"open\":false,\"detail\":"));
    assert_non_null(strstr(out, "\"blame\":\"model\""));
    assert_non_null(strstr(
        out, "{\"type\":\"realOverlap\",\"group\":\"G\",\"topic\":\"T\",\"broker\":\"broker-a\","
             "\"queueId\":2,\"from\":2000,\"to\":3000,\"ms\":1000,\"open\":false,\"holders\":\"C1,C2\"}"));
    free(out);
    /* The same trace without the holdings lines: nothing of the truth. */
    o = defaults();
    out = run_replay("traces/infer.jsonl", &o, &rc);
    assert_null(strstr(out, "== truth"));
    assert_non_null(strstr(out, "holdingsSamples 0\n"));
    free(out);
}

static void test_bad_options(void **state)
{
    (void)state;
    struct replay_options o = defaults();
    struct replay *rp;
    char err[200];
    o.alloc.strategy = ALLOCATE_CONFIG;
    assert_int_equal(replay_new(&o, &rp, err, sizeof err), RMQ_EINVAL);
    assert_non_null(strstr(err, "CONFIG"));
    o = defaults();
    o.rebalance_ms = 0;
    assert_int_equal(replay_new(&o, &rp, err, sizeof err), RMQ_EINVAL);
}

struct replay_oom {
    const char *trace;
    struct replay_options o;
};

static int replay_oom_run(void *ctx)
{
    struct replay_oom *x = ctx;
    int rc;
    free(run_replay(x->trace, &x->o, &rc));
    return rc;
}

/* Failing the Nth allocation: the engine reports or absorbs it, never
 * crashes, never leaks. */
static void test_alloc_failures(void **state)
{
    (void)state;
    struct replay_oom a = {"traces/missed_notify.jsonl", defaults()};
    struct replay_oom b = {"traces/truth.jsonl", defaults()};
    const struct test_oom t = {.run = replay_oom_run, .absorbs = 1, .max = 10000};
    test_oom_loop(&t, &a);
    test_oom_loop(&t, &b);
}

TEST_MAIN(cmocka_unit_test(test_join), cmocka_unit_test(test_leave_unregister),
          cmocka_unit_test(test_crash_close), cmocka_unit_test(test_expiry_notified),
          cmocka_unit_test(test_expiry_silent), cmocka_unit_test(test_subscription_change),
          cmocka_unit_test(test_two_brokers), cmocka_unit_test(test_missed_notify),
          cmocka_unit_test(test_missed_notify_model), cmocka_unit_test(test_json_and_window),
          cmocka_unit_test(test_infer_behaviour), cmocka_unit_test(test_infer_trace),
          cmocka_unit_test(test_explain_unknown), cmocka_unit_test(test_truth_trace),
          cmocka_unit_test(test_bad_options), cmocka_unit_test(test_alloc_failures))
