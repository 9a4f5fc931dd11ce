/* test_remoting_cmd.c — struct rmq_cmd: extFields map, typed getters,
 * remark/body ownership, response/request constructors, language table,
 * and allocation failure in the setters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "remoting_cmd.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

static void test_init_defaults(void **state)
{
    (void)state;
    struct rmq_cmd c;
    memset(&c, 0x5A, sizeof c);
    rmq_cmd_init(&c);
    assert_int_equal(c.code, 0);
    assert_int_equal(c.language, RMQ_LANG_JAVA);
    assert_int_equal(c.serialize_type, RMQ_SERIALIZE_JSON);
    assert_null(c.remark);
    assert_null(c.ext);
    assert_int_equal(c.ext_len, 0);
    assert_null(c.body);
    assert_false(rmq_cmd_is_response(&c));
    rmq_cmd_clear(&c);
    rmq_cmd_clear(NULL);
}

static void test_ext_set_get_replace_grow(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    assert_null(rmq_cmd_ext_get(&c, "topic"));
    assert_int_equal(rmq_cmd_ext_set(&c, "topic", "T1"), RMQ_OK);
    assert_string_equal(rmq_cmd_ext_get(&c, "topic"), "T1");
    assert_int_equal(rmq_cmd_ext_set(&c, "topic", "T2"), RMQ_OK);
    assert_int_equal(c.ext_len, 1);
    assert_string_equal(rmq_cmd_ext_get(&c, "topic"), "T2");
    /* Many keys force the array to grow; insertion order is kept. */
    for (int i = 0; i < 40; i++) {
        char k[16], v[16];
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "v%d", i * 3);
        assert_int_equal(rmq_cmd_ext_set(&c, k, v), RMQ_OK);
    }
    assert_int_equal(c.ext_len, 41);
    assert_string_equal(c.ext[0].key, "topic");
    assert_string_equal(c.ext[40].key, "k39");
    assert_string_equal(rmq_cmd_ext_get(&c, "k17"), "v51");
    assert_int_equal(rmq_cmd_ext_set(&c, "k", NULL), RMQ_EINVAL);
    rmq_cmd_clear(&c);
    assert_int_equal(c.ext_len, 0);
}

