/* test_frame.c — remoting frames: round trips in both serialize types,
 * every chunking of the input, truncation at every offset, malformed
 * lengths and types, the early frame-limit check, back-to-back frames,
 * encoder rollback, and a fail-the-Nth-allocation loop over the decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "remoting_frame.h"
#include "test_support.h"

#include <stdlib.h>
#include <string.h>

/* A request with every header part in use and a body that contains bytes a
 * text codec would mangle. */
static void make_cmd(struct rmq_cmd *c, uint8_t type)
{
    rmq_cmd_init(c);
    c->code = 11;
    c->language = 9;
    c->version = 317;
    c->opaque = -5;
    c->flag = RMQ_FLAG_ONEWAY;
    c->serialize_type = type;
    assert_int_equal(rmq_cmd_set_remark(c, "r\"e\\m\n"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set(c, "topic", "T1"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set(c, "queueId", "3"), RMQ_OK);
    assert_int_equal(rmq_cmd_ext_set(c, "empty", ""), RMQ_OK);
    static const uint8_t body[] = {0, 1, 2, 0xFF, '{', '"', 0x7F, 0};
    assert_int_equal(rmq_cmd_set_body_copy(c, body, sizeof body), RMQ_OK);
}

static void assert_cmd_equal(const struct rmq_cmd *a, const struct rmq_cmd *b)
{
    assert_int_equal(a->code, b->code);
    assert_int_equal(a->language, b->language);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->opaque, b->opaque);
    assert_int_equal(a->flag, b->flag);
    assert_int_equal(a->serialize_type, b->serialize_type);
    if (a->remark || b->remark)
        assert_string_equal(a->remark, b->remark);
    assert_int_equal(a->ext_len, b->ext_len);
    for (size_t i = 0; i < a->ext_len; i++)
        assert_string_equal(rmq_cmd_ext_get(b, a->ext[i].key), a->ext[i].val);
    assert_int_equal(a->body_len, b->body_len);
    if (a->body_len)
        assert_memory_equal(a->body, b->body, a->body_len);
}

/* Encodes c into a new malloc'd array; *len receives its size. */
static uint8_t *encode_new(const struct rmq_cmd *c, size_t *len)
{
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_frame_encode(c, &b), RMQ_OK);
    *len = buf_live(&b);
    uint8_t *out = malloc(*len);
    memcpy(out, buf_head(&b), *len);
    buf_free(&b);
    return out;
}

static void round_trip(uint8_t type)
{
    struct rmq_cmd c, d;
    make_cmd(&c, type);
    size_t len;
    uint8_t *frame = encode_new(&c, &len);
    uint32_t total = (uint32_t)frame[0] << 24 | (uint32_t)frame[1] << 16 | (uint32_t)frame[2] << 8 | frame[3];
    assert_int_equal(total, len - 4);
    assert_int_equal(frame[4], type);
    size_t hlen = (size_t)frame[5] << 16 | (size_t)frame[6] << 8 | frame[7];
    assert_int_equal(len, 8 + hlen + c.body_len);

    rmq_cmd_init(&d);
    size_t used = 0;
    char err[128] = "";
    assert_int_equal(rmq_frame_decode(frame, len, 0, &d, &used, err, sizeof err), RMQ_OK);
    assert_int_equal(used, len);
    assert_cmd_equal(&c, &d);
    rmq_cmd_clear(&d);
    rmq_cmd_clear(&c);
    free(frame);
}

static void test_round_trip_json(void **state)
{
    (void)state;
    round_trip(RMQ_SERIALIZE_JSON);
}

static void test_round_trip_rocketmq(void **state)
{
    (void)state;
    round_trip(RMQ_SERIALIZE_ROCKETMQ);
}

/* PROTOCOL: docs/protocol.md §1.1 worked example: the JSON GET_ROUTEINFO_BY_TOPIC frame. */
static void test_encode_matches_protocol_example(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    c.code = 105;
    c.opaque = 1;
    c.version = 409;
    assert_int_equal(rmq_cmd_ext_set(&c, "topic", "T"), RMQ_OK);
    size_t len;
    uint8_t *frame = encode_new(&c, &len);
    static const char hdr[] =
        "{\"code\":105,\"extFields\":{\"topic\":\"T\"},\"flag\":0,\"language\":\"JAVA\","
        "\"opaque\":1,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":409}";
    static const uint8_t prefix[] = {0, 0, 0, 0x7f, 0, 0, 0, 0x7b};
    assert_int_equal(len, 8 + 123);
    assert_int_equal(strlen(hdr), 123);
    assert_memory_equal(frame, prefix, 8);
    assert_memory_equal(frame + 8, hdr, 123);
    free(frame);
    rmq_cmd_clear(&c);
}

