/* sha1.h — SHA-1 and HMAC-SHA1 (RFC 3174, RFC 2104) and Base64, for the
 * RocketMQ ACL signature (HMAC-SHA1 over the request, Base64-encoded). The
 * one hand-written primitive besides MD5, for the same reason: a few lines
 * instead of a crypto library dependency. Not for anything secret-at-rest.
 * Pure; any thread. */
#ifndef RMQ_SHA1_H
#define RMQ_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define SHA1_DIGEST_LEN 20

struct sha1_ctx {
    uint32_t h[5];
    uint64_t bytes;
    uint8_t block[64];
    size_t used;
};

void sha1_init(struct sha1_ctx *c);
void sha1_update(struct sha1_ctx *c, const void *data, size_t len);
void sha1_final(struct sha1_ctx *c, uint8_t out[SHA1_DIGEST_LEN]);

/* HMAC-SHA1 of the concatenation of n parts (so callers need not join them). */
void hmac_sha1(const void *key, size_t key_len, const void *const *parts, const size_t *lens, size_t n,
               uint8_t out[SHA1_DIGEST_LEN]);

/* Standard Base64 with padding; out needs 4 * ((len + 2) / 3) + 1 bytes. */
void base64_encode(const uint8_t *in, size_t len, char *out);

#endif
