/* test_md5.c — MD5 against the RFC 1321 appendix A.5 test suite, streamed
 * in every split, plus the values docs/protocol.md §11.8 quotes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "md5.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *in, *hex;
} rfc1321[] = {
    {"", "d41d8cd98f00b204e9800998ecf8427e"},
    {"a", "0cc175b9c0f1b6a831c399e269772661"},
    {"abc", "900150983cd24fb0d6963f7d28e17f72"},
    {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
    {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
    {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
     "57edf4a22be3c955ac49da2e2107b67a"},
};

static void to_hex(const uint8_t d[MD5_DIGEST_LEN], char out[33])
{
    for (int i = 0; i < MD5_DIGEST_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_rfc1321_one_shot(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rfc1321 / sizeof rfc1321[0]; i++) {
        uint8_t d[MD5_DIGEST_LEN];
        char hex[33];
        md5_digest(rfc1321[i].in, strlen(rfc1321[i].in), d);
        to_hex(d, hex);
        assert_string_equal(hex, rfc1321[i].hex);
    }
}

/* The block buffering must not depend on how the input is cut. */
static void test_rfc1321_every_split(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rfc1321 / sizeof rfc1321[0]; i++) {
        size_t n = strlen(rfc1321[i].in);
        for (size_t cut = 0; cut <= n; cut++) {
            struct md5_ctx ctx;
            uint8_t d[MD5_DIGEST_LEN];
            char hex[33];
            md5_init(&ctx);
            md5_update(&ctx, rfc1321[i].in, cut);
            md5_update(&ctx, NULL, 0);
            md5_update(&ctx, rfc1321[i].in + cut, n - cut);
            md5_final(&ctx, d);
            to_hex(d, hex);
            assert_string_equal(hex, rfc1321[i].hex);
        }
    }
}

/* Lengths around the 56-byte padding boundary, byte by byte against one-shot. */
static void test_padding_boundaries(void **state)
{
    (void)state;
    uint8_t buf[200];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t n = 50; n < 140; n++) {
        uint8_t a[MD5_DIGEST_LEN], b[MD5_DIGEST_LEN];
        struct md5_ctx ctx;
        md5_digest(buf, n, a);
        md5_init(&ctx);
        for (size_t k = 0; k < n; k++)
            md5_update(&ctx, buf + k, 1);
        md5_final(&ctx, b);
        assert_memory_equal(a, b, MD5_DIGEST_LEN);
    }
    /* 64 bytes of 'a' (one full block plus a padding block). */
    memset(buf, 'a', 64);
    uint8_t d[MD5_DIGEST_LEN];
    char hex[33];
    md5_digest(buf, 64, d);
    to_hex(d, hex);
    assert_string_equal(hex, "014842d480b571495a4a0363793f7367");
}

static void test_million_a(void **state)
{
    (void)state;
    char chunk[1000];
    memset(chunk, 'a', sizeof chunk);
    struct md5_ctx ctx;
    md5_init(&ctx);
    for (int i = 0; i < 1000; i++)
        md5_update(&ctx, chunk, sizeof chunk);
    uint8_t d[MD5_DIGEST_LEN];
    char hex[33];
    md5_final(&ctx, d);
    to_hex(d, hex);
    assert_string_equal(hex, "7707d6ae4e027c70eea2a935c2296f21");
}

/* The ring's check values from protocol.md §5.8. */
static void test_protocol_values(void **state)
{
    (void)state;
    uint8_t d[MD5_DIGEST_LEN];
    md5_digest("192.168.0.1@1001-0", 18, d);
    assert_int_equal(d[0], 0x8b);
    assert_int_equal(d[1], 0x41);
    assert_int_equal(d[2], 0x27);
    assert_int_equal(d[3], 0xdb);
}

TEST_MAIN(cmocka_unit_test(test_rfc1321_one_shot), cmocka_unit_test(test_rfc1321_every_split),
          cmocka_unit_test(test_padding_boundaries), cmocka_unit_test(test_million_a),
          cmocka_unit_test(test_protocol_values))
