/* test_allocate_json.c — the JSON glue: a malformed-field table (each bad
 * case gives an error naming the field), option defaults, and the output
 * shape (consumers sorted as keys, a duplicated id once, lists in order). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "allocate_json.h"
#include "err.h"
#include "mem.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs a case given as JSON text; returns the compact reply (static). */
static const char *run(const char *text)
{
    static char out[4096];
    json_error_t jerr;
    json_t *c = json_loads(text, 0, &jerr), *reply = NULL;
    if (!c)
        fail_msg("bad test JSON: %s: %s", text, jerr.text);
    assert_int_equal(allocate_json_run(c, &reply), 0);
    char *s = json_dumps(reply, JSON_COMPACT);
    assert_non_null(s);
    snprintf(out, sizeof out, "%s", s);
    free(s);
    json_decref(reply);
    json_decref(c);
    return out;
}

#define Q0 "{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":0}"
#define Q1 "{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":1}"

static void test_malformed_table(void **state)
{
    (void)state;
    static const struct {
        const char *json, *err;
    } table[] = {
        {"[]", "not a JSON object"},
        {"{}", "strategy: missing"},
        {"{\"strategy\":5}", "strategy: missing or not a string"},
        {"{\"strategy\":\"FOO\"}", "unknown strategy \\\"FOO\\\""},
        {"{\"strategy\":\"avg\"}", "unknown strategy"},
        {"{\"strategy\":\"AVG\",\"consumers\":[\"a\"]}", "queues: missing"},
        {"{\"strategy\":\"AVG\",\"queues\":{},\"consumers\":[\"a\"]}", "queues: missing or not an array"},
        {"{\"strategy\":\"AVG\",\"queues\":[1],\"consumers\":[\"a\"]}", "queues[0]: expected a queue object"},
        {"{\"strategy\":\"AVG\",\"queues\":[{\"brokerName\":\"b\",\"queueId\":0}],\"consumers\":[\"a\"]}",
         "queues[0].topic"},
        {"{\"strategy\":\"AVG\",\"queues\":[" Q0 ",{\"topic\":\"T\",\"brokerName\":3,\"queueId\":0}],"
         "\"consumers\":[\"a\"]}",
         "queues[1].brokerName"},
        {"{\"strategy\":\"AVG\",\"queues\":[{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":\"0\"}],"
         "\"consumers\":[\"a\"]}",
         "queues[0].queueId"},
        {"{\"strategy\":\"AVG\",\"queues\":[{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":1.5}],"
         "\"consumers\":[\"a\"]}",
         "queues[0].queueId"},
        {"{\"strategy\":\"AVG\",\"queues\":[{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":2147483648}],"
         "\"consumers\":[\"a\"]}",
         "queues[0].queueId"},
        {"{\"strategy\":\"AVG\",\"queues\":[" Q0 "]}", "consumers: missing"},
        {"{\"strategy\":\"AVG\",\"queues\":[" Q0 "],\"consumers\":[\"a\",null]}",
         "consumers[1]: not a string"},
        {"{\"strategy\":\"AVG\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],\"options\":[]}",
         "options: not an object"},
        {"{\"strategy\":\"AVG\",\"queues\":[],\"consumers\":[\"a\"]}", "mqAll"},
        {"{\"strategy\":\"AVG\",\"queues\":[" Q0 "],\"consumers\":[]}", "cidAll"},
        {"{\"strategy\":\"AVG\",\"queues\":[" Q0 "],\"consumers\":[\"\"]}", "empty"},
        {"{\"strategy\":\"CONFIG\",\"queues\":[" Q0 "],\"consumers\":[\"a\"]}", "options.config: missing"},
        {"{\"strategy\":\"CONFIG\",\"queues\":[],\"consumers\":[],\"options\":{\"config\":[{}]}}",
         "options.config[0].topic"},
        {"{\"strategy\":\"MACHINE_ROOM\",\"queues\":[" Q0 "],\"consumers\":[\"a\"]}", "options.consumerIdcs"},
        {"{\"strategy\":\"MACHINE_ROOM\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"consumerIdcs\":[1]}}",
         "options.consumerIdcs[0]"},
        {"{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"inner\":\"CONFIG\"}}",
         "options.inner"},
        {"{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"inner\":7}}",
         "options.inner"},
        {"{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"brokerRooms\":{\"b\":\"A\"}}}",
         "go together"},
        {"{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"brokerRooms\":[],\"consumerRooms\":{}}}",
         "options.brokerRooms: not an object"},
        {"{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"brokerRooms\":{\"b\":1},\"consumerRooms\":{}}}",
         "options.brokerRooms[\\\"b\\\"]"},
        {"{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"brokerRooms\":{\"b\":\"A\"},\"consumerRooms\":{}}}",
         "no machine room for consumer id a"},
        {"{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"a\"]}",
         "no machine room for queue"},
        {"{\"strategy\":\"CONSISTENT_HASH\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"virtualNodes\":-1}}",
         "must not be negative"},
        {"{\"strategy\":\"CONSISTENT_HASH\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"virtualNodes\":\"10\"}}",
         "options.virtualNodes"},
        {"{\"strategy\":\"CONSISTENT_HASH\",\"queues\":[" Q0 "],\"consumers\":[\"a\"],"
         "\"options\":{\"virtualNodes\":100000000}}",
         "too large"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *got = run(table[i].json);
        if (strncmp(got, "{\"error\":", 9) || !strstr(got, table[i].err))
            fail_msg("row %zu: %s -> %s (wanted an error with '%s')", i, table[i].json, got, table[i].err);
    }
}

