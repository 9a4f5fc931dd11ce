/* test_header_json.c — the JSON header codec: Java, ali-ons, Go and C++
 * shapes, extFields value conversion, the malformed-field table, exact
 * re-encoding of real captured headers, escaping, and a fail-the-Nth-
 * allocation loop over the decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "remoting_header.h"
#include "test_support.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int decode_str(const char *text, struct rmq_cmd *c, char *err, size_t errlen)
{
    rmq_cmd_init(c);
    return rmq_header_json_decode((const uint8_t *)text, strlen(text), c, err, errlen);
}

/* Encodes c and compares the bytes with want exactly. */
static void assert_encodes_to(const struct rmq_cmd *c, const char *want)
{
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_header_json_encode(c, &b), RMQ_OK);
    assert_int_equal(buf_terminate(&b), RMQ_OK);
    assert_string_equal((const char *)buf_head(&b), want);
    buf_free(&b);
}

/* Real 4.9.8 headers from tests/data/captures (java-json.jsonl): a route
 * lookup, a pull with eleven extFields in HashMap order, and a oneway
 * offset update. Re-encoding must give back the same bytes. */
static const char *const java_headers[] = {
    "{\"code\":105,\"extFields\":{\"topic\":\"%RETRY%G1\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":0,"
    "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":409}",
    "{\"code\":34,\"flag\":0,\"language\":\"JAVA\",\"opaque\":7,\"serializeTypeCurrentRPC\":\"JSON\","
    "\"version\":409}",
    "{\"code\":11,\"extFields\":{\"queueId\":\"0\",\"maxMsgNums\":\"32\",\"sysFlag\":\"2\","
    "\"suspendTimeoutMillis\":\"15000\",\"commitOffset\":\"0\",\"bname\":\"broker-a\",\"topic\":\"%RETRY%"
    "G1\",\"queueOffset\":\"0\",\"expressionType\":\"TAG\",\"subVersion\":\"1796218187144\","
    "\"consumerGroup\":\"G1\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":21,\"serializeTypeCurrentRPC\":"
    "\"JSON\",\"version\":409}",
    "{\"code\":15,\"extFields\":{\"queueId\":\"0\",\"bname\":\"broker-b\",\"commitOffset\":\"2\",\"topic\":"
    "\"T1\",\"consumerGroup\":\"G1\"},\"flag\":2,\"language\":\"JAVA\",\"opaque\":89,"
    "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":409}",
};

static void test_java_headers_decode_and_reencode_exactly(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof java_headers / sizeof java_headers[0]; i++) {
        struct rmq_cmd c;
        char err[128] = "";
        assert_int_equal(decode_str(java_headers[i], &c, err, sizeof err), RMQ_OK);
        assert_int_equal(c.language, RMQ_LANG_JAVA);
        assert_int_equal(c.version, 409);
        assert_int_equal(c.serialize_type, RMQ_SERIALIZE_JSON);
        assert_encodes_to(&c, java_headers[i]);
        rmq_cmd_clear(&c);
    }
    struct rmq_cmd c;
    assert_int_equal(decode_str(java_headers[2], &c, NULL, 0), RMQ_OK);
    assert_int_equal(c.code, 11);
    assert_int_equal(c.opaque, 21);
    assert_int_equal(c.ext_len, 11);
    assert_string_equal(rmq_cmd_ext_get(&c, "subVersion"), "1796218187144");
    assert_string_equal(rmq_cmd_ext_get(&c, "bname"), "broker-a");
    rmq_cmd_clear(&c);
    assert_int_equal(decode_str(java_headers[3], &c, NULL, 0), RMQ_OK);
    assert_true(rmq_cmd_is_oneway(&c));
    rmq_cmd_clear(&c);
}

/* PROTOCOL (docs/protocol.md §1.2): ali-ons keeps JS types in extFields, orders keys its own way
 * and sends no serializeTypeCurrentRPC. */
