/* held_pulls.c — the table of held pulls (see held_pulls.h). Loop thread only. */
#include "held_pulls.h"

#include "array.h"
#include "err.h"
#include "mem.h"

#include <assert.h>

#define HELD_PULLS_FIRST_CAP 64

#ifndef NDEBUG
/* The table has room for what it holds, and every hold owns its names (a
 * released hold's strings are freed and the hold dropped at once). */
static int held_pulls_sanity(const struct held_pulls *p)
{
    assert(p->n <= p->cap);
    assert(p->items != NULL || p->cap == 0);
    for (size_t i = 0; i < p->n; i++)
        assert(p->items[i].group && p->items[i].topic);
    return 1;
}
#endif

int held_pulls_add(struct held_pulls *p, const struct held_pull *h)
{
    if (RMQ_GROW(p->items, p->cap, p->n + 1, HELD_PULLS_FIRST_CAP) != 0)
        return RMQ_ENOMEM;
    p->items[p->n++] = *h;
    assert(held_pulls_sanity(p));
    return RMQ_OK;
}

void held_pulls_release(struct held_pulls *p, held_pull_pick pick, const void *arg, held_pull_answer answer,
                        void *ctx)
{
    size_t w = 0;
    for (size_t r = 0; r < p->n; r++) {
        struct held_pull *h = &p->items[r];
        if (!pick(h, arg)) {
            p->items[w++] = *h;
            continue;
        }
        if (answer)
            answer(ctx, h);
        rmq_free(h->group);
        rmq_free(h->topic);
    }
    assert(w <= p->n);
    p->n = w;
    assert(held_pulls_sanity(p));
}

void held_pulls_forget_conn(struct held_pulls *p, const struct conn *c)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->items[i].conn == c)
            p->items[i].conn = NULL;
    assert(held_pulls_sanity(p));
}

static bool any(const struct held_pull *h, const void *arg)
{
    (void)h;
    (void)arg;
    return true;
}

void held_pulls_free(struct held_pulls *p)
{
    held_pulls_release(p, any, NULL, NULL, NULL);
    assert(p->n == 0); /* any() released every hold */
    rmq_free(p->items);
    p->items = NULL;
    p->n = p->cap = 0;
}
