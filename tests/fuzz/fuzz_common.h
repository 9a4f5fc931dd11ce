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

#endif