static void test_ali_ons_typed_ext_fields(void **state)
{
    (void)state;
    static const char h[] = "{\"code\":11,\"language\":\"JAVA\",\"opaque\":1,\"flag\":0,\"version\":121,"
                            "\"extFields\":{\"consumerGroup\":\"G\",\"queueId\":3,\"queueOffset\":0,"
                            "\"commitOffset\":-1,\"subVersion\":1796216893025,\"unitMode\":false,"
                            "\"isOk\":true,\"gone\":null,\"ratio\":1.5,\"tiny\":0.1,\"big\":1e21}}";
    struct rmq_cmd c;
    char err[128] = "";
    assert_int_equal(decode_str(h, &c, err, sizeof err), RMQ_OK);
    assert_int_equal(c.code, 11);
    assert_int_equal(c.version, 121);
    assert_string_equal(rmq_cmd_ext_get(&c, "consumerGroup"), "G");
    assert_string_equal(rmq_cmd_ext_get(&c, "queueId"), "3");
    assert_string_equal(rmq_cmd_ext_get(&c, "queueOffset"), "0");
    assert_string_equal(rmq_cmd_ext_get(&c, "commitOffset"), "-1");
    assert_string_equal(rmq_cmd_ext_get(&c, "subVersion"), "1796216893025");
    assert_string_equal(rmq_cmd_ext_get(&c, "unitMode"), "false");
    assert_string_equal(rmq_cmd_ext_get(&c, "isOk"), "true");
    assert_null(rmq_cmd_ext_get(&c, "gone"));
    assert_string_equal(rmq_cmd_ext_get(&c, "ratio"), "1.5");
    assert_string_equal(rmq_cmd_ext_get(&c, "tiny"), "0.1");
    assert_string_equal(rmq_cmd_ext_get(&c, "big"), "1e+21");
    assert_int_equal(c.ext_len, 10);
    int64_t v;
    assert_int_equal(rmq_cmd_ext_get_i64(&c, "commitOffset", &v), RMQ_OK);
    assert_true(v == -1);
    /* Re-encoded, every value is a JSON string. */
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_header_json_encode(&c, &b), RMQ_OK);
    assert_int_equal(buf_terminate(&b), RMQ_OK);
    assert_non_null(strstr((const char *)buf_head(&b), "\"queueId\":\"3\""));
    assert_non_null(strstr((const char *)buf_head(&b), "\"unitMode\":\"false\""));
    assert_null(strstr((const char *)buf_head(&b), "gone"));
    buf_free(&b);
    rmq_cmd_clear(&c);
}

static void test_lenient_shapes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int32_t code, language;
        size_t ext_len;
        const char *remark;
    } cases[] = {
        /* C++: jsoncpp FastWriter appends "\n", remark "" */
        {"{\"code\":34,\"extFields\":{\"AccessKey\":\"\",\"OnsChannel\":\"\",\"Signature\":\"\"},\"flag\":0,"
         "\"language\":\"CPP\",\"opaque\":3,\"remark\":\"\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":"
         "333}\n",
         34, 1, 3, NULL},
        /* Go: struct order, extFields always present */
        {"{\"code\":38,\"language\":\"GO\",\"version\":317,\"opaque\":4,\"flag\":0,\"remark\":\"\","
         "\"extFields\":"
         "{\"consumerGroup\":\"G\"}}",
         38, 9, 1, NULL},
        {" \t{\"code\":1}\r\n ", 1, 0, 0, NULL},
        {"{\"code\":2,\"extFields\":null}", 2, 0, 0, NULL},
        {"{\"code\":3,\"extFields\":{}}", 3, 0, 0, NULL},
        {"{\"code\":4,\"unknown\":[1,{\"x\":2}],\"language\":\"NODE_JS\"}", 4, 13, 0, NULL},
        {"{\"code\":5,\"language\":\"KLINGON\",\"remark\":\"why\"}", 5, RMQ_LANG_OTHER, 0, "why"},
        {"{\"code\":6,\"language\":2,\"flag\":null,\"opaque\":null}", 6, 2, 0, NULL},
        {"{}", 0, 0, 0, NULL},
        {"{\"code\":-1,\"opaque\":2147483647,\"flag\":-2147483648}", -1, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rmq_cmd c;
        char err[128] = "";
        int rc = decode_str(cases[i].text, &c, err, sizeof err);
        if (rc != RMQ_OK)
            fail_msg("case %zu: rc %d (%s)", i, rc, err);
        assert_int_equal(c.code, cases[i].code);
        assert_int_equal(c.language, cases[i].language);
        assert_int_equal(c.ext_len, cases[i].ext_len);
        if (cases[i].remark)
            assert_string_equal(c.remark, cases[i].remark);
        else
            assert_null(c.remark);
        rmq_cmd_clear(&c);
    }
    struct rmq_cmd c;
    assert_int_equal(decode_str("{\"code\":-1,\"opaque\":2147483647,\"flag\":-2147483648}", &c, NULL, 0),
                     RMQ_OK);
    assert_int_equal(c.opaque, INT32_MAX);
    assert_int_equal(c.flag, INT32_MIN);
    rmq_cmd_clear(&c);
}

