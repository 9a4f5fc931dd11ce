/* mem.c — see mem.h. */
#include "mem.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_countdown = -1;

/* Returns 1 when the fault hook says this allocation must fail. */
static int should_fail(void)
{
    long v = atomic_load(&fail_countdown);
    if (v < 0)
        return 0;
    if (v == 0)
        return 1;
    atomic_fetch_sub(&fail_countdown, 1);
    return 0;
}

void rmq_mem_fail_after(long n)
{
    atomic_store(&fail_countdown, n);
}

void *rmq_malloc(size_t n)
{
    return should_fail() ? NULL : malloc(n ? n : 1);
}

void *rmq_calloc(size_t count, size_t n)
{
    return should_fail() ? NULL : calloc(count ? count : 1, n ? n : 1);
}

void *rmq_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : realloc(p, n ? n : 1);
}

void rmq_free(void *p)
{
    free(p);
}

char *rmq_strndup(const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *d = rmq_malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *rmq_strdup(const char *s)
{
    return s ? rmq_strndup(s, strlen(s)) : NULL;
}

static void *json_malloc_hook(size_t n)
{
    return rmq_malloc(n);
}

void rmq_mem_install_jansson(void)
{
    json_set_alloc_funcs(json_malloc_hook, rmq_free);
}
