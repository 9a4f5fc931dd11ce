/* util.h — the small helpers every folder used to write for itself: growing
 * an array, parsing a whole decimal integer, comparing string pointers for
 * qsort. One copy here so their edge cases (overflow, signs, trailing bytes)
 * are decided once. Pure; any thread.
 */
#ifndef RMQ_UTIL_H
#define RMQ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Makes room for need elements of elem bytes in the array *arr (owned by
 * the caller, allocated with the mem.h funnel or NULL) whose capacity is
 * *cap: when need > *cap, reallocates to the first of first, 2 * first, ...
 * (starting from 2 * *cap when *cap is non-zero) that holds need. Returns 0,
 * or RMQ_ENOMEM with *arr and *cap unchanged (also when the byte size would
 * overflow). The new tail is uninitialised. */
int rmq_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first);

/* rmq_grow for a typed array pointer lvalue: RMQ_GROW(s->items, s->cap, s->n + 1, 16). */
#define RMQ_GROW(arr, cap, need, first) rmq_grow((void **)&(arr), &(cap), (need), sizeof *(arr), (first))

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

/* qsort/bsearch comparator for an array of C-string pointers (char * or
 * const char *): byte order, as strcmp. */
int rmq_strp_cmp(const void *a, const void *b);

#endif