static void test_malformed_table(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *reason; /* substring of err */
    } cases[] = {
        {"{\"code\":\"105\"}", "code"},
        {"{\"code\":1.5}", "code"},
        {"{\"code\":true}", "code"},
        {"{\"code\":[105]}", "code"},
        {"{\"code\":2147483648}", "code"},
        {"{\"opaque\":\"1\"}", "opaque"},
        {"{\"opaque\":-2147483649}", "opaque"},
        {"{\"flag\":{}}", "flag"},
        {"{\"flag\":false}", "flag"},
        {"{\"version\":\"409\"}", "version"},
        {"{\"version\":409.0}", "version"},
        {"{\"language\":true}", "language"},
        {"{\"language\":[\"JAVA\"]}", "language"},
        {"{\"remark\":5}", "remark"},
        {"{\"extFields\":[]}", "extFields"},
        {"{\"extFields\":\"topic=T\"}", "extFields"},
        {"{\"extFields\":7}", "extFields"},
        {"{\"extFields\":{\"a\":\"1\",\"nested\":{\"x\":\"y\"}}}", "extFields.nested"},
        {"{\"extFields\":{\"arr\":[1,2]}}", "extFields.arr"},
        {"", "invalid JSON"},
        {"{", "invalid JSON"},
        {"{\"code\":105,}", "invalid JSON"},
        {"{\"code\":105} x", "invalid JSON"},
        {"{\"code\":105}{}", "invalid JSON"},
        {"{'code':105}", "invalid JSON"},
        {"{\"code\":99999999999999999999999}", "invalid JSON"},
        {"{\"extFields\":{\"a\":\"\\u0000\"}}", "invalid JSON"},
        {"[]", "expected a JSON object"},
        {"105", "invalid JSON"},
        {"\"str\"", "invalid JSON"},
        {"\xff\xfe", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rmq_cmd c;
        char err[160] = "";
        int rc = decode_str(cases[i].text, &c, err, sizeof err);
        if (rc != RMQ_EPROTO)
            fail_msg("case %zu (%s): rc %d, want EPROTO", i, cases[i].text, rc);
        if (!strstr(err, cases[i].reason))
            fail_msg("case %zu: err \"%s\" lacks \"%s\"", i, err, cases[i].reason);
        /* A failed decode leaves nothing owned in the command. */
        assert_null(c.ext);
        assert_null(c.remark);
        assert_int_equal(c.ext_len, 0);
    }
    /* A NUL after the object is not trailing whitespace. */
    struct rmq_cmd c;
    char err[160] = "";
    rmq_cmd_init(&c);
    static const uint8_t nul_inside[] = {'{', '}', 0};
    assert_int_equal(rmq_header_json_decode(nul_inside, sizeof nul_inside, &c, err, sizeof err), RMQ_EPROTO);
}

