/* test_header_rmq.c — the ROCKETMQ binary header codec: the documented
 * example bytes, exact encoding, truncation at every offset, every bad
 * length, duplicate keys, and a fail-the-Nth-allocation loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "proto_checks.h"
#include "remoting_frame.h"
#include "remoting_header.h"
#include "test_support.h"

#include <stdlib.h>
#include <string.h>

/* PROTOCOL: docs/protocol.md §1.3 example (GET_ROUTEINFO_BY_TOPIC topic "T", opaque 1). */
static const char protocol_example[] = "00000025"
                                       "01000021"
                                       "0069"
                                       "00"
                                       "0199"
                                       "00000001"
                                       "00000000"
                                       "00000000"
                                       "0000000c"
                                       "0005"
                                       "746f706963"
                                       "00000001"
                                       "54";

/* clients/java.md: 4.9.8 with -Drocketmq.serialize.type=ROCKETMQ, topic
 * "%RETRY%G2", opaque 0 (also the first frame of
 * captures/java-rocketmq-serialize.jsonl). */
static const char java_example[] = "0000002d01000029"
                                   "006900019900000000000000000000000000000014"
                                   "0005746f706963"
                                   "00000009255245545259254732";

static uint8_t *hex(const char *h, size_t *len)
{
    uint8_t *p = test_hex_decode(h, len);
    assert_non_null(p);
    return p;
}

static void check_route_request(const char *frame_hex, int32_t opaque, const char *topic)
{
    size_t len;
    uint8_t *frame = hex(frame_hex, &len);
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    char err[128] = "";
    size_t used = 0;
    assert_int_equal(rmq_frame_decode(frame, len, 0, &c, &used, err, sizeof err), RMQ_OK);
    assert_int_equal(used, len);
    assert_int_equal(c.serialize_type, RMQ_SERIALIZE_ROCKETMQ);
    assert_int_equal(c.code, 105);
    assert_int_equal(c.language, RMQ_LANG_JAVA);
    assert_int_equal(c.version, 409);
    assert_int_equal(c.opaque, opaque);
    assert_int_equal(c.flag, 0);
    assert_null(c.remark);
    assert_int_equal(c.ext_len, 1);
    assert_string_equal(rmq_cmd_ext_get(&c, "topic"), topic);
    assert_null(c.body);
    /* Encoding the decoded command gives back the same bytes. */
    assert_frame_bytes(&c, frame, len);
    rmq_cmd_clear(&c);
    free(frame);
}

static void test_protocol_example(void **state)
{
    (void)state;
    check_route_request(protocol_example, 1, "T");
}

static void test_java_example(void **state)
{
    (void)state;
    check_route_request(java_example, 0, "%RETRY%G2");
}

static void test_truncation_at_every_offset(void **state)
{
    (void)state;
    /* Header with a remark and two entries, so every length field is cut. */
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    c.code = 11;
    c.flag = 2;
    assert_int_equal(rmq_cmd_set_remark(&c, "remark"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set(&c, "topic", "T1"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set(&c, "queueId", "7"), RMQ_OK);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_header_rmq_encode(&c, &b), RMQ_OK);
    size_t len = buf_live(&b);
    assert_int_equal(len, 21 + 6 + (2 + 5 + 4 + 2) + (2 + 7 + 4 + 1));
    for (size_t k = 0; k < len; k++) {
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, buf_head(&b), k);
        struct rmq_cmd d;
        rmq_cmd_init(&d);
        char err[128] = "";
        assert_int_equal(rmq_header_rmq_decode(cut, k, &d, err, sizeof err), RMQ_EPROTO);
        assert_true(err[0] != 0);
        assert_null(d.remark);
        assert_null(d.ext);
        free(cut);
    }
    struct rmq_cmd d;
    rmq_cmd_init(&d);
    assert_int_equal(rmq_header_rmq_decode(buf_head(&b), len, &d, NULL, 0), RMQ_OK);
    assert_string_equal(d.remark, "remark");
    assert_string_equal(rmq_cmd_ext_get(&d, "queueId"), "7");
    assert_int_equal(d.flag, 2);
    rmq_cmd_clear(&d);
    buf_free(&b);
    rmq_cmd_clear(&c);
}

