/* array.c — see array.h. Pure; any thread. */
#include "array.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

int rmq_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    assert(*arr != NULL || *cap == 0); /* a capacity with no storage is a stale cap */
    if (need <= *cap)
        return RMQ_OK;
    size_t nc = *cap ? *cap : (first ? first : 1);
    if (*cap)
        nc = nc > SIZE_MAX / 2 ? SIZE_MAX : nc * 2;
    while (nc < need)
        nc = nc > SIZE_MAX / 2 ? SIZE_MAX : nc * 2;
    if (elem && nc > SIZE_MAX / elem) {
        /* Doubling overshot what fits in size_t: settle for exactly need. */
        if (need > SIZE_MAX / elem)
            return RMQ_ENOMEM;
        nc = need;
    }
    assert(nc >= need && nc > *cap);
    void *p = rmq_realloc(*arr, nc * elem);
    if (!p)
        return RMQ_ENOMEM;
    *arr = p;
    *cap = nc;
    return RMQ_OK;
}

int rmq_strp_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rmq_str_pos_cmp(const void *a, const void *b)
{
    const struct rmq_str_pos *x = a, *y = b;
    int d = strcmp(x->s, y->s);
    return d ? d : (x->pos > y->pos) - (x->pos < y->pos);
}
