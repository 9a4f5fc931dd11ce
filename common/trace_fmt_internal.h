/* trace_fmt_internal.h — helpers shared by trace_fmt.c (decode) and
 * trace_fmt_enc.c (encode). Not part of the module's interface. */
#ifndef RMQ_TRACE_FMT_INTERNAL_H
#define RMQ_TRACE_FMT_INTERNAL_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, at most U+10FFFF), or 0 when the bytes there are not one. */
size_t trace_fmt_utf8_len(const unsigned char *p, const unsigned char *end);

extern const char trace_fmt_b64[65];

#endif