static void test_ext_i64(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    int64_t v = 0;
    assert_int_equal(rmq_cmd_ext_get_i64(&c, "x", &v), RMQ_ENOTFOUND);
    assert_int_equal(rmq_cmd_ext_set_i64(&c, "min", INT64_MIN), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set_i64(&c, "max", INT64_MAX), RMQ_OK);
    assert_string_equal(rmq_cmd_ext_get(&c, "min"), "-9223372036854775808");
    assert_int_equal(rmq_cmd_ext_get_i64(&c, "min", &v), RMQ_OK);
    assert_true(v == INT64_MIN);
    assert_int_equal(rmq_cmd_ext_get_i64(&c, "max", &v), RMQ_OK);
    assert_true(v == INT64_MAX);

    static const struct {
        const char *text;
        int rc;
        int64_t val;
    } cases[] = {
        {"0", RMQ_OK, 0},
        {"-1", RMQ_OK, -1},
        {"+15000", RMQ_OK, 15000},
        {"1796216893025", RMQ_OK, 1796216893025LL},
        {"9223372036854775808", RMQ_EINVAL, 0},
        {"-9223372036854775809", RMQ_EINVAL, 0},
        {"", RMQ_EINVAL, 0},
        {"-", RMQ_EINVAL, 0},
        {" 5", RMQ_EINVAL, 0},
        {"5 ", RMQ_EINVAL, 0},
        {"5x", RMQ_EINVAL, 0},
        {"1.5", RMQ_EINVAL, 0},
        {"0x10", RMQ_EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(rmq_cmd_ext_set(&c, "n", cases[i].text), RMQ_OK);
        v = 12345;
        int rc = rmq_cmd_ext_get_i64(&c, "n", &v);
        if (rc != cases[i].rc)
            fail_msg("\"%s\": rc %d, want %d", cases[i].text, rc, cases[i].rc);
        if (rc == RMQ_OK && v != cases[i].val)
            fail_msg("\"%s\": parsed %lld", cases[i].text, (long long)v);
    }
    rmq_cmd_clear(&c);
}

static void test_ext_bool(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    bool b = false;
    assert_int_equal(rmq_cmd_ext_get_bool(&c, "b", &b), RMQ_ENOTFOUND);
    assert_int_equal(rmq_cmd_ext_set(&c, "b", "TRUE"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_get_bool(&c, "b", &b), RMQ_OK);
    assert_true(b);
    assert_int_equal(rmq_cmd_ext_set(&c, "b", "False"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_get_bool(&c, "b", &b), RMQ_OK);
    assert_false(b);
    static const char *const bad[] = {"", "1", "yes", "truee", "tru", " true"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rmq_cmd_ext_set(&c, "b", bad[i]), RMQ_OK);
        assert_int_equal(rmq_cmd_ext_get_bool(&c, "b", &b), RMQ_EINVAL);
    }
    rmq_cmd_clear(&c);
}

static void test_remark_and_body(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    assert_int_equal(rmq_cmd_set_remark(&c, "oops"), RMQ_OK);
    assert_string_equal(c.remark, "oops");
    assert_int_equal(rmq_cmd_set_remark(&c, NULL), RMQ_OK);
    assert_null(c.remark);
    assert_int_equal(rmq_cmd_set_body_copy(&c, "hello", 5), RMQ_OK);
    assert_int_equal(c.body_len, 5);
    assert_memory_equal(c.body, "hello", 5);
    uint8_t *p = rmq_malloc(3);
    memcpy(p, "xyz", 3);
    rmq_cmd_set_body_take(&c, p, 3);
    assert_ptr_equal(c.body, p);
    assert_int_equal(rmq_cmd_set_body_copy(&c, NULL, 0), RMQ_OK);
    assert_null(c.body);
    assert_int_equal(c.body_len, 0);
    rmq_cmd_clear(&c);
}

/* What a command made by rmqcoord carries: its code and opaque, response
 * and oneway flags, serialize type, and rmqcoord's version. */
static void assert_new_cmd(const struct rmq_cmd *c, int32_t code, int32_t opaque, bool response, bool oneway,
                           int serialize_type)
{
    assert_int_equal(c->code, code);
    assert_int_equal(c->opaque, opaque);
    assert_int_equal(rmq_cmd_is_response(c), response);
    assert_int_equal(rmq_cmd_is_oneway(c), oneway);
    assert_int_equal(c->serialize_type, serialize_type);
    assert_int_equal(c->version, RMQ_SERVER_VERSION);
}

static void test_init_response_copies_request(void **state)
{
    (void)state;
    struct rmq_cmd req, resp;
    rmq_cmd_init(&req);
    req.code = 34;
    req.opaque = 77;
    req.flag = 0;
    req.version = 479;
    req.language = 1;
    req.serialize_type = RMQ_SERIALIZE_ROCKETMQ;
    assert_int_equal(rmq_cmd_init_response(&resp, &req, 17, "no topic"), RMQ_OK);
    assert_new_cmd(&resp, 17, 77, true, false, RMQ_SERIALIZE_ROCKETMQ);
    assert_int_equal(resp.language, RMQ_LANG_JAVA);
    assert_string_equal(resp.remark, "no topic");
    rmq_cmd_clear(&resp);

    rmq_mem_fail_after(0);
    assert_int_equal(rmq_cmd_init_response(&resp, &req, 0, "x"), RMQ_ENOMEM);
    rmq_mem_fail_after(-1);
    assert_null(resp.remark);
    rmq_cmd_clear(&resp);
    rmq_cmd_clear(&req);
}

static void test_init_request(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init_request(&c, 40, 9, RMQ_FLAG_ONEWAY);
    assert_new_cmd(&c, 40, 9, false, true, RMQ_SERIALIZE_JSON);
    rmq_cmd_clear(&c);
}

static void test_language_table(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int32_t code;
    } table[] = {{"JAVA", 0},   {"CPP", 1},  {"DOTNET", 2}, {"PYTHON", 3},  {"DELPHI", 4},
                 {"ERLANG", 5}, {"RUBY", 6}, {"OTHER", 7},  {"HTTP", 8},    {"GO", 9},
                 {"PHP", 10},   {"OMS", 11}, {"RUST", 12},  {"NODE_JS", 13}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        assert_int_equal(rmq_language_from_name(table[i].name), table[i].code);
        assert_string_equal(rmq_language_name(table[i].code), table[i].name);
    }
    assert_int_equal(rmq_language_from_name("COBOL"), RMQ_LANG_OTHER);
    assert_int_equal(rmq_language_from_name("java"), RMQ_LANG_OTHER);
    assert_int_equal(rmq_language_from_name(NULL), RMQ_LANG_OTHER);
    assert_string_equal(rmq_language_name(14), "OTHER");
    assert_string_equal(rmq_language_name(-1), "OTHER");
}

static int ext_oom_run(void *ctx)
{
    return rmq_cmd_ext_set(ctx, "new", "value");
}

static void ext_oom_check(void *ctx, int rc)
{
    struct rmq_cmd *c = ctx;
    if (rc == RMQ_OK)
        return;
    assert_int_equal(c->ext_len, 8);
    assert_null(rmq_cmd_ext_get(c, "new"));
}

/* Every allocation in the setters may fail; the command must stay as it
 * was, and the leak checker must find nothing. */
static void test_ext_set_allocation_failures(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    for (int i = 0; i < 8; i++) {
        char k[8];
        snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(rmq_cmd_ext_set(&c, k, "v"), RMQ_OK);
    }
    const struct test_oom t = {.run = ext_oom_run, .check = ext_oom_check, .max = 1000};
    assert_int_equal(test_oom_loop(&t, &c), 3); /* value copy, key copy, array growth */

    assert_string_equal(rmq_cmd_ext_get(&c, "new"), "value");
    rmq_mem_fail_after(0);
    assert_int_equal(rmq_cmd_ext_set(&c, "k3", "other"), RMQ_ENOMEM);
    assert_int_equal(rmq_cmd_set_remark(&c, "r"), RMQ_ENOMEM);
    assert_int_equal(rmq_cmd_set_body_copy(&c, "b", 1), RMQ_ENOMEM);
    rmq_mem_fail_after(-1);
    assert_string_equal(rmq_cmd_ext_get(&c, "k3"), "v");
    rmq_cmd_clear(&c);
}

static void test_codec_fail_formats(void **state)
{
    (void)state;
    char err[16];
    assert_int_equal(rmq_fail(err, sizeof err, RMQ_EPROTO, "field %s bad", "abcdefghijkl"), RMQ_EPROTO);
    assert_int_equal(strlen(err), sizeof err - 1);
    assert_int_equal(rmq_fail(NULL, 0, RMQ_ENOMEM, "x"), RMQ_ENOMEM);
}

/* Decoders append and merge once (rmq_cmd_ext_dedupe): the result must be
 * what rmq_cmd_ext_set one key at a time gives — first place kept, last value
 * wins — on both the small (pairwise) and the sorted path. */
static void check_dedupe_like_set(size_t nkeys, size_t repeats)
{
    struct rmq_cmd a, b;
    rmq_cmd_init(&a);
    rmq_cmd_init(&b);
    char key[32], val[32];
    for (size_t r = 0; r < repeats; r++)
        for (size_t i = 0; i < nkeys; i++) {
            size_t k = (i * 7 + r) % nkeys; /* each round in another order */
            snprintf(key, sizeof key, "k%zu", k);
            snprintf(val, sizeof val, "v%zu.%zu", k, r);
            assert_int_equal(rmq_cmd_ext_append(&a, key, val), 0);
            assert_int_equal(rmq_cmd_ext_set(&b, key, val), 0);
        }
    assert_int_equal(a.ext_len, nkeys * repeats);
    assert_int_equal(rmq_cmd_ext_dedupe(&a), 0);
    assert_int_equal(a.ext_len, b.ext_len);
    for (size_t i = 0; i < a.ext_len; i++) {
        assert_string_equal(a.ext[i].key, b.ext[i].key);
        assert_string_equal(a.ext[i].val, b.ext[i].val);
    }
    rmq_cmd_clear(&a);
    rmq_cmd_clear(&b);
}

static void test_ext_append_dedupe(void **state)
{
    (void)state;
    check_dedupe_like_set(1, 3);
    check_dedupe_like_set(5, 2);   /* pairwise path */
    check_dedupe_like_set(40, 3);  /* sorted path */
    check_dedupe_like_set(300, 1); /* sorted path, nothing to merge */
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    assert_int_equal(rmq_cmd_ext_dedupe(&c), 0);
    assert_int_equal(rmq_cmd_ext_append(&c, NULL, "x"), RMQ_EINVAL);
    rmq_cmd_clear(&c);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_init_defaults),
                cmocka_unit_test(test_ext_set_get_replace_grow), cmocka_unit_test(test_ext_i64),
                cmocka_unit_test(test_ext_bool), cmocka_unit_test(test_remark_and_body),
                cmocka_unit_test(test_init_response_copies_request), cmocka_unit_test(test_init_request),
                cmocka_unit_test(test_language_table), cmocka_unit_test(test_ext_set_allocation_failures),
                cmocka_unit_test(test_codec_fail_formats), cmocka_unit_test(test_ext_append_dedupe))
