/* fuzz_common.h — helpers shared by the libFuzzer targets (header only).
 *
 * Every target defines LLVMFuzzerTestOneInput; the same source links either
 * with libFuzzer (-Dfuzzing_engine=libfuzzer) or with replay_main.c, which
 * runs it over the committed corpus as an ordinary unit test. FUZZ_CHECK is
 * the invariant assertion: it prints what broke and aborts, so both libFuzzer
 * and the replay test report it as a crash with the input that caused it.
 */
#ifndef RMQ_FUZZ_COMMON_H
#define RMQ_FUZZ_COMMON_H

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "remoting_cmd.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                     \
            abort();                                                                                         \
        }                                                                                                    \
    } while (0)

/* Allocations jansson has made through the funnel (see fuzz_init). */
static long fuzz_json_allocs;

static inline void *fuzz_json_malloc(size_t n)
{
    fuzz_json_allocs++;
    return rmq_malloc(n);
}

/* Routes jansson through the allocation funnel once, as
 * rmq_mem_install_jansson does, and counts its allocations, so the fault
 * hook reaches jansson's allocations too. */
static inline void fuzz_init(void)
{
    static bool done;
    if (!done) {
        json_set_alloc_funcs(fuzz_json_malloc, rmq_free);
        done = true;
    }
}

/* FNV-1a of the input: the source of every "random" choice a target makes
 * (chunk sizes, which allocation to fail), so a given input always replays
 * the same way. */
static inline uint64_t fuzz_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* xorshift64 step over a non-zero state. */
static inline uint64_t fuzz_next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

/* The allocation (0-based) that the fault-injection pass of a target fails:
 * small numbers, because the interesting failures are the early ones and a
 * number past the input's allocation count just repeats the clean run. */
static inline long fuzz_fail_point(const uint8_t *p, size_t n)
{
    return (long)((fuzz_hash(p, n) >> 17) % 48);
}

/* The fault point for a parser that starts with json_loadb(p[0..n)): past
 * every allocation of that load. jansson 2.14 asserts (load.c:255,
 * lex_unget_unsave: c == d) when an allocation fails while its lexer
 * grows a token buffer (upstream akheron/jansson#362, docs/reliability.md),
 * so failures are only injected after the text is parsed. */
static inline long fuzz_fail_point_after_json(const uint8_t *p, size_t n)
{
    fuzz_json_allocs = 0;
    json_t *j = json_loadb((const char *)p, n, 0, NULL);
    long loads = fuzz_json_allocs;
    json_decref(j);
    return loads + fuzz_fail_point(p, n);
}

static inline bool fuzz_str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

/* Well-formed UTF-8 by jansson's rules (no overlongs, no surrogates, at most
 * U+10FFFF) and no NUL: the strings a JSON encoding can carry. */
static inline bool fuzz_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char b = *p;
        size_t need;
        uint32_t cp, min;
        if (b < 0x80) {
            p++;
            continue;
        } else if ((b & 0xE0) == 0xC0) {
            need = 1, cp = b & 0x1F, min = 0x80;
        } else if ((b & 0xF0) == 0xE0) {
            need = 2, cp = b & 0x0F, min = 0x800;
        } else if ((b & 0xF8) == 0xF0) {
            need = 3, cp = b & 0x07, min = 0x10000;
        } else {
            return false;
        }
        for (size_t i = 1; i <= need; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        p += need + 1;
    }
    return true;
}

/* How a command's language reads back after a trip through a codec: JSON
 * carries names, so every byte without a name becomes OTHER. */
static inline int32_t fuzz_lang_norm(int32_t lang, bool json)
{
    return json ? rmq_language_from_name(rmq_language_name(lang)) : lang;
}

/* Header fields of a and b agree (b went through an encoder and a decoder;
 * json: that codec was JSON). Body is compared when with_body. */
