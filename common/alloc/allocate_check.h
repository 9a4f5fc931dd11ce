/* allocate_check.h — the checks of the allocation inputs and options that
 * allocate_one() and allocate_group() share (allocate_check.c). Pure; any
 * thread. */
#ifndef RMQ_ALLOCATE_CHECK_H
#define RMQ_ALLOCATE_CHECK_H

#include "allocate_types.h"

#include <stddef.h>

/* Each returns 0 or
 * RMQ_EINVAL with err set; what names the list in the message. */
int allocate_queues_check(const struct allocate_queue *q, size_t n, const char *what, char *err,
                          size_t err_len);
int allocate_strings_check(const char *const *v, size_t n, const char *what, char *err, size_t err_len);
/* The options on their own (what Java constructors and setters reject). */
int allocate_options_check(const struct allocate_options *opt, char *err, size_t err_len);
/* Both lists present and non-empty (Java's check()). */
int allocate_input_check(const struct allocate_input *in, char *err, size_t err_len);

#endif
