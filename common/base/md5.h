/* md5.h — MD5 (RFC 1321) for the consistent-hash ring.
 *
 * The Java client's ConsistentHash strategy places consumers on a ring by the
 * MD5 of a string key, so reproducing its allocation needs bit-exact MD5. This
 * is the one hand-written primitive of the project: a crypto library would be
 * a large dependency for 16 bytes of non-security hashing. Not for security
 * use. Pure; any thread; no allocation.
 */
#ifndef RMQ_MD5_H
#define RMQ_MD5_H

#include <stddef.h>
#include <stdint.h>

#define MD5_DIGEST_LEN 16

/* Streaming state; plain value, no cleanup needed. */
struct md5_ctx {
    uint32_t state[4];
    uint64_t total_len; /* bytes fed so far (the length field is mod 2^64) */
    uint8_t block[64];
    size_t block_len;
};

void md5_init(struct md5_ctx *ctx);
/* Feeds len bytes (data may be NULL when len is 0). */
void md5_update(struct md5_ctx *ctx, const void *data, size_t len);
/* Writes the digest; ctx must be md5_init'ed again before reuse. */
void md5_final(struct md5_ctx *ctx, uint8_t digest[MD5_DIGEST_LEN]);
/* One-shot digest of a buffer. */
void md5_digest(const void *data, size_t len, uint8_t digest[MD5_DIGEST_LEN]);

#endif
