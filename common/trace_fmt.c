/* trace_fmt.c — see trace_fmt.h.
 *
 * Decoding runs in two phases over a private copy of the line: phase one
 * validates the whole top-level object and records each key with the span of
 * its value (nothing is interpreted yet, so key order does not matter);
 * phase two interprets the pairs for the event kind, unescaping strings in
 * place (an unescaped string is never longer than its escaped form, so the
 * closing quote's byte can hold the NUL). Body values are validated in phase
 * one and handed out as raw spans, never unescaped: they go to the daemon's
 * own body parser as they are. */
#include "trace_fmt.h"

#include "err.h"
#include "trace_fmt_internal.h"
#include "mem.h"
#include "remoting_cmd.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {"header", "connect", "request", "close", "notify", "route"};

const char *trace_kind_name(enum trace_kind k)
{
    return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k] : "?";
}

void trace_decoder_init(struct trace_decoder *d)
{
    memset(d, 0, sizeof *d);
    buf_init(&d->line, TRACE_FMT_MAX_LINE + 1);
}

void trace_decoder_free(struct trace_decoder *d)
{
    if (!d)
        return;
    buf_free(&d->line);
    rmq_free(d->kv);
    rmq_free(d->brokers);
    rmq_free(d->body64);
    memset(d, 0, sizeof *d);
}

/* ---- UTF-8 ---- */

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
    return n;
}

static size_t utf8_put(unsigned char *w, unsigned cp)
{
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

struct scan {
    unsigned char *p, *end;
    const unsigned char *base;
    const char *err; /* static reason of the first failure */
    size_t col;      /* 1-based column of the failure */
};

static int fail(struct scan *s, const char *why)
{
    if (!s->err) {
        s->err = why;
        s->col = (size_t)(s->p - s->base) + 1;
    }
    return RMQ_EPROTO;
}

static void skip_ws(struct scan *s)
{
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
        return fail(s, "bad \\u escape");
    s->p += 4;
    if (*cp >= 0xDC00 && *cp <= 0xDFFF)
        return fail(s, "lone low surrogate in \\u escape");
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {
        unsigned lo;
        if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || hex4(s->p + 2, &lo) != 0 || lo < 0xDC00 ||
            lo > 0xDFFF)
            return fail(s, "unpaired high surrogate in \\u escape");
        s->p += 6;
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (*cp == 0)
        return fail(s, "\\u0000 in a string");
    return RMQ_OK;
}

/* Scans the string at s->p (on its opening quote). With unescape, writes
 * the decoded text in place and NUL-terminates it; *out gets its start. */
static int scan_string(struct scan *s, bool unescape, char **out)
{
    s->p++;
    unsigned char *w = s->p, *start = s->p;
    while (s->p < s->end) {
        unsigned char c = *s->p;
        if (c == '"') {
            s->p++;
            if (unescape) {
                *w = '\0';
                *out = (char *)start;
            }
            return RMQ_OK;
        }
        if (c < 0x20)
            return fail(s, "control character in a string");
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
                unsigned cp;
                if (read_u_escape(s, &cp) != 0)
                    return RMQ_EPROTO;
                if (unescape)
                    w += utf8_put(w, cp);
                continue;
            }
            default: s->p -= 2; return fail(s, "bad escape in a string");
            }
            if (unescape)
                *w++ = lit;
            continue;
        }
        size_t n = trace_fmt_utf8_len(s->p, s->end);
        if (n == 0)
            return fail(s, "invalid UTF-8 in a string");
        if (unescape && w != s->p)
            memmove(w, s->p, n);
        w += n;
        s->p += n;
    }
    return fail(s, "unterminated string");
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Scans a JSON number; *integral tells whether it had no fraction/exponent. */
static int scan_number(struct scan *s, bool *integral)
{
    unsigned char *p = s->p;
    if (p < s->end && *p == '-')
        p++;
    if (p >= s->end || !is_digit(*p))
        return fail(s, "bad number");
    if (*p == '0')
        p++;
    else
        while (p < s->end && is_digit(*p))
            p++;
    *integral = true;
    if (p < s->end && *p == '.') {
        *integral = false;
        if (++p >= s->end || !is_digit(*p))
            return fail(s, "bad number");
        while (p < s->end && is_digit(*p))
            p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        *integral = false;
        p++;
        if (p < s->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= s->end || !is_digit(*p))
            return fail(s, "bad number");
        while (p < s->end && is_digit(*p))
            p++;
    }
    s->p = p;
    return RMQ_OK;
}

static int scan_literal(struct scan *s, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return fail(s, "unexpected character");
    s->p += n;
    return RMQ_OK;
}

static int skip_value(struct scan *s, int depth);

