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
/* The code point of the valid k-byte sequence at p (k from utf8_seq_len). */
unsigned utf8_decode(const unsigned char *p, size_t k);
/* Whether valid UTF-8 s[0..n) holds a code point that changes how a
 * terminal or a page shows the text around it: C1 controls (U+0080..U+009F,
 * U+009B is a CSI), bidirectional marks, embeddings, overrides and isolates
 * (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069). A name with one
 * could pass for another name when printed. */
bool utf8_has_controls(const char *s, size_t n);

#endif