static void test_encode_remark_escaping_and_type(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    c.code = 17;
    c.flag = RMQ_FLAG_RESPONSE;
    c.opaque = 3;
    c.version = 409;
    c.serialize_type = RMQ_SERIALIZE_ROCKETMQ;
    assert_int_equal(rmq_cmd_set_remark(&c, "a\"b\\c\n\x01\x1f/\xc3\xa9"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set(&c, "k\tey", "v\"al"), RMQ_OK);
    assert_encodes_to(
        &c, "{\"code\":17,\"extFields\":{\"k\\u0009ey\":\"v\\\"al\"},\"flag\":1,\"language\":\"JAVA\","
            "\"opaque\":3,\"remark\":\"a\\\"b\\\\c\\u000a\\u0001\\u001f/\xc3\xa9\","
            "\"serializeTypeCurrentRPC\":\"ROCKETMQ\",\"version\":409}");
    /* The escaped text decodes back to the same strings. */
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_header_json_encode(&c, &b), RMQ_OK);
    struct rmq_cmd d;
    rmq_cmd_init(&d);
    assert_int_equal(rmq_header_json_decode(buf_head(&b), buf_live(&b), &d, NULL, 0), RMQ_OK);
    assert_string_equal(d.remark, c.remark);
    assert_string_equal(rmq_cmd_ext_get(&d, "k\tey"), "v\"al");
    assert_int_equal(d.flag, RMQ_FLAG_RESPONSE);
    buf_free(&b);
    rmq_cmd_clear(&d);

    /* No remark, language from the code. */
    assert_int_equal(rmq_cmd_set_remark(&c, NULL), RMQ_OK);
    rmq_cmd_clear(&c);
    rmq_cmd_init(&c);
    c.language = 9;
    c.code = 0;
    assert_encodes_to(&c,
                      "{\"code\":0,\"flag\":0,\"language\":\"GO\",\"opaque\":0,\"serializeTypeCurrentRPC\":"
                      "\"JSON\",\"version\":0}");
    rmq_cmd_clear(&c);
}

static void test_encode_rolls_back_on_cap(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    assert_int_equal(rmq_cmd_ext_set(&c, "topic", "a-long-topic-name-that-does-not-fit"), RMQ_OK);
    struct buf b;
    buf_init(&b, 64);
    assert_int_equal(buf_append_str(&b, "keep"), RMQ_OK);
    assert_int_equal(rmq_header_json_encode(&c, &b), RMQ_E2BIG);
    assert_buf_equal(&b, "keep", 4);
    buf_free(&b);
    rmq_cmd_clear(&c);
}

/* The reference: the header as formatted text, the way the encoder produced
 * it before it wrote digits by hand. The encoder must match it byte for byte. */
static void ref_append_json_str(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    n += (size_t)snprintf(out + n, cap - n, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20)
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        else if (c == '"' || c == '\\')
            n += (size_t)snprintf(out + n, cap - n, "\\%c", c);
        else
            n += (size_t)snprintf(out + n, cap - n, "%c", c);
    }
    snprintf(out + n, cap - n, "\"");
}

