/* test_vectors.c — every case of tests/data/allocation.jsonl (produced by the
 * real Java client classes) through the per-consumer API, the whole-group
 * API and the JSON glue, order included; then fail-the-Nth-allocation loops
 * over the whole-group allocation. A mismatch names the case index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "allocate.h"
#include "allocate_json.h"
#include "err.h"
#include "mem.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CASES 1000

static json_t *cases[MAX_CASES];
static size_t n_cases;

static int load_cases(void **state)
{
    (void)state;
    size_t len;
    char *text = test_read_file(test_data_path("allocation.jsonl"), &len);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", test_data_path("allocation.jsonl"));
        return -1;
    }
    for (char *line = text, *nl; *line && n_cases < MAX_CASES; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            nl = line + strlen(line) - 1;
        json_error_t jerr;
        json_t *c = json_loadb(line, (size_t)(nl - line + (*nl != '\n')), 0, &jerr);
        if (!c) {
            fprintf(stderr, "line %zu: %s\n", n_cases + 1, jerr.text);
            free(text);
            return -1;
        }
        cases[n_cases++] = c;
        if (!nl[1])
            break;
    }
    free(text);
    return n_cases ? 0 : -1;
}

static int free_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_cases; i++)
        json_decref(cases[i]);
    return 0;
}

/* Whether q matches the expected {"topic","brokerName","queueId"}. */
static int queue_matches(const struct allocate_queue *q, const json_t *e)
{
    return !strcmp(q->topic, json_string_value(json_object_get(e, "topic"))) &&
           !strcmp(q->broker_name, json_string_value(json_object_get(e, "brokerName"))) &&
           q->queue_id == json_integer_value(json_object_get(e, "queueId"));
}

/* Compares n queues with the expected array; 0 when equal. */
static int queues_match(const struct allocate_queue *q, size_t n, const json_t *exp)
{
    if (!json_is_array(exp) || json_array_size(exp) != n)
        return -1;
    for (size_t k = 0; k < n; k++)
        if (!queue_matches(&q[k], json_array_get(exp, k)))
            return -1;
    return 0;
}

/* The per-consumer path the client takes: sort both lists, then call
 * allocate() once per consumer id. Returns the number of mismatches. */
static int check_per_consumer(size_t idx, const struct allocate_json_case *c, const json_t *expected)
{
    struct allocate_queue *q = rmq_malloc((c->input.n_queues + 1) * sizeof *q);
    const char **ids = rmq_malloc((c->input.n_consumers + 1) * sizeof *ids);
    assert_non_null(q);
    assert_non_null(ids);
    memcpy(q, c->input.queues, c->input.n_queues * sizeof *q);
    memcpy((void *)ids, c->input.consumers, c->input.n_consumers * sizeof *ids);
    allocate_sort_queues(q, c->input.n_queues);
    allocate_sort_consumers(ids, c->input.n_consumers);
    struct allocate_input sorted = {q, c->input.n_queues, ids, c->input.n_consumers};
    int bad = 0;
    const char *cid;
    const json_t *exp;
    size_t i = 0;
    json_object_foreach((json_t *)expected, cid, exp)
    {
        while (i < sorted.n_consumers && i && !strcmp(ids[i], ids[i - 1]))
            i++; /* a duplicated id is one key */
        if (i >= sorted.n_consumers || strcmp(ids[i], cid)) {
            fprintf(stderr, "case %zu: expected key %s is not sorted consumer %zu\n", idx, cid, i);
            bad++;
            break;
        }
        struct allocate_queue *res;
        size_t n;
        char err[256];
        int rc = allocate_one(&c->options, &sorted, cid, &res, &n, err, sizeof err);
        if (rc) {
            fprintf(stderr, "case %zu: allocate_one(%s) failed: %s\n", idx, cid, err);
            bad++;
        } else {
            if (queues_match(res, n, exp)) {
                fprintf(stderr, "case %zu (%s): allocate_one(%s) differs\n", idx,
                        allocate_strategy_name(c->options.strategy), cid);
                bad++;
            }
            rmq_free(res);
        }
        i++;
    }
    rmq_free(q);
    rmq_free((void *)ids);
    return bad;
}

/* The whole-group path: same lists, same order, one key per distinct id. */
static int check_group(size_t idx, const struct allocate_json_case *c, const json_t *expected)
{
    struct allocate_result *r;
    char err[256];
    if (allocate_group(&c->options, &c->input, &r, err, sizeof err)) {
        fprintf(stderr, "case %zu: allocate_group failed: %s\n", idx, err);
        return 1;
    }
    int bad = 0;
    size_t keys = 0;
    void *it = json_object_iter((json_t *)expected);
    for (size_t i = 0; i < r->n_consumers; i++) {
        if (r->consumer_first[i] != i)
            continue;
        keys++;
        if (!it || strcmp(json_object_iter_key(it), r->consumers[i])) {
            fprintf(stderr, "case %zu: consumer %zu is %s, expected key %s\n", idx, i, r->consumers[i],
                    it ? json_object_iter_key(it) : "(none)");
            bad++;
            break;
        }
        struct allocate_queue tmp[512];
        size_t n = allocate_result_count_of(r, i);
        assert_true(n <= 512);
        for (size_t k = 0; k < n; k++)
            tmp[k] = allocate_result_queues_of(r, i)[k].queue;
        if (queues_match(tmp, n, json_object_iter_value(it))) {
            fprintf(stderr, "case %zu (%s): group result of %s differs\n", idx,
                    allocate_strategy_name(c->options.strategy), r->consumers[i]);
            bad++;
        }
        it = json_object_iter_next((json_t *)expected, it);
    }
    if (!bad && keys != json_object_size(expected)) {
        fprintf(stderr, "case %zu: %zu consumers, %zu expected keys\n", idx, keys,
                json_object_size(expected));
        bad++;
    }
    allocate_result_free(r);
    return bad;
}

