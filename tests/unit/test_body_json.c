/* test_body_json.c — what the body codecs share: string escaping, loading
 * one object, the field readers (numeric strings, ordinals, null as
 * absent, error paths) and the writers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "body_json.h"
#include "err.h"
#include "mem.h"
#include "test_support.h"

#include <jansson.h>
#include <string.h>

static void test_json_string_escaping(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_json_append_string(&b, ""), RMQ_OK);
    assert_int_equal(rmq_json_append_string(&b, "a\"b\\c/d\n\r\t\b\f\x01\x1f\x7f\xe4\xb8\xad"), RMQ_OK);
    assert_buf_str(&b,
                   "\"\"\"a\\\"b\\\\c/d\\u000a\\u000d\\u0009\\u0008\\u000c\\u0001\\u001f\x7f\xe4\xb8\xad\"");
    buf_free(&b);
    buf_init(&b, 5);
    assert_int_equal(rmq_json_append_string(&b, "abc"), RMQ_OK);
    assert_int_equal(rmq_json_append_string(&b, "x"), RMQ_E2BIG);
    assert_int_equal(buf_live(&b), 5);
    buf_free(&b);
}

static void test_load_object(void **state)
{
    (void)state;
    struct json_t *root;
    char err[160] = "";
    const char *ok = "{\"a\":1}\n"; /* C++ appends a newline */
    assert_int_equal(rmq_json_load_object((const uint8_t *)ok, strlen(ok), "x", &root, err, sizeof err),
                     RMQ_OK);
    assert_non_null(root);
    json_decref(root);
    const char *arr = "[1]";
    assert_int_equal(rmq_json_load_object((const uint8_t *)arr, strlen(arr), "x", &root, err, sizeof err),
                     RMQ_EPROTO);
    assert_null(root);
    assert_string_equal(err, "x: expected a JSON object");
    const char *junk = "{\"a\":1} 2";
    assert_int_equal(rmq_json_load_object((const uint8_t *)junk, strlen(junk), "y", &root, err, sizeof err),
                     RMQ_EPROTO);
    assert_non_null(strstr(err, "y: invalid JSON"));
}

static void test_readers(void **state)
{
    (void)state;
    static const char *const names[] = {"A", "B"};
    char err[160] = "";
    const struct rmq_json_err pe = {err, sizeof err};
    json_t *o = json_loads("{\"l\":\"-12\",\"e\":1,\"n\":null,\"s\":\"\",\"b\":true,\"x\":[]}", 0, NULL);
    assert_non_null(o);
    int64_t l = 0;
    assert_int_equal(rmq_json_read_long(o, "l", "", -100, 100, &l, &pe), RMQ_OK);
    assert_int_equal(l, -12); /* a numeric string */
    assert_int_equal(rmq_json_read_long(o, "l", "p", 0, 100, &l, &pe), RMQ_EPROTO);
    assert_string_equal(err, "p.l: integer out of range");
    int e = -1;
    assert_int_equal(rmq_json_read_enum(o, "e", names, 2, "", &e, &pe), RMQ_OK);
    assert_int_equal(e, 1);                                                      /* an ordinal */
    assert_int_equal(rmq_json_read_enum(o, "n", names, 2, "", &e, &pe), RMQ_OK); /* null: not sent */
    assert_int_equal(e, 1);
    char *s = NULL;
    assert_int_equal(rmq_json_read_str_or(o, "s", "dflt", "", &s, &pe), RMQ_OK);
    assert_string_equal(s, "dflt"); /* empty takes the default */
    rmq_free(s);
    assert_int_equal(rmq_json_read_required_str(o, "s", "", &s, &pe), RMQ_EPROTO);
    assert_string_equal(err, "s: expected a non-empty string");
    bool b = false;
    assert_int_equal(rmq_json_read_bool(o, "b", "", &b, &pe), RMQ_OK);
    assert_true(b);
    const struct json_t *a = NULL;
    assert_int_equal(rmq_json_read_array(o, "b", "", &a, &pe), RMQ_EPROTO);
    assert_int_equal(rmq_json_read_array(o, "x", "", &a, &pe), RMQ_OK);
    assert_non_null(a);
    json_decref(o);
}

static void test_writers(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    const char *v[] = {"a", "b\""};
    assert_int_equal(rmq_json_append_string_array(&b, v, 2), RMQ_OK);
    assert_int_equal(rmq_json_append_kv_str(&b, "k", NULL, ','), RMQ_OK);
    assert_int_equal(rmq_json_append_mq(&b, "T", "broker-a", 3), RMQ_OK);
    assert_buf_str(&b,
                   "[\"a\",\"b\\\"\"]\"k\":\"\",{\"brokerName\":\"broker-a\",\"queueId\":3,\"topic\":\"T\"}");
    buf_free(&b);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_json_string_escaping),
                cmocka_unit_test(test_load_object), cmocka_unit_test(test_readers),
                cmocka_unit_test(test_writers))