static void ref_encode(const struct rmq_cmd *c, char *out, size_t cap)
{
    snprintf(out, cap, "{\"code\":%" PRId32 ",", c->code);
    if (c->ext_len) {
        strcat(out, "\"extFields\":{");
        for (size_t i = 0; i < c->ext_len; i++) {
            if (i)
                strcat(out, ",");
            ref_append_json_str(out, cap, c->ext[i].key);
            strcat(out, ":");
            ref_append_json_str(out, cap, c->ext[i].val);
        }
        strcat(out, "},");
    }
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "\"flag\":%" PRId32 ",\"language\":\"%s\",\"opaque\":%" PRId32 ",", c->flag,
             rmq_language_name(c->language), c->opaque);
    if (c->remark) {
        strcat(out, "\"remark\":");
        ref_append_json_str(out, cap, c->remark);
        strcat(out, ",");
    }
    n = strlen(out);
    snprintf(out + n, cap - n, "\"serializeTypeCurrentRPC\":\"%s\",\"version\":%" PRId32 "}",
             c->serialize_type == RMQ_SERIALIZE_ROCKETMQ ? "ROCKETMQ" : "JSON", c->version);
}

/* Encodes c after a prefix already in the buffer and compares with the reference. */
static void assert_matches_reference(const struct rmq_cmd *c)
{
    static char want[8192];
    ref_encode(c, want, sizeof want);
    assert_true(strlen(want) < sizeof want - 1);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_append_str(&b, "pre"), RMQ_OK);
    assert_int_equal(rmq_header_json_encode(c, &b), RMQ_OK);
    assert_int_equal(buf_live(&b), 3 + strlen(want));
    assert_memory_equal(buf_head(&b), "pre", 3);
    assert_memory_equal(buf_head(&b) + 3, want, strlen(want));
    buf_free(&b);
}

static void test_encode_matches_reference_table(void **state)
{
    (void)state;
    static const int32_t ints[] = {0,   1,   -1,      9,          10,        -10,      99,
                                   100, 409, 1000000, -123456789, INT32_MAX, INT32_MIN};
    static const char *const remarks[] = {NULL,
                                          "",
                                          "ok",
                                          "a\"b",
                                          "back\\slash",
                                          "\n\r\t\x01\x1f\x7f",
                                          "\xc3\xa9t\xc3\xa9",
                                          "not stored: the store could not commit"};
    static const int32_t langs[] = {0, 1, 9, 12, -1, 200};
    size_t k = 0;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        for (size_t j = 0; j < sizeof remarks / sizeof remarks[0]; j++, k++) {
            struct rmq_cmd c;
            rmq_cmd_init(&c);
            c.code = ints[i];
            c.flag = ints[(i + 3) % (sizeof ints / sizeof ints[0])];
            c.opaque = ints[(i + 7) % (sizeof ints / sizeof ints[0])];
            c.version = ints[(i + j) % (sizeof ints / sizeof ints[0])];
            c.language = langs[k % (sizeof langs / sizeof langs[0])];
            c.serialize_type = (k & 1) ? RMQ_SERIALIZE_ROCKETMQ : RMQ_SERIALIZE_JSON;
            if (remarks[j])
                assert_int_equal(rmq_cmd_set_remark(&c, remarks[j]), RMQ_OK);
            if (k % 3 == 1)
                assert_int_equal(rmq_cmd_ext_set(&c, "topic", "T1"), RMQ_OK);
            if (k % 3 == 2) {
                assert_int_equal(rmq_cmd_ext_set(&c, "k\"\\\x02", "v\n\x1f"), RMQ_OK);
                assert_int_equal(rmq_cmd_ext_set(&c, "", ""), RMQ_OK);
                assert_int_equal(rmq_cmd_ext_set(&c, "consumerGroup", "G\xe4\xb8\xad"), RMQ_OK);
            }
            assert_matches_reference(&c);
            rmq_cmd_clear(&c);
        }
    }
}

/* Random headers: any int32s, language codes in and out of range, remarks
 * and extFields of random bytes 1..255 (every escape class). */
