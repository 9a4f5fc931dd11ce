/* trace_fmt_internal.h — helpers shared by trace_fmt.c (decode) and
 * trace_fmt_enc.c (encode). Not part of the module's interface. */
#ifndef RMQ_TRACE_FMT_INTERNAL_H
#define RMQ_TRACE_FMT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, at most U+10FFFF), or 0 when the bytes there are not one. */
size_t trace_fmt_utf8_len(const unsigned char *p, const unsigned char *end);

extern const char trace_fmt_b64[65];

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