static void feed_in_chunks(const uint8_t *frame, size_t len, size_t split, const struct rmq_cmd *want)
{
    struct rmq_frame_decoder d;
    rmq_frame_decoder_init(&d, 0, 0);
    struct rmq_cmd got;
    rmq_cmd_init(&got);
    size_t off = 0;
    int rc = RMQ_EAGAIN;
    while (off < len) {
        size_t n = split ? (off == 0 ? split : len - off) : 1;
        if (n > len - off)
            n = len - off;
        assert_int_equal(rmq_frame_decoder_next(&d, &got), RMQ_EAGAIN);
        assert_int_equal(rmq_frame_decoder_feed(&d, frame + off, n), RMQ_OK);
        off += n;
        rc = rmq_frame_decoder_next(&d, &got);
        if (off < len)
            assert_int_equal(rc, RMQ_EAGAIN);
    }
    assert_int_equal(rc, RMQ_OK);
    assert_cmd_equal(want, &got);
    assert_int_equal(buf_live(&d.in), 0);
    assert_int_equal(rmq_frame_decoder_next(&d, &got), RMQ_EAGAIN);
    rmq_cmd_clear(&got);
    rmq_frame_decoder_free(&d);
}

/* Runs check on make_cmd's command of each serialize type and its frame. */
static void for_each_type(void (*check)(const struct rmq_cmd *c, const uint8_t *frame, size_t len))
{
    for (uint8_t type = 0; type <= 1; type++) {
        struct rmq_cmd c;
        make_cmd(&c, type);
        size_t len;
        uint8_t *frame = encode_new(&c, &len);
        check(&c, frame, len);
        free(frame);
        rmq_cmd_clear(&c);
    }
}

static void check_byte_by_byte_and_every_split(const struct rmq_cmd *c, const uint8_t *frame, size_t len)
{
    feed_in_chunks(frame, len, 0, c);
    for (size_t split = 1; split < len; split++)
        feed_in_chunks(frame, len, split, c);
}

static void test_byte_by_byte_and_every_split(void **state)
{
    (void)state;
    for_each_type(check_byte_by_byte_and_every_split);
}

static void check_truncation_at_every_offset(const struct rmq_cmd *c, const uint8_t *frame, size_t len)
{
    for (size_t k = 0; k < len; k++) {
        /* An exact-size copy lets ASan catch any read past the end. */
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, frame, k);
        struct rmq_cmd d;
        rmq_cmd_init(&d);
        size_t used = 99;
        assert_int_equal(rmq_frame_decode(cut, k, 0, &d, &used, NULL, 0), RMQ_EAGAIN);
        assert_int_equal(used, 99);
        assert_null(d.ext);
        free(cut);
    }
}

static void test_truncation_at_every_offset(void **state)
{
    (void)state;
    for_each_type(check_truncation_at_every_offset);
}

static void test_two_frames_in_one_feed(void **state)
{
    (void)state;
    struct rmq_cmd a, b, got;
    make_cmd(&a, RMQ_SERIALIZE_JSON);
    make_cmd(&b, RMQ_SERIALIZE_ROCKETMQ);
    b.opaque = 12345;
    struct buf out;
    buf_init(&out, 0);
    assert_int_equal(rmq_frame_encode(&a, &out), RMQ_OK);
    assert_int_equal(rmq_frame_encode(&b, &out), RMQ_OK);
    assert_int_equal(buf_append(&out, "\0\0", 2), RMQ_OK); /* start of a third */
    struct rmq_frame_decoder d;
    rmq_frame_decoder_init(&d, 0, 0);
    assert_int_equal(rmq_frame_decoder_feed(&d, buf_head(&out), buf_live(&out)), RMQ_OK);
    rmq_cmd_init(&got);
    assert_int_equal(rmq_frame_decoder_next(&d, &got), RMQ_OK);
    assert_cmd_equal(&a, &got);
    rmq_cmd_clear(&got);
    assert_int_equal(rmq_frame_decoder_next(&d, &got), RMQ_OK);
    assert_cmd_equal(&b, &got);
    rmq_cmd_clear(&got);
    assert_int_equal(rmq_frame_decoder_next(&d, &got), RMQ_EAGAIN);
    assert_int_equal(buf_live(&d.in), 2);
    rmq_frame_decoder_free(&d);
    buf_free(&out);
    rmq_cmd_clear(&a);
    rmq_cmd_clear(&b);
}

struct bad_frame {
    const char *name;
    uint8_t bytes[16];
    size_t len;
    int rc;
    const char *reason; /* substring of d->error */
};

