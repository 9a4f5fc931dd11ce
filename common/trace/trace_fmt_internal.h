/* trace_fmt_internal.h — helpers shared by trace_fmt.c (decode),
 * trace_fmt_cache.c (its line cache) and trace_fmt_enc.c (encode). Not part of the module's interface. */
#ifndef RMQ_TRACE_FMT_INTERNAL_H
#define RMQ_TRACE_FMT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

struct trace_decoder;
struct trace_event;

/* The line cache (trace_fmt_cache.c). trace_line_hit: whether line equals a
 * cached request line but for "ts", then *ev is that decode with this ts.
 * trace_line_remember: keeps a request line that decoded in full, its
 * unescaped copy at p (failing to keep it costs only speed). */
bool trace_line_hit(struct trace_decoder *d, const unsigned char *line, size_t len, struct trace_event *ev);
void trace_line_remember(struct trace_decoder *d, const unsigned char *line, size_t len, const unsigned char *p,
                         struct trace_event *ev);
void trace_line_cache_free(struct trace_decoder *d);

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