static void test_every_case_both_apis(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < n_cases; i++) {
        struct allocate_json_case c;
        char err[256];
        const json_t *expected = json_object_get(cases[i], "expected");
        assert_true(json_is_object(expected));
        if (allocate_json_case_parse(&c, cases[i], err, sizeof err)) {
            fprintf(stderr, "case %zu: parse failed: %s\n", i, err);
            bad++;
            continue;
        }
        int b = check_per_consumer(i, &c, expected) + check_group(i, &c, expected);
        if (b)
            fprintf(stderr, "case %zu FAILED\n", i);
        bad += b;
        allocate_json_case_clear(&c);
    }
    assert_int_equal(n_cases, 300);
    if (bad)
        fail_msg("%d mismatches over %zu cases", bad, n_cases);
}

/* The JSON glue gives {"allocation": expected}, keys in the same order. */
static void test_every_case_json(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < n_cases; i++) {
        json_t *reply;
        assert_int_equal(allocate_json_run(cases[i], &reply), 0);
        const json_t *got = json_object_get(reply, "allocation"),
                     *exp = json_object_get(cases[i], "expected");
        int same = got && json_equal((json_t *)got, (json_t *)exp);
        for (void *a = json_object_iter((json_t *)got), *e = json_object_iter((json_t *)exp);
             same && (a || e);
             a = json_object_iter_next((json_t *)got, a), e = json_object_iter_next((json_t *)exp, e))
            same = a && e && !strcmp(json_object_iter_key(a), json_object_iter_key(e));
        if (!same) {
            char *txt = json_dumps(reply, JSON_COMPACT);
            fprintf(stderr, "case %zu: JSON reply differs: %.300s\n", i, txt ? txt : "?");
            free(txt);
            bad++;
        }
        json_decref(reply);
    }
    if (bad)
        fail_msg("%d JSON mismatches", bad);
}

struct group_oom {
    struct allocate_json_case c;
    struct allocate_result *r;
};

static int group_oom_run(void *ctx)
{
    struct group_oom *x = ctx;
    x->r = NULL;
    return allocate_group(&x->c.options, &x->c.input, &x->r, NULL, 0);
}

static void group_oom_check(void *ctx, int rc)
{
    struct group_oom *x = ctx;
    if (rc == 0)
        allocate_result_free(x->r);
    else
        assert_null(x->r);
}

/* First case of each strategy, with every allocation of allocate_group
 * failed in turn: RMQ_ENOMEM each time (ASan checks nothing leaks), then
 * a result equal to the expected one. */
static void test_group_oom(void **state)
{
    (void)state;
    int seen[ALLOCATE_STRATEGY_COUNT] = {0};
    for (size_t i = 0; i < n_cases; i++) {
        struct group_oom x;
        assert_int_equal(allocate_json_case_parse(&x.c, cases[i], NULL, 0), 0);
        if (seen[x.c.options.strategy]++) {
            allocate_json_case_clear(&x.c);
            continue;
        }
        const struct test_oom t = {.run = group_oom_run, .check = group_oom_check, .max = 10000};
        assert_true(test_oom_loop(&t, &x) > 0);
        assert_int_equal(check_group(i, &x.c, json_object_get(cases[i], "expected")), 0);
        allocate_json_case_clear(&x.c);
    }
}

struct json_oom {
    json_t *request, *reply;
    int ok; /* the last run's reply holds the allocation */
};

static int json_oom_run(void *ctx)
{
    struct json_oom *x = ctx;
    x->reply = NULL;
    return allocate_json_run(x->request, &x->reply);
}

static void json_oom_check(void *ctx, int rc)
{
    struct json_oom *x = ctx;
    x->ok = !rc && json_object_get(x->reply, "allocation");
    assert_true(rc != 0 || x->reply);
    json_decref(x->reply);
}

/* The same through the JSON glue with jansson on the funnel: every failure
 * still yields a reply (an error object) or RMQ_ENOMEM, never a crash. */
static void test_json_oom(void **state)
{
    (void)state;
    rmq_mem_install_jansson();
    int seen[ALLOCATE_STRATEGY_COUNT] = {0};
    for (size_t i = 0; i < n_cases; i++) {
        enum allocate_strategy s;
        assert_int_equal(
            allocate_strategy_parse(json_string_value(json_object_get(cases[i], "strategy")), &s), 0);
        if (seen[s]++)
            continue;
        struct json_oom x = {cases[i], NULL, 0};
        const struct test_oom t = {.run = json_oom_run, .check = json_oom_check, .absorbs = 1, .max = 100000};
        test_oom_loop(&t, &x);

        assert_true(x.ok); /* the run with nothing failing */
    }
}

TEST_MAIN_GROUP(load_cases, free_cases, cmocka_unit_test(test_every_case_both_apis),
                cmocka_unit_test(test_every_case_json), cmocka_unit_test(test_group_oom),
                cmocka_unit_test(test_json_oom))