static void test_output_shape(void **state)
{
    (void)state;
    /* Unsorted input, a duplicated id, extra fields ignored, options null. */
    assert_string_equal(
        run("{\"case\":3,\"strategy\":\"AVG\",\"group\":\"g\",\"expected\":1,\"options\":null,"
            "\"queues\":[" Q1 "," Q0 "],\"consumers\":[\"z\",\"a\",\"z\"]}"),
        "{\"allocation\":{\"a\":[" Q0 "],\"z\":[" Q1 "]}}");
    /* Everybody gets nothing with 0 virtual nodes, keys still present. */
    assert_string_equal(run("{\"strategy\":\"CONSISTENT_HASH\",\"queues\":[" Q0
                            "],\"consumers\":[\"b\",\"a\"],"
                            "\"options\":{\"virtualNodes\":0}}"),
                        "{\"allocation\":{\"a\":[],\"b\":[]}}");
    /* CONFIG returns its list as-is, even with empty lists. */
    assert_string_equal(run("{\"strategy\":\"CONFIG\",\"queues\":[],\"consumers\":[\"a\"],"
                            "\"options\":{\"config\":[" Q1 "," Q0 "]}}"),
                        "{\"allocation\":{\"a\":[" Q1 "," Q0 "]}}");
    /* NEARBY without maps uses the room rule; inner defaults to AVG. */
    assert_string_equal(run("{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"consumers\":[\"c1-A\",\"c2-B\"],"
                            "\"queues\":[{\"topic\":\"T\",\"brokerName\":\"x-A\",\"queueId\":0},"
                            "{\"topic\":\"T\",\"brokerName\":\"x-C\",\"queueId\":0},"
                            "{\"topic\":\"T\",\"brokerName\":\"x-C\",\"queueId\":1}]}"),
                        "{\"allocation\":{\"c1-A\":[{\"topic\":\"T\",\"brokerName\":\"x-A\",\"queueId\":0},"
                        "{\"topic\":\"T\",\"brokerName\":\"x-C\",\"queueId\":0}],"
                        "\"c2-B\":[{\"topic\":\"T\",\"brokerName\":\"x-C\",\"queueId\":1}]}}");
}

static void test_parse_case_api(void **state)
{
    (void)state;
    json_t *c =
        json_loads("{\"strategy\":\"CONSISTENT_HASH\",\"queues\":[" Q0 "],\"consumers\":[\"a\"]}", 0, NULL);
    struct allocate_json_case pc;
    assert_int_equal(allocate_json_case_parse(&pc, c, NULL, 0), 0);
    assert_int_equal(pc.options.virtual_nodes, 10);
    assert_int_equal(pc.input.n_queues, 1);
    assert_string_equal(pc.input.consumers[0], "a");
    allocate_json_case_clear(&pc);
    allocate_json_case_clear(&pc); /* cleared twice is fine */
    json_decref(c);
    struct allocate_queue q;
    char err[100];
    json_t *v = json_pack("{s:s, s:s, s:i}", "topic", "T", "brokerName", "b", "queueId", -7);
    assert_int_equal(allocate_json_queue_parse(v, &q, "q", err, sizeof err), 0);
    assert_int_equal(q.queue_id, -7);
    json_decref(v);
    /* A string with an embedded NUL (possible from C, not from text). */
    v = json_pack("{s:s%, s:s, s:i}", "topic", "T\0x", (size_t)3, "brokerName", "b", "queueId", 1);
    assert_int_equal(allocate_json_queue_parse(v, &q, "q", err, sizeof err), RMQ_EINVAL);
    assert_non_null(strstr(err, "q.topic"));
    json_decref(v);
}

/* A message cut inside a multi-byte character still makes a valid reply. */
static void test_long_utf8_error(void **state)
{
    (void)state;
    char id[2000], text[2600];
    size_t n = 0;
    while (n + 4 < sizeof id - 1) {
        memcpy(id + n, "\xf0\x9f\x98\x80", 4);
        n += 4;
    }
    id[n] = 0;
    snprintf(text, sizeof text,
             "{\"strategy\":\"MACHINE_ROOM_NEARBY\",\"queues\":[" Q0 "],\"consumers\":[\"%s\"],"
             "\"options\":{\"brokerRooms\":{\"b\":\"A\"},\"consumerRooms\":{}}}",
             id);
    const char *got = run(text);
    assert_non_null(strstr(got, "no machine room for consumer id"));
}

TEST_MAIN(cmocka_unit_test(test_malformed_table), cmocka_unit_test(test_output_shape),
          cmocka_unit_test(test_parse_case_api), cmocka_unit_test(test_long_utf8_error))
