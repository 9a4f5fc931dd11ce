/* md5.c — MD5 per RFC 1321, written from the specification (see md5.h).
 *
 * The 64-step compression is written out step by step, with the per-step
 * constants floor(abs(sin(i+1)) * 2^32) tabulated below. Words are read
 * little-endian byte by byte, so the code has no alignment or host-endianness
 * assumptions. Pure; any thread.
 */
#include "md5.h"

#include <assert.h>
#include <string.h>

/* T[i] = floor(2^32 * |sin(i + 1)|), RFC 1321 §3.4. */
static const uint32_t md5_t[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static uint32_t rotl(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* The four auxiliary functions of RFC 1321 §3.4 (F and G in the
 * one-fewer-operation forms, equal bit for bit). */
#define MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
/* One step: a = b + ((a + f(b, c, d) + X[k] + T[i]) <<< s). Spelled out
 * for all 64 steps so that the compiler keeps the state in registers and
 * folds the constants; the ring hashes tens of thousands of short keys per
 * allocation and this loop is most of that time. */
#define MD5_STEP(f, a, b, c, d, k, i, s) (a) = (b) + rotl((a) + f((b), (c), (d)) + x[k] + md5_t[i], (s))

/* Runs the compression function over one 64-byte block. */
static void md5_compress(uint32_t state[4], const uint8_t block[64])
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = load_le32(block + 4 * i);
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    /* Round 1: X[i]; shifts 7, 12, 17, 22. */
    MD5_STEP(MD5_F, a, b, c, d, 0, 0, 7);
    MD5_STEP(MD5_F, d, a, b, c, 1, 1, 12);
    MD5_STEP(MD5_F, c, d, a, b, 2, 2, 17);
    MD5_STEP(MD5_F, b, c, d, a, 3, 3, 22);
    MD5_STEP(MD5_F, a, b, c, d, 4, 4, 7);
    MD5_STEP(MD5_F, d, a, b, c, 5, 5, 12);
    MD5_STEP(MD5_F, c, d, a, b, 6, 6, 17);
    MD5_STEP(MD5_F, b, c, d, a, 7, 7, 22);
    MD5_STEP(MD5_F, a, b, c, d, 8, 8, 7);
    MD5_STEP(MD5_F, d, a, b, c, 9, 9, 12);
    MD5_STEP(MD5_F, c, d, a, b, 10, 10, 17);
    MD5_STEP(MD5_F, b, c, d, a, 11, 11, 22);
    MD5_STEP(MD5_F, a, b, c, d, 12, 12, 7);
    MD5_STEP(MD5_F, d, a, b, c, 13, 13, 12);
    MD5_STEP(MD5_F, c, d, a, b, 14, 14, 17);
    MD5_STEP(MD5_F, b, c, d, a, 15, 15, 22);
    /* Round 2: X[(5i + 1) mod 16]; shifts 5, 9, 14, 20. */
    MD5_STEP(MD5_G, a, b, c, d, 1, 16, 5);
    MD5_STEP(MD5_G, d, a, b, c, 6, 17, 9);
    MD5_STEP(MD5_G, c, d, a, b, 11, 18, 14);
    MD5_STEP(MD5_G, b, c, d, a, 0, 19, 20);
    MD5_STEP(MD5_G, a, b, c, d, 5, 20, 5);
    MD5_STEP(MD5_G, d, a, b, c, 10, 21, 9);
    MD5_STEP(MD5_G, c, d, a, b, 15, 22, 14);
    MD5_STEP(MD5_G, b, c, d, a, 4, 23, 20);
    MD5_STEP(MD5_G, a, b, c, d, 9, 24, 5);
    MD5_STEP(MD5_G, d, a, b, c, 14, 25, 9);
    MD5_STEP(MD5_G, c, d, a, b, 3, 26, 14);
    MD5_STEP(MD5_G, b, c, d, a, 8, 27, 20);
    MD5_STEP(MD5_G, a, b, c, d, 13, 28, 5);
    MD5_STEP(MD5_G, d, a, b, c, 2, 29, 9);
    MD5_STEP(MD5_G, c, d, a, b, 7, 30, 14);
    MD5_STEP(MD5_G, b, c, d, a, 12, 31, 20);
    /* Round 3: X[(3i + 5) mod 16]; shifts 4, 11, 16, 23. */
    MD5_STEP(MD5_H, a, b, c, d, 5, 32, 4);
    MD5_STEP(MD5_H, d, a, b, c, 8, 33, 11);
    MD5_STEP(MD5_H, c, d, a, b, 11, 34, 16);
    MD5_STEP(MD5_H, b, c, d, a, 14, 35, 23);
    MD5_STEP(MD5_H, a, b, c, d, 1, 36, 4);
    MD5_STEP(MD5_H, d, a, b, c, 4, 37, 11);
    MD5_STEP(MD5_H, c, d, a, b, 7, 38, 16);
    MD5_STEP(MD5_H, b, c, d, a, 10, 39, 23);
    MD5_STEP(MD5_H, a, b, c, d, 13, 40, 4);
    MD5_STEP(MD5_H, d, a, b, c, 0, 41, 11);
    MD5_STEP(MD5_H, c, d, a, b, 3, 42, 16);
    MD5_STEP(MD5_H, b, c, d, a, 6, 43, 23);
    MD5_STEP(MD5_H, a, b, c, d, 9, 44, 4);
    MD5_STEP(MD5_H, d, a, b, c, 12, 45, 11);
    MD5_STEP(MD5_H, c, d, a, b, 15, 46, 16);
    MD5_STEP(MD5_H, b, c, d, a, 2, 47, 23);
    /* Round 4: X[7i mod 16]; shifts 6, 10, 15, 21. */
    MD5_STEP(MD5_I, a, b, c, d, 0, 48, 6);
    MD5_STEP(MD5_I, d, a, b, c, 7, 49, 10);
    MD5_STEP(MD5_I, c, d, a, b, 14, 50, 15);
    MD5_STEP(MD5_I, b, c, d, a, 5, 51, 21);
    MD5_STEP(MD5_I, a, b, c, d, 12, 52, 6);
    MD5_STEP(MD5_I, d, a, b, c, 3, 53, 10);
    MD5_STEP(MD5_I, c, d, a, b, 10, 54, 15);
    MD5_STEP(MD5_I, b, c, d, a, 1, 55, 21);
    MD5_STEP(MD5_I, a, b, c, d, 8, 56, 6);
    MD5_STEP(MD5_I, d, a, b, c, 15, 57, 10);
    MD5_STEP(MD5_I, c, d, a, b, 6, 58, 15);
    MD5_STEP(MD5_I, b, c, d, a, 13, 59, 21);
    MD5_STEP(MD5_I, a, b, c, d, 4, 60, 6);
    MD5_STEP(MD5_I, d, a, b, c, 11, 61, 10);
    MD5_STEP(MD5_I, c, d, a, b, 2, 62, 15);
    MD5_STEP(MD5_I, b, c, d, a, 9, 63, 21);
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
}

void md5_init(struct md5_ctx *ctx)
{
    /* RFC 1321 §3.3 initial chaining values. */
    ctx->state[0] = 0x67452301;
    ctx->state[1] = 0xefcdab89;
    ctx->state[2] = 0x98badcfe;
    ctx->state[3] = 0x10325476;
    ctx->total_len = 0;
    ctx->block_len = 0;
}

void md5_update(struct md5_ctx *ctx, const void *data, size_t len)
{
    const uint8_t *p = data;
    if (!len)
        return;                  /* data may be NULL then; memcpy must not see it */
    assert(ctx->block_len < 64); /* a full block is compressed at once */
    ctx->total_len += len;
    if (ctx->block_len) {
        size_t take = 64 - ctx->block_len < len ? 64 - ctx->block_len : len;
        memcpy(ctx->block + ctx->block_len, p, take);
        ctx->block_len += take;
        p += take;
        len -= take;
        if (ctx->block_len < 64)
            return;
        md5_compress(ctx->state, ctx->block);
        ctx->block_len = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        md5_compress(ctx->state, p);
    if (len) {
        memcpy(ctx->block, p, len);
        ctx->block_len = len;
    }
    assert(ctx->block_len < 64 && ctx->block_len == ctx->total_len % 64);
}

void md5_final(struct md5_ctx *ctx, uint8_t digest[MD5_DIGEST_LEN])
{
    assert(ctx->block_len == ctx->total_len % 64);
    uint64_t bits = ctx->total_len * 8;
    /* Padding: one 0x80 byte, zeros up to 56 mod 64, then the bit length. */
    ctx->block[ctx->block_len++] = 0x80;
    if (ctx->block_len > 56) {
        memset(ctx->block + ctx->block_len, 0, 64 - ctx->block_len);
        md5_compress(ctx->state, ctx->block);
        ctx->block_len = 0;
    }
    memset(ctx->block + ctx->block_len, 0, 56 - ctx->block_len);
    store_le32(ctx->block + 56, (uint32_t)bits);
    store_le32(ctx->block + 60, (uint32_t)(bits >> 32));
    md5_compress(ctx->state, ctx->block);
    for (int i = 0; i < 4; i++)
        store_le32(digest + 4 * i, ctx->state[i]);
}

void md5_digest(const void *data, size_t len, uint8_t digest[MD5_DIGEST_LEN])
{
    struct md5_ctx ctx;
    md5_init(&ctx);
    md5_update(&ctx, data, len);
    md5_final(&ctx, digest);
}
