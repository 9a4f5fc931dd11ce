/* array.h — growing a caller-owned array, and ordering arrays of strings:
 * one copy, so overflow and first-capacity edge cases are decided once.
 * Pure; any thread. */
#ifndef RMQ_ARRAY_H
#define RMQ_ARRAY_H

#include <stddef.h>

/* Makes room for need elements of elem bytes in the array *arr (owned by
 * the caller, allocated with the mem.h funnel or NULL) whose capacity is
 * *cap: when need > *cap, reallocates to the first of first, 2 * first, ...
 * (starting from 2 * *cap when *cap is non-zero) that holds need. Returns 0,
 * or RMQ_ENOMEM with *arr and *cap unchanged (also when the byte size would
 * overflow). The new tail is uninitialised. */
int rmq_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first);

/* rmq_grow for a typed array pointer lvalue: RMQ_GROW(s->items, s->cap, s->n + 1, 16). */
#define RMQ_GROW(arr, cap, need, first) rmq_grow((void **)&(arr), &(cap), (need), sizeof *(arr), (first))

/* qsort/bsearch comparator for an array of C-string pointers (char * or
 * const char *): byte order, as strcmp. */
int rmq_strp_cmp(const void *a, const void *b);

/* A string and where it stood, to sort strings stably: equal strings keep
 * their order (rmq_str_pos_cmp). */
struct rmq_str_pos {
    const char *s;
    size_t pos;
};
/* qsort comparator for struct rmq_str_pos: by s as strcmp, then by pos. */
int rmq_str_pos_cmp(const void *a, const void *b);

#endif