static inline bool fuzz_cmd_equal(const struct rmq_cmd *a, const struct rmq_cmd *b, bool json, bool with_body)
{
    if (a->code != b->code || a->flag != b->flag || a->opaque != b->opaque || a->version != b->version)
        return false;
    if (fuzz_lang_norm(a->language, json) != fuzz_lang_norm(b->language, json))
        return false;
    if (!fuzz_str_eq(a->remark, b->remark) || a->ext_len != b->ext_len)
        return false;
    for (size_t i = 0; i < a->ext_len; i++)
        if (strcmp(a->ext[i].key, b->ext[i].key) || strcmp(a->ext[i].val, b->ext[i].val))
            return false;
    if (with_body) {
        if (a->body_len != b->body_len || (a->body_len && memcmp(a->body, b->body, a->body_len)))
            return false;
        if (a->serialize_type != b->serialize_type)
            return false;
    }
    return true;
}

/* What a decoder must leave behind on failure: an empty command. */
static inline bool fuzz_cmd_is_empty(const struct rmq_cmd *c)
{
    return c->remark == NULL && c->ext == NULL && c->ext_len == 0 && c->body == NULL && c->body_len == 0;
}

/* A decoder of objects of one type, seen through void pointers, for the
 * checks every target makes of it (fuzz_decode_checks); FUZZ_DECODER
 * defines one from typed functions. An object starts zeroed (or
 * rmq_cmd_init'ed); the decoder fills it or leaves it empty. */
struct fuzz_decoder {
    int (*decode)(const uint8_t *p, size_t n, void *obj, char *err, size_t errlen);
    /* What runs with one allocation failed on purpose, and where that
     * failure falls (fuzz_fail_point or fuzz_fail_point_after_json). */
    int (*decode_faulted)(const uint8_t *p, size_t n, void *obj, char *err, size_t errlen);
    long (*fail_point)(const uint8_t *p, size_t n);
    bool (*equal)(const void *a, const void *b);
    bool (*is_empty)(const void *obj);
    void (*clear)(void *obj);
    /* The invariants of an accepted object (its shape, its round trips). */
    void (*check_accepted)(const void *obj);
};

/* static const struct fuzz_decoder var over objects of type T, from
 * decode(p, n, T *, err, errlen) and its faulted twin, equal(const T *,
 * const T *), empty(const T *), clear(T *) and check(const T *). */
