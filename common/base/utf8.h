/* utf8.h — UTF-8 validity, as names and JSON output need it. Pure. */
#ifndef RMQ_UTF8_H
#define RMQ_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1..4) of the valid UTF-8 sequence at p, or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are invalid).
 * Reads at most 4 bytes and stops at a NUL (p must be NUL-terminated or have
 * 4 readable bytes). */
size_t utf8_seq_len(const unsigned char *p);
/* Whether s[0..n) is valid UTF-8 with no NUL byte (s is NUL-terminated at
 * or after n, so a truncated sequence at the end is read safely). */
bool utf8_valid(const char *s, size_t n);

#endif
