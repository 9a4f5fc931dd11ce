/* test_sha1.c — SHA-1, HMAC-SHA1, Base64 against published vectors, and the
 * ACL request signature against a value computed independently (Python's
 * hmac module) for the same request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "acl_sig.h"
#include "sha1.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_sha1_vectors(void **state)
{
    (void)state;
    const char *in[] = {"abc", "", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"};
    const char *want[] = {"a9993e364706816aba3e25717850c26c9cd0d89d",
                          "da39a3ee5e6b4b0d3255bfef95601890afd80709",
                          "84983e441c3bd26ebaae4aa1f95129e5e54670f1"};
    for (int i = 0; i < 3; i++) {
        struct sha1_ctx c;
        uint8_t d[20];
        char h[41];
        sha1_init(&c);
        /* byte by byte, to cross every block boundary path */
        for (size_t k = 0; k < strlen(in[i]); k++)
            sha1_update(&c, in[i] + k, 1);
        sha1_final(&c, d);
        hex(d, 20, h);
        assert_string_equal(h, want[i]);
    }
    struct sha1_ctx c;
    uint8_t d[20];
    char h[41];
    sha1_init(&c);
    for (int i = 0; i < 10000; i++)
        sha1_update(&c,
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaa",
                    100);
    sha1_final(&c, d);
    hex(d, 20, h);
    assert_string_equal(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

static void test_hmac_and_base64(void **state)
{
    (void)state;
    uint8_t key[20];
    memset(key, 0x0b, sizeof key);
    const void *parts[] = {"Hi ", "There"};
    size_t lens[] = {3, 5};
    uint8_t mac[20];
    char h[41];
    hmac_sha1(key, sizeof key, parts, lens, 2, mac);
    hex(mac, 20, h);
    assert_string_equal(h, "b617318655057264e28bc0b6fb378c8ef146be00"); /* RFC 2202 case 1 */
    char b[64];
    base64_encode((const uint8_t *)"f", 1, b);
    assert_string_equal(b, "Zg==");
    base64_encode((const uint8_t *)"fo", 2, b);
    assert_string_equal(b, "Zm8=");
    base64_encode((const uint8_t *)"foobar", 6, b);
    assert_string_equal(b, "Zm9vYmFy");
    char longkey[101];
    memset(longkey, 'k', 100);
    longkey[100] = 0;
    const void *none[] = {""};
    size_t zero[] = {0};
    hmac_sha1(longkey, 100, none, zero, 1, mac);
    base64_encode(mac, 20, b);
    assert_string_equal(b, "EOZirNlf5pQzMm+EYJ3PrZ5csdE="); /* a key longer than a block is hashed first */
}

static void test_acl_signature(void **state)
{
    (void)state;
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    assert_int_equal(rmq_cmd_ext_set(&c, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set(&c, "AccessKey", "RocketMQ"), 0);
    assert_int_equal(rmq_cmd_ext_set(&c, "queueId", "3"), 0);
    assert_int_equal(rmq_cmd_ext_set(&c, "Signature", "ignored"), 0);
    assert_int_equal(rmq_cmd_set_body_copy(&c, "xyz", 3), 0);
    char sig[ACL_SIG_LEN];
    assert_int_equal(acl_signature(&c, "12345678", sig), 0);
    assert_string_equal(sig, "3kyIiMvEUeK+Lgts0dML+uhm8OI=");
    assert_true(acl_equal_ct(sig, "3kyIiMvEUeK+Lgts0dML+uhm8OI="));
    assert_false(acl_equal_ct(sig, "3kyIiMvEUeK+Lgts0dML+uhm8OI"));
    assert_false(acl_equal_ct(sig, "XkyIiMvEUeK+Lgts0dML+uhm8OI="));
    rmq_cmd_clear(&c);
}

TEST_MAIN(cmocka_unit_test(test_sha1_vectors), cmocka_unit_test(test_hmac_and_base64),
          cmocka_unit_test(test_acl_signature))