#define FUZZ_DECODER(var, T, decode, faulted, fail_point, equal, empty, clear, check)                        \
    static int var##_decode(const uint8_t *p, size_t n, void *o, char *err, size_t errlen)                   \
    {                                                                                                        \
        return decode(p, n, (T *)o, err, errlen);                                                            \
    }                                                                                                        \
    static int var##_faulted(const uint8_t *p, size_t n, void *o, char *err, size_t errlen)                  \
    {                                                                                                        \
        return faulted(p, n, (T *)o, err, errlen);                                                           \
    }                                                                                                        \
    static bool var##_equal(const void *a, const void *b)                                                    \
    {                                                                                                        \
        return equal((const T *)a, (const T *)b);                                                            \
    }                                                                                                        \
    static bool var##_empty(const void *o)                                                                   \
    {                                                                                                        \
        return empty((const T *)o);                                                                          \
    }                                                                                                        \
    static void var##_clear(void *o)                                                                         \
    {                                                                                                        \
        clear((T *)o);                                                                                       \
    }                                                                                                        \
    static void var##_check(const void *o)                                                                   \
    {                                                                                                        \
        check((const T *)o);                                                                                 \
    }                                                                                                        \
    static const struct fuzz_decoder var = {var##_decode, var##_faulted, fail_point, var##_equal,            \
                                            var##_empty,  var##_clear,   var##_check};

/* Decodes p[0..n) into *a: a rejection is RMQ_EPROTO with a reason and an
 * empty object, an accepted object passes check_accepted. Then decodes it
 * again into *o with one allocation failed on purpose: the clean run's
 * answer, or RMQ_ENOMEM owning nothing. Both start empty; *o is cleared,
 * the caller clears *a. Returns the clean run's result. */
static inline int fuzz_decode_checks(const struct fuzz_decoder *d, const uint8_t *p, size_t n, void *a,
                                     void *o)
{
    fuzz_init();
    char err[200] = "";
    int rc = d->decode(p, n, a, err, sizeof err);
    if (rc) {
        FUZZ_CHECK(rc == RMQ_EPROTO);
        FUZZ_CHECK(err[0] != 0);
        FUZZ_CHECK(d->is_empty(a));
    } else {
        d->check_accepted(a);
    }
    rmq_mem_fail_after(d->fail_point(p, n));
    int orc = d->decode_faulted(p, n, o, err, sizeof err);
    rmq_mem_fail_after(-1);
    if (orc == RMQ_OK) {
        FUZZ_CHECK(rc == RMQ_OK);
        FUZZ_CHECK(d->equal(a, o));
    } else {
        if (orc != rc && orc != RMQ_ENOMEM)
            fprintf(stderr, "under fault injection: %d (%s), clean run: %d\n", orc, err, rc);
        FUZZ_CHECK(orc == rc || orc == RMQ_ENOMEM);
        FUZZ_CHECK(d->is_empty(o));
    }
    d->clear(o);
    return rc;
}

/* A target that checks nothing beyond fuzz_decode_checks: runs them on
 * data, then clears *a, which must leave it empty. Returns 0 (libFuzzer's
 * "go on"). */
static inline int fuzz_decode_run(const struct fuzz_decoder *d, const uint8_t *data, size_t size, void *a,
                                  void *o)
{
    (void)fuzz_decode_checks(d, data, size, a, o);
    d->clear(a);
    FUZZ_CHECK(d->is_empty(a));
    return 0;
}

/* The libFuzzer entry of a target over zero-initialised objects of type T
 * that checks nothing beyond fuzz_decode_run. */
#define FUZZ_DECODER_MAIN(var, T)                                                                            \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                             \
    {                                                                                                        \
        T a = {0}, o = {0};                                                                                  \
        return fuzz_decode_run(&var, data, size, &a, &o);                                                    \
    }

/* fuzz_cmd_equal as the binary header carries a command: for FUZZ_DECODER. */
static inline bool fuzz_cmd_same(const struct rmq_cmd *a, const struct rmq_cmd *b)
{
    return fuzz_cmd_equal(a, b, false, false);
}

/* Encodes a with encode into e (initialised here) and decodes that into b
 * (likewise), which must be a (json: compared as the JSON header carries
 * it). The caller frees both. */
static inline void fuzz_cmd_redecode(const struct rmq_cmd *a,
                                     int (*encode)(const struct rmq_cmd *, struct buf *),
                                     int (*decode)(const uint8_t *, size_t, struct rmq_cmd *, char *, size_t),
                                     bool json, struct buf *e, struct rmq_cmd *b)
{
    buf_init(e, 0);
    FUZZ_CHECK(encode(a, e) == RMQ_OK);
    rmq_cmd_init(b);
    char err[160] = "";
    int rc = decode(buf_head(e), buf_live(e), b, err, sizeof err);
    if (rc)
        fprintf(stderr, "re-decode failed: %d %s\n%.*s\n", rc, err, (int)buf_live(e),
                (const char *)buf_head(e));
    FUZZ_CHECK(rc == RMQ_OK);
    FUZZ_CHECK(fuzz_cmd_equal(a, b, json, false));
}

/* fuzz_cmd_redecode, and the decoded command encodes to the same bytes. */
static inline void
fuzz_cmd_round_trip(const struct rmq_cmd *a, int (*encode)(const struct rmq_cmd *, struct buf *),
                    int (*decode)(const uint8_t *, size_t, struct rmq_cmd *, char *, size_t), bool json)
{
    struct buf e1, e2;
    struct rmq_cmd b;
    fuzz_cmd_redecode(a, encode, decode, json, &e1, &b);
    buf_init(&e2, 0);
    FUZZ_CHECK(encode(&b, &e2) == RMQ_OK);
    FUZZ_CHECK(buf_live(&e1) == buf_live(&e2) && memcmp(buf_head(&e1), buf_head(&e2), buf_live(&e1)) == 0);
    rmq_cmd_clear(&b);
    buf_free(&e1);
    buf_free(&e2);
}

#endif
