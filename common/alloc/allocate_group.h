/* allocate_group.h — every consumer of a group allocated in one pass, with
 * the owners view (allocate_group.c). Pure; any thread. */
#ifndef RMQ_ALLOCATE_GROUP_H
#define RMQ_ALLOCATE_GROUP_H

#include "allocate_types.h"

#include <stddef.h>

/* Allocates the whole group in one pass: sorts in->queues and in->consumers
 * as the client does, then gives each consumer (in sorted order) exactly what
 * allocate_one() would give it on the sorted lists, and fills the owners
 * view. Returns 0 with *out new (allocate_result_free), or the errors of
 * allocate_one() (no current_cid here: an empty consumer id is RMQ_EINVAL
 * for every strategy but CONFIG), RMQ_E2BIG over ALLOCATE_MAX_ASSIGNED.
 * CONFIG accepts empty lists. */
int allocate_group(const struct allocate_options *opt, const struct allocate_input *in,
                   struct allocate_result **out, char *err, size_t err_len);

/* Frees a result; NULL is fine. */
void allocate_result_free(struct allocate_result *r);

/* Index of the first occurrence of cid in r->consumers. Returns 0 or
 * RMQ_ENOTFOUND. */
int allocate_result_find(const struct allocate_result *r, const char *cid, size_t *index);

#endif
