/* trace_fmt_scan.c — the strict JSON scanner under trace_fmt.c: strings
 * (validated UTF-8, escapes decoded in place), numbers, literals and
 * containers with a depth bound. It never reads past s->end and never
 * allocates. */
#include "trace_fmt_scan.h"

#include "err.h"
#include "trace_event.h"

#include <assert.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

size_t trace_fmt_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], cp, min;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    assert(n >= 2 && n <= (size_t)(end - p)); /* callers step n bytes without looking */
    return n;
}

static size_t utf8_put(unsigned char *w, unsigned cp)
{
    /* read_u_escape hands over scalar values only (pairs combined, NUL refused). */
    assert(cp > 0 && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF));
    if (cp < 0x80) {
        w[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        w[0] = (unsigned char)(0xC0 | cp >> 6);
        w[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        w[0] = (unsigned char)(0xE0 | cp >> 12);
        w[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        w[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    w[0] = (unsigned char)(0xF0 | cp >> 18);
    w[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    w[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    w[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---- the scanner ---- */

int trace_scan_fail(struct scan *s, const char *why)
{
    assert(s->p >= s->base && s->p <= s->end); /* a failure is reported inside the line */
    if (!s->err) {
        s->err = why;
        s->col = (size_t)(s->p - s->base) + 1;
    }
    return RMQ_EPROTO;
}

void trace_scan_ws(struct scan *s)
{
    assert(s->p <= s->end);
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* Reads the \uXXXX escape (or surrogate pair) at s->p (just past the 'u')
 * into *cp. NUL is refused, as jansson refuses it. */
static int read_u_escape(struct scan *s, unsigned *cp)
{
    if (s->end - s->p < 4 || hex4(s->p, cp) != 0)
        return trace_scan_fail(s, "bad \\u escape");
    s->p += 4;
    if (*cp >= 0xDC00 && *cp <= 0xDFFF)
        return trace_scan_fail(s, "lone low surrogate in \\u escape");
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {
        unsigned lo;
        if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || hex4(s->p + 2, &lo) != 0 ||
            lo < 0xDC00 || lo > 0xDFFF)
            return trace_scan_fail(s, "unpaired high surrogate in \\u escape");
        s->p += 6;
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (*cp == 0)
        return trace_scan_fail(s, "\\u0000 in a string");
    return RMQ_OK;
}

/* Bytes that need no attention inside a string: printable ASCII but '"' and '\\'. */
static const unsigned char plain[256] = {
#define R8(v) v, v, v, v, v, v, v, v
    R8(0), R8(0), R8(0), R8(0),                                  /* 0x00-0x1f */
    1,     1,     0,     1,     1, 1, 1, 1, R8(1), R8(1), R8(1), /* 0x20-0x3f: '"' */
    R8(1), R8(1), R8(1), 1,     1, 1, 1, 0, 1,     1,     1,     /* 0x40-0x5f: '\\' */
    R8(1), R8(1), R8(1), R8(1),                                  /* 0x60-0x7f */
#undef R8
};

/* Scans the string at s->p (on its opening quote). With unescape, writes
 * the decoded text in place and NUL-terminates it; *out gets its start. */
int trace_scan_string(struct scan *s, bool unescape, char **out)
{
    s->p++;
    unsigned char *w = s->p, *start = s->p;
    while (s->p < s->end) {
        if (!unescape) {
            /* Plain ASCII, nearly every byte of a trace: one table load per byte. */
            while (s->p < s->end && plain[*s->p])
                s->p++;
            w = s->p;
            if (s->p == s->end)
                break;
        }
        unsigned char c = *s->p;
        if (plain[c]) {
            *w++ = c;
            s->p++;
            continue;
        }
        if (c == '"') {
            s->p++;
            if (unescape) {
                assert(w < s->p); /* the NUL lands on or before the closing quote */
                *w = '\0';
                *out = (char *)start;
            }
            return RMQ_OK;
        }
        if (c < 0x20)
            return trace_scan_fail(s, "control character in a string");
        if (c == '\\') {
            if (s->end - s->p < 2)
                break;
            unsigned char e = s->p[1], lit;
            s->p += 2;
            switch (e) {
            case '"': lit = '"'; break;
            case '\\': lit = '\\'; break;
            case '/': lit = '/'; break;
            case 'b': lit = '\b'; break;
            case 'f': lit = '\f'; break;
            case 'n': lit = '\n'; break;
            case 'r': lit = '\r'; break;
            case 't': lit = '\t'; break;
            case 'u': {
                unsigned cp = 0;
                if (read_u_escape(s, &cp) != 0)
                    return RMQ_EPROTO;
                if (unescape)
                    w += utf8_put(w, cp);
                /* In place: a 6-byte escape decodes to at most 3 bytes, a pair's 12 to 4. */
                assert(!unescape || w <= s->p);
                continue;
            }
            default: s->p -= 2; return trace_scan_fail(s, "bad escape in a string");
            }
            if (unescape)
                *w++ = lit;
            continue;
        }
        size_t n = trace_fmt_utf8_len(s->p, s->end);
        if (n == 0)
            return trace_scan_fail(s, "invalid UTF-8 in a string");
        assert(n <= (size_t)(s->end - s->p));
        if (unescape && w != s->p)
            memmove(w, s->p, n);
        w += n;
        s->p += n;
        assert(w <= s->p); /* the write cursor never overtakes the read one */
    }
    return trace_scan_fail(s, "unterminated string");
}

/* Scans a JSON number; *integral tells whether it had no fraction/exponent. */
static int scan_number(struct scan *s, bool *integral)
{
    unsigned char *p = s->p;
    if (p < s->end && *p == '-')
        p++;
    if (p >= s->end || !is_digit(*p))
        return trace_scan_fail(s, "bad number");
    if (*p == '0')
        p++;
    else
        while (p < s->end && is_digit(*p))
            p++;
    *integral = true;
    if (p < s->end && *p == '.') {
        *integral = false;
        if (++p >= s->end || !is_digit(*p))
            return trace_scan_fail(s, "bad number");
        while (p < s->end && is_digit(*p))
            p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        *integral = false;
        p++;
        if (p < s->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= s->end || !is_digit(*p))
            return trace_scan_fail(s, "bad number");
        while (p < s->end && is_digit(*p))
            p++;
    }
    assert(p > s->p && p <= s->end); /* at least one digit, within the line */
    s->p = p;
    return RMQ_OK;
}

static int scan_literal(struct scan *s, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return trace_scan_fail(s, "unexpected character");
    s->p += n;
    return RMQ_OK;
}

int trace_scan_value(struct scan *s, int depth);

/* Skips an object or array body after its opening bracket. */
static int skip_container(struct scan *s, int depth, unsigned char close)
{
    trace_scan_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return RMQ_OK;
    }
    for (;;) {
        trace_scan_ws(s);
        if (close == '}') {
            if (s->p >= s->end || *s->p != '"')
                return trace_scan_fail(s, "expected a string key");
            if (trace_scan_string(s, false, NULL) != 0)
                return RMQ_EPROTO;
            trace_scan_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return trace_scan_fail(s, "expected ':'");
            s->p++;
        }
        if (trace_scan_value(s, depth + 1) != 0)
            return RMQ_EPROTO;
        trace_scan_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return RMQ_OK;
        }
        return trace_scan_fail(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* Validates one value at s->p (after whitespace) and moves past it. */
int trace_scan_value(struct scan *s, int depth)
{
    trace_scan_ws(s);
    if (s->p >= s->end)
        return trace_scan_fail(s, "unexpected end of line");
    if (depth > TRACE_FMT_MAX_DEPTH)
        return trace_scan_fail(s, "nested too deeply");
    bool integral;
    switch (*s->p) {
    case '"': return trace_scan_string(s, false, NULL);
    case '{': s->p++; return skip_container(s, depth, '}');
    case '[': s->p++; return skip_container(s, depth, ']');
    case 't': return scan_literal(s, "true");
    case 'f': return scan_literal(s, "false");
    case 'n': return scan_literal(s, "null");
    default: return scan_number(s, &integral);
    }
}

bool trace_json_valid(const uint8_t *p, size_t len)
{
    struct scan s = {(unsigned char *)(uintptr_t)p, (unsigned char *)(uintptr_t)p + len, p, NULL, 0};
    /* skip_value never writes when not unescaping, so the cast away from const is safe. */
    if (trace_scan_value(&s, 1) != 0)
        return false;
    trace_scan_ws(&s);
    return s.p == s.end;
}

/* Compares two of the needle's bytes against 16 positions at once and
 * checks the whole needle only where both match; glibc's memmem spends about
 * two instructions a byte on a short needle. The bytes are the second and
 * the last but one, which for a quoted word skips the quotes (common in a
 * JSON line) and keeps its letters. */
#ifdef __SSE2__
/* Bit k set: hay[i + k + 1] == x and hay[i + k + m - 2] == y, for k < 16. */
static inline unsigned pair_mask(const char *hay, size_t i, size_t m, __m128i x, __m128i y)
{
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(hay + i + 1));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(hay + i + m - 2));
    return (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, x), _mm_cmpeq_epi8(b, y)));
}

/* The first candidate position in mask (bits from i) where the needle is. */
static __attribute__((noinline)) const char *check_candidates(const char *hay, size_t n, size_t i,
                                                              uint32_t mask, const char *needle, size_t m)
{
    for (; mask; mask &= mask - 1) {
        size_t k = i + (unsigned)__builtin_ctz(mask);
        if (k + m <= n && !memcmp(hay + k, needle, m))
            return hay + k;
    }
    return NULL;
}
#endif

const char *trace_find(const char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0)
        return hay;
    size_t i = 0;
#ifdef __SSE2__
    if (m >= 4) {
        const __m128i x = _mm_set1_epi8(needle[1]), y = _mm_set1_epi8(needle[m - 2]);
        const char *r;
        for (; i + m - 2 + 32 <= n; i += 32) {
            uint32_t mask = pair_mask(hay, i, m, x, y) | pair_mask(hay, i + 16, m, x, y) << 16;
            if (mask && (r = check_candidates(hay, n, i, mask, needle, m)) != NULL)
                return r;
        }
        for (; i + m - 2 + 16 <= n; i += 16) {
            uint32_t mask = pair_mask(hay, i, m, x, y);
            if (mask && (r = check_candidates(hay, n, i, mask, needle, m)) != NULL)
                return r;
        }
    }
#endif
    for (; i + m <= n; i++)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, m))
            return hay + i;
    return NULL;
}
