/* trace_fmt_scan.h — the strict JSON scanner under the trace decoder
 * (trace_fmt_scan.c): strings (validated UTF-8, escapes decoded in place),
 * numbers, literals and containers with a depth bound, never reading past
 * the end; and the searches the replayer's pre-pass uses. Pure; any
 * thread. */
#ifndef RMQ_TRACE_FMT_SCAN_H
#define RMQ_TRACE_FMT_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* memmem(hay, n, needle, m), for finding lines worth decoding: 16 bytes a
 * step where SSE2 is there (x86-64 always), memmem elsewhere. */
const char *trace_find(const char *hay, size_t n, const char *needle, size_t m);

/* Whether p[0..len) is exactly one strict JSON value (whitespace around it
 * allowed), nested at most TRACE_FMT_MAX_DEPTH. */
bool trace_json_valid(const uint8_t *p, size_t len);

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, at most U+10FFFF), or 0 when the bytes there are not one. */
size_t trace_fmt_utf8_len(const unsigned char *p, const unsigned char *end);

/* The strict JSON scanner (trace_fmt_scan.c) over a mutable byte range. */
struct scan {
    unsigned char *p, *end;
    const unsigned char *base;
    const char *err; /* static reason of the first failure */
    size_t col;      /* 1-based column of the failure */
};

/* Records the first failure (static reason, column) and returns RMQ_EPROTO. */
int trace_scan_fail(struct scan *s, const char *why);
void trace_scan_ws(struct scan *s);
/* The string at s->p (on its quote); with unescape, decoded in place and
 * NUL-terminated, *out its start. */
int trace_scan_string(struct scan *s, bool unescape, char **out);
/* Validates one value at s->p and moves past it. */
int trace_scan_value(struct scan *s, int depth);

static inline bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

#endif