/* Skips an object or array body after its opening bracket. */
static int skip_container(struct scan *s, int depth, unsigned char close)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return RMQ_OK;
    }
    for (;;) {
        skip_ws(s);
        if (close == '}') {
            if (s->p >= s->end || *s->p != '"')
                return fail(s, "expected a string key");
            if (scan_string(s, false, NULL) != 0)
                return RMQ_EPROTO;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return fail(s, "expected ':'");
            s->p++;
        }
        if (skip_value(s, depth + 1) != 0)
            return RMQ_EPROTO;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return RMQ_OK;
        }
        return fail(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* Validates one value at s->p (after whitespace) and moves past it. */
static int skip_value(struct scan *s, int depth)
{
    skip_ws(s);
    if (s->p >= s->end)
        return fail(s, "unexpected end of line");
    if (depth > TRACE_FMT_MAX_DEPTH)
        return fail(s, "nested too deeply");
    bool integral;
    switch (*s->p) {
    case '"': return scan_string(s, false, NULL);
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
    if (skip_value(&s, 1) != 0)
        return false;
    skip_ws(&s);
    return s.p == s.end;
}

/* ---- phase one: the top-level object ---- */

#define MAX_PAIRS 32

struct pair {
    const char *key;
    unsigned char *val, *val_end; /* value span in the line copy */
};

struct pairs {
    struct pair v[MAX_PAIRS];
    size_t n;
};

static int scan_top(struct scan *s, struct pairs *ps)
{
    ps->n = 0;
    skip_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return fail(s, "a line must be one JSON object");
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}')
        return fail(s, "empty object");
    for (;;) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"')
            return fail(s, "expected a string key");
        char *key;
        if (scan_string(s, true, &key) != 0)
            return RMQ_EPROTO;
        for (size_t i = 0; i < ps->n; i++)
            if (!strcmp(ps->v[i].key, key))
                return fail(s, "duplicate key");
        if (ps->n == MAX_PAIRS)
            return fail(s, "too many keys");
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return fail(s, "expected ':'");
        s->p++;
        skip_ws(s);
        unsigned char *v = s->p;
        if (skip_value(s, 2) != 0)
            return RMQ_EPROTO;
        ps->v[ps->n++] = (struct pair){key, v, s->p};
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}')
            break;
        return fail(s, "expected ',' or '}'");
    }
    s->p++;
    skip_ws(s);
    return s->p == s->end ? RMQ_OK : fail(s, "text after the object");
}

/* ---- phase two: interpreting values ---- */

struct ctx {
    struct trace_decoder *d;
    size_t lineno;
    const unsigned char *base;
};

static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ctx *c, const char *fmt, ...)
{
    int n = snprintf(c->d->error, sizeof c->d->error, "line %zu: ", c->lineno);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof c->d->error)
        vsnprintf(c->d->error + n, sizeof c->d->error - (size_t)n, fmt, ap);
    va_end(ap);
    return RMQ_EPROTO;
}

static const struct pair *find(const struct pairs *ps, const char *key)
{
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->v[i].key, key))
            return &ps->v[i];
    return NULL;
}

/* Strict JSON integer in [lo, hi] (no fraction, no exponent). */
static int get_int(struct ctx *c, const struct pair *p, int64_t lo, int64_t hi, int64_t *out)
{
    const unsigned char *q = p->val;
    bool neg = q < p->val_end && *q == '-';
    if (neg)
        q++;
    if (q >= p->val_end || !is_digit(*q))
        return bad(c, "\"%s\" must be an integer", p->key);
    uint64_t v = 0;
    for (; q < p->val_end; q++) {
        if (!is_digit(*q))
            return bad(c, "\"%s\" must be an integer", p->key);
        unsigned dgt = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - dgt) / 10)
            return bad(c, "\"%s\" is out of range", p->key);
        v = v * 10 + dgt;
    }
    if ((neg && v > (uint64_t)INT64_MAX + 1) || (!neg && v > (uint64_t)INT64_MAX))
        return bad(c, "\"%s\" is out of range", p->key);
    int64_t x = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (x < lo || x > hi)
        return bad(c, "\"%s\" is out of range", p->key);
    *out = x;
    return RMQ_OK;
}

static int get_u64(struct ctx *c, const struct pair *p, uint64_t *out)
{
    uint64_t v = 0;
    const unsigned char *q = p->val;
    if (q >= p->val_end || !is_digit(*q))
        return bad(c, "\"%s\" must be a non-negative integer", p->key);
    for (; q < p->val_end; q++) {
        unsigned dgt = (unsigned)(*q - '0');
        if (!is_digit(*q))
            return bad(c, "\"%s\" must be a non-negative integer", p->key);
        if (v > (UINT64_MAX - dgt) / 10)
            return bad(c, "\"%s\" is out of range", p->key);
        v = v * 10 + dgt;
    }
    *out = v;
    return RMQ_OK;
}

/* Unescapes a string value in place. */
static int get_str(struct ctx *c, const struct pair *p, const char **out)
{
    if (*p->val != '"')
        return bad(c, "\"%s\" must be a string", p->key);
    struct scan s = {p->val, p->val_end, c->base, NULL, 0};
    char *v;
    if (scan_string(&s, true, &v) != 0)
        return bad(c, "\"%s\": %s", p->key, s.err);
    *out = v;
    return RMQ_OK;
}