static void test_malformed_lengths_and_types(void **state)
{
    (void)state;
    static const struct bad_frame cases[] = {
        {"total 0", {0, 0, 0, 0}, 4, RMQ_EPROTO, "total_length"},
        {"total 3", {0, 0, 0, 3, 0, 0, 0}, 7, RMQ_EPROTO, "total_length"},
        {"total negative", {0xFF, 0xFF, 0xFF, 0xFF}, 4, RMQ_EPROTO, "total_length"},
        {"total INT_MIN", {0x80, 0, 0, 0}, 4, RMQ_EPROTO, "total_length"},
        {"over limit, prefix only", {0x7F, 0xFF, 0xFF, 0xFF}, 4, RMQ_E2BIG, "limit"},
        {"one over 16MiB", {0x01, 0, 0, 0x00}, 4, RMQ_E2BIG, "limit"},
        {"type 2", {0, 0, 0, 4, 2, 0, 0, 0}, 8, RMQ_EPROTO, "serialize type"},
        {"type 0xFF", {0, 0, 0, 8, 0xFF, 0, 0, 0}, 8, RMQ_EPROTO, "serialize type"},
        {"header over total", {0, 0, 0, 6, 0, 0, 0, 3, '{', '}'}, 10, RMQ_EPROTO, "header length"},
        {"header huge", {0, 0, 0, 8, 1, 0xFF, 0xFF, 0xFF}, 8, RMQ_EPROTO, "header length"},
        {"empty json header", {0, 0, 0, 4, 0, 0, 0, 0}, 8, RMQ_EPROTO, "invalid JSON"},
        {"json not object", {0, 0, 0, 5, 0, 0, 0, 1, '7'}, 9, RMQ_EPROTO, "JSON"},
        {"binary header short", {0, 0, 0, 6, 1, 0, 0, 2, 0, 0x69}, 10, RMQ_EPROTO, "binary header"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rmq_frame_decoder d;
        rmq_frame_decoder_init(&d, 0, 0);
        struct rmq_cmd c;
        rmq_cmd_init(&c);
        assert_int_equal(rmq_frame_decoder_feed(&d, cases[i].bytes, cases[i].len), RMQ_OK);
        int rc = rmq_frame_decoder_next(&d, &c);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d, want %d", cases[i].name, rc, cases[i].rc);
        if (!strstr(d.error, cases[i].reason))
            fail_msg("%s: error \"%s\" lacks \"%s\"", cases[i].name, d.error, cases[i].reason);
        assert_null(c.ext);
        assert_null(c.body);
        /* The stream stays failed: asking again gives the same answer. */
        assert_int_equal(rmq_frame_decoder_next(&d, &c), cases[i].rc);
        rmq_frame_decoder_free(&d);
    }
}

static void test_limit_boundary(void **state)
{
    (void)state;
    /* A limit of 100 allows total_length 96 and refuses 97, from the prefix
     * alone, before any header byte or body has arrived. */
    struct rmq_frame_decoder d;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    rmq_frame_decoder_init(&d, 100, 0);
    static const uint8_t ok[] = {0, 0, 0, 96};
    assert_int_equal(rmq_frame_decoder_feed(&d, ok, sizeof ok), RMQ_OK);
    assert_int_equal(rmq_frame_decoder_next(&d, &c), RMQ_EAGAIN);
    rmq_frame_decoder_free(&d);
    rmq_frame_decoder_init(&d, 100, 0);
    static const uint8_t big[] = {0, 0, 0, 97};
    assert_int_equal(rmq_frame_decoder_feed(&d, big, sizeof big), RMQ_OK);
    assert_int_equal(rmq_frame_decoder_next(&d, &c), RMQ_E2BIG);
    assert_non_null(strstr(d.error, "limit"));
    rmq_frame_decoder_free(&d);
    /* The one-shot decoder applies the same rule. */
    char err[80] = "";
    size_t used = 0;
    assert_int_equal(rmq_frame_decode(big, sizeof big, 100, &c, &used, err, sizeof err), RMQ_E2BIG);
    assert_true(err[0] != 0);
}

static void test_header_error_inside_frame(void **state)
{
    (void)state;
    /* A well-framed JSON header whose code is a string. */
    static const char hdr[] = "{\"code\":\"105\"}";
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(buf_append_be32(&b, 4 + (uint32_t)strlen(hdr) + 2), RMQ_OK);
    assert_int_equal(buf_append_be32(&b, (uint32_t)strlen(hdr)), RMQ_OK);
    assert_int_equal(buf_append_str(&b, hdr), RMQ_OK);
    assert_int_equal(buf_append(&b, "xy", 2), RMQ_OK);
    struct rmq_frame_decoder d;
    rmq_frame_decoder_init(&d, 0, 0);
    assert_int_equal(rmq_frame_decoder_feed(&d, buf_head(&b), buf_live(&b)), RMQ_OK);
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    assert_int_equal(rmq_frame_decoder_next(&d, &c), RMQ_EPROTO);
    assert_non_null(strstr(d.error, "code"));
    assert_null(c.body);
    rmq_frame_decoder_free(&d);
    buf_free(&b);
}

static void test_empty_body_and_header_only(void **state)
{
    (void)state;
    struct rmq_cmd c, d;
    rmq_cmd_init(&c);
    c.code = 38;
    size_t len;
    uint8_t *frame = encode_new(&c, &len);
    rmq_cmd_init(&d);
    assert_int_equal(rmq_frame_decode(frame, len, 0, &d, NULL, NULL, 0), RMQ_OK);
    assert_int_equal(d.code, 38);
    assert_null(d.body);
    assert_int_equal(d.body_len, 0);
    assert_int_equal(d.ext_len, 0);
    rmq_cmd_clear(&d);
    free(frame);
}

static void test_encode_rolls_back_on_failure(void **state)
{
    (void)state;
    struct rmq_cmd c;
    make_cmd(&c, RMQ_SERIALIZE_JSON);
    struct buf b;
    buf_init(&b, 40); /* room for "prefix" but not for the frame */
    assert_int_equal(buf_append_str(&b, "prefix"), RMQ_OK);
    assert_int_equal(rmq_frame_encode(&c, &b), RMQ_E2BIG);
    assert_buf_equal(&b, "prefix", 6);
    buf_free(&b);
    /* A binary key longer than int16 cannot be written. */
    c.serialize_type = RMQ_SERIALIZE_ROCKETMQ;
    char *key = malloc(40000);
    memset(key, 'k', 39999);
    key[39999] = 0;
    assert_int_equal(rmq_cmd_ext_set(&c, key, "v"), RMQ_OK);
    buf_init(&b, 0);
    assert_int_equal(rmq_frame_encode(&c, &b), RMQ_EINVAL);
    assert_int_equal(buf_live(&b), 0);
    buf_free(&b);
    free(key);
    rmq_cmd_clear(&c);
}

struct decoder_oom {
    const struct rmq_cmd *c;
    const uint8_t *frame;
    size_t len;
    struct rmq_frame_decoder d;
    struct rmq_cmd got;
};

static void decoder_oom_setup(void *ctx)
{
    struct decoder_oom *x = ctx;
    rmq_cmd_init(&x->got);
    rmq_frame_decoder_init(&x->d, 0, 0);
}

static int decoder_oom_run(void *ctx)
{
    struct decoder_oom *x = ctx;
    int rc = rmq_frame_decoder_feed(&x->d, x->frame, x->len);
    return rc == RMQ_OK ? rmq_frame_decoder_next(&x->d, &x->got) : rc;
}

static void decoder_oom_check(void *ctx, int rc)
{
    struct decoder_oom *x = ctx;
    if (rc == RMQ_OK) {
        assert_cmd_equal(x->c, &x->got);
        rmq_cmd_clear(&x->got);
        rmq_frame_decoder_free(&x->d);
        return;
    }
    assert_null(x->got.ext);
    assert_null(x->got.remark);
    assert_null(x->got.body);
    /* Nothing was consumed, so the same frame decodes once memory is back. */
    if (buf_live(&x->d.in) == x->len) {
        assert_int_equal(rmq_frame_decoder_next(&x->d, &x->got), RMQ_OK);
        assert_cmd_equal(x->c, &x->got);
        rmq_cmd_clear(&x->got);
    }
    rmq_frame_decoder_free(&x->d);
}

/* Fails allocation N = 0, 1, 2 ... inside feed + next; each run must fail
 * with RMQ_ENOMEM and leave nothing behind, until one run succeeds. */
static void check_decoder_allocation_failures(const struct rmq_cmd *c, const uint8_t *frame, size_t len)
{
    struct decoder_oom x = {.c = c, .frame = frame, .len = len};
    const struct test_oom t = {
        .setup = decoder_oom_setup, .run = decoder_oom_run, .check = decoder_oom_check, .max = 1000};
    assert_true(test_oom_loop(&t, &x) >= 5); /* buffer, header parse, ext copies, body */
}

static void test_decoder_allocation_failures(void **state)
{
    (void)state;
    for_each_type(check_decoder_allocation_failures);
}

TEST_MAIN_GROUP(
    test_install_jansson, NULL, cmocka_unit_test(test_round_trip_json),
    cmocka_unit_test(test_round_trip_rocketmq), cmocka_unit_test(test_encode_matches_protocol_example),
    cmocka_unit_test(test_byte_by_byte_and_every_split), cmocka_unit_test(test_truncation_at_every_offset),
    cmocka_unit_test(test_two_frames_in_one_feed), cmocka_unit_test(test_malformed_lengths_and_types),
    cmocka_unit_test(test_limit_boundary), cmocka_unit_test(test_header_error_inside_frame),
    cmocka_unit_test(test_empty_body_and_header_only), cmocka_unit_test(test_encode_rolls_back_on_failure),
    cmocka_unit_test(test_decoder_allocation_failures))