static void test_encode_matches_reference_random(void **state)
{
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t r[8];
        for (int i = 0; i < 8; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r[i] = (uint32_t)(x >> 16);
        }
        struct rmq_cmd c;
        rmq_cmd_init(&c);
        c.code = (int32_t)r[0];
        c.flag = (int32_t)(r[1] >> (r[1] & 31));
        c.opaque = (int32_t)r[2];
        c.version = (int32_t)(r[3] % 2000) - 500;
        c.language = (int32_t)(r[4] % 20) - 2;
        c.serialize_type = (r[4] >> 8) & 1 ? RMQ_SERIALIZE_ROCKETMQ : RMQ_SERIALIZE_JSON;
        char s[3][24];
        for (int t = 0; t < 3; t++) {
            size_t len = (r[5 + t] >> 4) % sizeof s[t];
            for (size_t i = 0; i < len; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s[t][i] = (char)(1 + (x >> 32) % 255);
            }
            s[t][len] = 0;
        }
        if (r[5] & 1)
            assert_int_equal(rmq_cmd_set_remark(&c, s[0]), RMQ_OK);
        if (r[6] & 1)
            assert_int_equal(rmq_cmd_ext_set(&c, s[1], s[2]), RMQ_OK);
        if (r[7] & 1)
            assert_int_equal(rmq_cmd_ext_set(&c, "bname", s[0]), RMQ_OK);
        assert_matches_reference(&c);
        rmq_cmd_clear(&c);
    }
}

static void test_encode_cap_boundary(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    c.code = INT32_MIN;
    assert_int_equal(rmq_cmd_set_remark(&c, "r\x01"), RMQ_OK);
    char want[256];
    ref_encode(&c, want, sizeof want);
    size_t n = strlen(want);
    /* Exactly enough room succeeds; one byte less fails and changes nothing. */
    struct buf b;
    buf_init(&b, n + 2);
    assert_int_equal(buf_append_str(&b, "ab"), RMQ_OK);
    assert_int_equal(rmq_header_json_encode(&c, &b), RMQ_OK);
    assert_int_equal(buf_live(&b), n + 2);
    assert_memory_equal(buf_head(&b) + 2, want, n);
    buf_free(&b);
    buf_init(&b, n + 1);
    assert_int_equal(buf_append_str(&b, "ab"), RMQ_OK);
    assert_int_equal(rmq_header_json_encode(&c, &b), RMQ_E2BIG);
    assert_buf_equal(&b, "ab", 2);
    buf_free(&b);
    rmq_cmd_clear(&c);
}

struct decode_oom {
    const char *h;
    struct rmq_cmd c;
    char err[128];
};

static int decode_oom_run(void *ctx)
{
    struct decode_oom *x = ctx;
    rmq_cmd_init(&x->c);
    x->err[0] = 0;
    return rmq_header_json_decode((const uint8_t *)x->h, strlen(x->h), &x->c, x->err, sizeof x->err);
}

static void decode_oom_check(void *ctx, int rc)
{
    struct decode_oom *x = ctx;
    if (rc == RMQ_OK) {
        assert_int_equal(x->c.ext_len, 11);
        assert_encodes_to(&x->c, x->h);
        rmq_cmd_clear(&x->c);
        return;
    }
    if (rc != RMQ_ENOMEM)
        fail_msg("rc %d (%s)", rc, x->err);
    assert_null(x->c.ext);
}

static void test_decoder_allocation_failures(void **state)
{
    (void)state;
    struct decode_oom x = {.h = java_headers[2]};
    const struct test_oom t = {.run = decode_oom_run, .check = decode_oom_check, .max = 1000};
    assert_true(test_oom_loop(&t, &x) > 11);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_java_headers_decode_and_reencode_exactly),
                cmocka_unit_test(test_ali_ons_typed_ext_fields), cmocka_unit_test(test_lenient_shapes),
                cmocka_unit_test(test_malformed_table),
                cmocka_unit_test(test_encode_remark_escaping_and_type),
                cmocka_unit_test(test_encode_rolls_back_on_cap),
                cmocka_unit_test(test_encode_matches_reference_table),
                cmocka_unit_test(test_encode_matches_reference_random),
                cmocka_unit_test(test_encode_cap_boundary),
                cmocka_unit_test(test_decoder_allocation_failures))