/* Each case is the header part (no frame words) in hex. */
static void test_bad_lengths(void **state)
{
    (void)state;
    static const struct {
        const char *name, *hex, *reason;
    } cases[] = {
        {"negative remark", "006900019900000001000000008000000000000000", "negative remark"},
        {"remark past end", "006900019900000001000000000000000561626364", "remark length 5"},
        {"missing ext_len", "006900019900000001000000000000000161", "extFields length"},
        {"negative ext_len", "0069000199000000010000000000000000ffffffff", "negative extFields"},
        {"ext_len past end", "006900019900000001000000000000000000000008000174", "extFields length 8"},
        {"negative key_len", "006900019900000001000000000000000000000006ffff00000000",
         "negative extFields key"},
        {"key_len past map", "006900019900000001000000000000000000000003000574", "extFields key length 5"},
        {"entry cut in map", "0069000199000000010000000000000000000000030001740000000154",
         "extFields value length"},
        {"negative val_len", "00690001990000000100000000000000000000000700017480000000",
         "negative extFields value"},
        {"val_len past map", "0069000199000000010000000000000000000000080001740000000254",
         "extFields value length"},
        {"NUL in key", "0069000199000000010000000000000000000000080002740000000000", "NUL"},
        {"NUL in remark",
         "00690001990000000100000000000000020041"
         "00000000",
         "NUL"},
        {"fixed part short", "006900019900000001000000", "21-byte fixed part"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        uint8_t *p = hex(cases[i].hex, &len);
        struct rmq_cmd c;
        rmq_cmd_init(&c);
        char err[160] = "";
        int rc = rmq_header_rmq_decode(p, len, &c, err, sizeof err);
        if (rc != RMQ_EPROTO)
            fail_msg("%s: rc %d, want EPROTO", cases[i].name, rc);
        if (!strstr(err, cases[i].reason))
            fail_msg("%s: err \"%s\" lacks \"%s\"", cases[i].name, err, cases[i].reason);
        assert_null(c.ext);
        assert_null(c.remark);
        free(p);
    }
}

static void test_duplicates_empty_and_signed_fields(void **state)
{
    (void)state;
    /* code 0xFFFF (-1), language 9, version 0x8000, remark_len 0 (null),
     * ext: k=a, k=b (last wins), e="" (empty value kept). Then 2 trailing
     * bytes after the map, which a Java reader ignores. */
    static const char h[] = "ffff09800000000007fffffffe00000000"
                            "00000017" /* map: 8 + 8 + 7 bytes */
                            "00016b0000000161"
                            "00016b0000000162"
                            "00016500000000"
                            "abcd";
    size_t len;
    uint8_t *p = hex(h, &len);
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    char err[128] = "";
    assert_int_equal(rmq_header_rmq_decode(p, len, &c, err, sizeof err), RMQ_OK);
    assert_int_equal(c.code, -1);
    assert_int_equal(c.language, 9);
    assert_int_equal(c.version, -32768);
    assert_int_equal(c.opaque, 7);
    assert_int_equal(c.flag, -2);
    assert_null(c.remark);
    assert_int_equal(c.ext_len, 2);
    assert_string_equal(rmq_cmd_ext_get(&c, "k"), "b");
    assert_string_equal(rmq_cmd_ext_get(&c, "e"), "");
    rmq_cmd_clear(&c);
    free(p);
}

static void test_encode_exact_bytes(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    c.code = 0;
    c.flag = 1;
    c.opaque = 0x01020304;
    c.version = 409;
    assert_int_equal(rmq_cmd_set_remark(&c, "ok"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set(&c, "offset", "0"), RMQ_OK);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_header_rmq_encode(&c, &b), RMQ_OK);
    size_t len;
    uint8_t *want = hex("0000000199010203040000000100000002"
                        "6f6b"
                        "0000000d"
                        "00066f6666736574"
                        "0000000130",
                        &len);
    assert_buf_equal(&b, want, len);
    free(want);
    buf_free(&b);
    rmq_cmd_clear(&c);
}

struct decode_oom {
    const uint8_t *frame;
    size_t len;
    struct rmq_cmd c;
};

static int decode_oom_run(void *ctx)
{
    struct decode_oom *x = ctx;
    rmq_cmd_init(&x->c);
    return rmq_header_rmq_decode(x->frame + 8, x->len - 8, &x->c, NULL, 0);
}

static void decode_oom_check(void *ctx, int rc)
{
    struct decode_oom *x = ctx;
    if (rc == RMQ_OK) {
        assert_string_equal(rmq_cmd_ext_get(&x->c, "topic"), "%RETRY%G2");
        rmq_cmd_clear(&x->c);
        return;
    }
    assert_null(x->c.ext);
}

static void test_decoder_allocation_failures(void **state)
{
    (void)state;
    size_t len;
    uint8_t *frame = hex(java_example, &len);
    struct decode_oom x = {.frame = frame, .len = len};
    const struct test_oom t = {.run = decode_oom_run, .check = decode_oom_check, .max = 1000};
    assert_int_equal(test_oom_loop(&t, &x), 5); /* key, value, their map copies, array */
    free(frame);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_protocol_example),
                cmocka_unit_test(test_java_example), cmocka_unit_test(test_truncation_at_every_offset),
                cmocka_unit_test(test_bad_lengths), cmocka_unit_test(test_duplicates_empty_and_signed_fields),
                cmocka_unit_test(test_encode_exact_bytes), cmocka_unit_test(test_decoder_allocation_failures))
