/* mem.h — the allocation funnel.
 *
 * All project code allocates through these so a test build can fail the Nth
 * allocation on purpose (rmq_mem_fail_after). jansson is pointed at the same
 * funnel by rmq_mem_install_jansson(). The functions follow malloc's contract:
 * returned memory is new and owned by the caller. Thread-safe (the fault
 * counter is only meant for single-threaded unit tests).
 */
#ifndef RMQ_MEM_H
#define RMQ_MEM_H

#include <stddef.h>

void *rmq_malloc(size_t n);
void *rmq_calloc(size_t count, size_t n);
void *rmq_realloc(void *p, size_t n);
void rmq_free(void *p);
/* New copy of s (NULL for NULL or on failure). */
char *rmq_strdup(const char *s);
/* New NUL-terminated copy of the first n bytes of s. */
char *rmq_strndup(const char *s, size_t n);

/* Test hook: after `n` more successful allocations, every allocation fails
 * until rmq_mem_fail_after(-1) is called. -1 disables (the default). */
void rmq_mem_fail_after(long n);

/* Makes jansson allocate through the funnel; call before any thread starts. */
void rmq_mem_install_jansson(void);

#endif
