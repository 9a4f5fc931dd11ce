/* parse_int.h — the one integer parser: flags, query parameters and
 * protocol fields all go through it, so they agree on what a number is.
 * Pure; any thread. */
#ifndef RMQ_PARSE_INT_H
#define RMQ_PARSE_INT_H

#include <stddef.h>
#include <stdint.h>

/* Parses the n bytes at s (no NUL needed) as a whole decimal integer
 * within [min, max], the shape Java's Long.parseLong accepts: an optional
 * '-' or '+' then digits, nothing else (no spaces, no trailing bytes, no
 * base prefix), overflow-checked. 0 with *out set, or RMQ_EINVAL with *out
 * unchanged. The one integer parser: flags, query parameters and protocol
 * fields all go through it, so they agree on what a number is. */
int rmq_parse_i64_n(const char *s, size_t n, int64_t min, int64_t max, int64_t *out);
/* The same for the NUL-terminated s (NULL is RMQ_EINVAL). */
int rmq_parse_i64_range(const char *s, int64_t min, int64_t max, int64_t *out);
/* The same over the whole int64 range. */
static inline int rmq_parse_i64(const char *s, int64_t *out)
{
    return rmq_parse_i64_range(s, INT64_MIN, INT64_MAX, out);
}

/* The value (0 to 15) of the hex digit c, either case; -1 for anything else. */
static inline int rmq_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
