/* pending.c — see pending.h. Caller's thread only (the loop). */
#include "pending.h"

#include "array.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <string.h>

/* One connection's requests, in send order. */
struct pending_conn {
    struct pending_req *first, *last;
    size_t n;
};

#define KEY_LEN (sizeof(uintptr_t) + sizeof(int32_t))

/* The hash key of (conn, opaque): the bytes, so no padding is hashed. */
static void req_key(uint8_t key[KEY_LEN], const void *conn, int32_t opaque)
{
    uintptr_t p = (uintptr_t)conn;
    memcpy(key, &p, sizeof p);
    memcpy(key + sizeof p, &opaque, sizeof opaque);
}

static struct pending_conn *conn_list(const struct pending_table *t, const void *conn)
{
    uintptr_t p = (uintptr_t)conn;
    return hashmap_get(&t->by_conn, &p, sizeof p);
}

/* ---- the deadline heap: ordered by (deadline, seq) ---- */

static bool before(const struct pending_req *a, const struct pending_req *b)
{
    return a->deadline_ms < b->deadline_ms || (a->deadline_ms == b->deadline_ms && a->seq < b->seq);
}

static void heap_set(struct pending_table *t, size_t i, struct pending_req *r)
{
    t->heap[i] = r;
    r->heap_at = i;
}

static void heap_up(struct pending_table *t, size_t i)
{
    struct pending_req *r = t->heap[i];
    while (i > 0 && before(r, t->heap[(i - 1) / 2])) {
        heap_set(t, i, t->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(t, i, r);
}

static void heap_down(struct pending_table *t, size_t i)
{
    struct pending_req *r = t->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= t->nheap)
            break;
        if (c + 1 < t->nheap && before(t->heap[c + 1], t->heap[c]))
            c++;
        if (!before(t->heap[c], r))
            break;
        heap_set(t, i, t->heap[c]);
        i = c;
    }
    heap_set(t, i, r);
}

static void heap_remove(struct pending_table *t, struct pending_req *r)
{
    size_t i = r->heap_at;
    assert(i < t->nheap && t->heap[i] == r);
    struct pending_req *last = t->heap[--t->nheap];
    if (last == r)
        return;
    heap_set(t, i, last);
    heap_up(t, i);
    heap_down(t, last->heap_at);
}

/* ---- table ---- */

int pending_init(struct pending_table *t, void *owner, size_t max_per_conn)
{
    assert(max_per_conn > 0);
    memset(t, 0, sizeof *t);
    t->owner = owner;
    t->max_per_conn = max_per_conn;
    hashmap_init(&t->by_key);
    hashmap_init(&t->by_conn);
    return RMQ_OK;
}

/* Takes r out of every index (its memory stays the caller's to free). */
static void unlink_req(struct pending_table *t, struct pending_req *r)
{
    uint8_t key[KEY_LEN];
    req_key(key, r->conn, r->opaque);
    struct pending_req *found = hashmap_remove(&t->by_key, key, sizeof key);
    assert(found == r);
    (void)found;
    heap_remove(t, r);
    struct pending_conn *pc = conn_list(t, r->conn);
    assert(pc && pc->n > 0);
    if (r->conn_prev)
        r->conn_prev->conn_next = r->conn_next;
    else
        pc->first = r->conn_next;
    if (r->conn_next)
        r->conn_next->conn_prev = r->conn_prev;
    else
        pc->last = r->conn_prev;
    if (--pc->n == 0) {
        uintptr_t p = (uintptr_t)r->conn;
        (void)hashmap_remove(&t->by_conn, &p, sizeof p);
        rmq_free(pc);
    }
    if (r->prev)
        r->prev->next = r->next;
    else
        t->first = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        t->last = r->prev;
}

/* Removes r, runs its callback once with resp, frees it. */
static void finish(struct pending_table *t, struct pending_req *r, const struct rmq_cmd *resp)
{
    unlink_req(t, r);
    pending_cb cb = r->cb;
    void *ctx = r->ctx;
    rmq_free(r);
    cb(t->owner, ctx, resp);
}

/* Runs (with NULL) and frees a chain of requests already taken out of
 * every index, linked through next. Taking them all out first means a
 * callback that adds requests, even due ones, never makes the caller's
 * loop longer, and never sees a request that is about to be failed. */
static size_t fail_chain(struct pending_table *t, struct pending_req *chain)
{
    size_t n = 0;
    while (chain) {
        struct pending_req *r = chain;
        chain = r->next;
        pending_cb cb = r->cb;
        void *ctx = r->ctx;
        rmq_free(r);
        cb(t->owner, ctx, NULL);
        n++;
    }
    return n;
}

/* Takes r out of every index and appends it to the chain ending at *tail. */
static void detach(struct pending_table *t, struct pending_req *r, struct pending_req ***tail)
{
    unlink_req(t, r);
    r->next = NULL;
    **tail = r;
    *tail = &r->next;
}

int pending_add(struct pending_table *t, const void *conn, int32_t opaque, int64_t deadline_ms, pending_cb cb,
                void *ctx)
{
    assert(cb);
    uint8_t key[KEY_LEN];
    req_key(key, conn, opaque);
    if (hashmap_get(&t->by_key, key, sizeof key))
        return RMQ_EEXIST;
    struct pending_conn *pc = conn_list(t, conn);
    if (pc && pc->n >= t->max_per_conn)
        return RMQ_E2BIG;
    if (RMQ_GROW(t->heap, t->heap_cap, t->nheap + 1, 16) != 0)
        return RMQ_ENOMEM;
    struct pending_req *r = rmq_calloc(1, sizeof *r);
    if (!r)
        return RMQ_ENOMEM;
    bool new_list = !pc;
    uintptr_t p = (uintptr_t)conn;
    if (new_list &&
        (!(pc = rmq_calloc(1, sizeof *pc)) || hashmap_put(&t->by_conn, &p, sizeof p, pc, NULL) != 0))
        goto fail_list;
    if (hashmap_put(&t->by_key, key, sizeof key, r, NULL) != 0)
        goto fail_key;
    *r = (struct pending_req){.conn = conn,
                              .opaque = opaque,
                              .deadline_ms = deadline_ms,
                              .seq = t->next_seq++,
                              .cb = cb,
                              .ctx = ctx};
    r->conn_prev = pc->last;
    if (pc->last)
        pc->last->conn_next = r;
    else
        pc->first = r;
    pc->last = r;
    pc->n++;
    r->prev = t->last;
    if (t->last)
        t->last->next = r;
    else
        t->first = r;
    t->last = r;
    t->heap[t->nheap++] = r;
    heap_up(t, t->nheap - 1);
    pending_sanity(t);
    return RMQ_OK;

fail_key:
    if (new_list)
        (void)hashmap_remove(&t->by_conn, &p, sizeof p);
fail_list:
    if (new_list)
        rmq_free(pc);
    rmq_free(r);
    return RMQ_ENOMEM;
}

bool pending_complete(struct pending_table *t, const void *conn, int32_t opaque, const struct rmq_cmd *resp)
{
    uint8_t key[KEY_LEN];
    req_key(key, conn, opaque);
    struct pending_req *r = hashmap_get(&t->by_key, key, sizeof key);
    if (!r)
        return false;
    finish(t, r, resp);
    pending_sanity(t);
    return true;
}

bool pending_cancel(struct pending_table *t, const void *conn, int32_t opaque)
{
    uint8_t key[KEY_LEN];
    req_key(key, conn, opaque);
    struct pending_req *r = hashmap_get(&t->by_key, key, sizeof key);
    if (!r)
        return false;
    unlink_req(t, r);
    rmq_free(r);
    pending_sanity(t);
    return true;
}

size_t pending_expire(struct pending_table *t, int64_t now_ms)
{
    struct pending_req *chain = NULL, **tail = &chain;
    while (t->nheap > 0 && t->heap[0]->deadline_ms <= now_ms)
        detach(t, t->heap[0], &tail);
    pending_sanity(t);
    return fail_chain(t, chain);
}

size_t pending_drop_conn(struct pending_table *t, const void *conn)
{
    struct pending_req *chain = NULL, **tail = &chain;
    struct pending_conn *pc;
    while ((pc = conn_list(t, conn)) != NULL)
        detach(t, pc->first, &tail);
    pending_sanity(t);
    return fail_chain(t, chain);
}

void pending_free(struct pending_table *t)
{
    if (t->max_per_conn == 0)
        return; /* never set up */
    /* A callback may send again; a few rounds answer what it sent. Past
     * them the rest is dropped without a call: the owner is going away. */
    for (int round = 0; round < 8 && t->first; round++) {
        struct pending_req *chain = NULL, **tail = &chain;
        while (t->first)
            detach(t, t->first, &tail);
        (void)fail_chain(t, chain);
    }
    while (t->first) {
        struct pending_req *r = t->first;
        unlink_req(t, r);
        rmq_free(r);
    }
    assert(t->nheap == 0 && t->by_key.count == 0 && t->by_conn.count == 0);
    hashmap_free(&t->by_key, NULL);
    hashmap_free(&t->by_conn, NULL);
    rmq_free(t->heap);
    memset(t, 0, sizeof *t);
}

int64_t pending_next_deadline(const struct pending_table *t)
{
    return t->nheap ? t->heap[0]->deadline_ms : INT64_MAX;
}

size_t pending_count(const struct pending_table *t)
{
    return t->nheap;
}

size_t pending_count_conn(const struct pending_table *t, const void *conn)
{
    const struct pending_conn *pc = conn_list(t, conn);
    return pc ? pc->n : 0;
}

struct pending_req *pending_first(const struct pending_table *t)
{
    return t->first;
}

void pending_sanity(const struct pending_table *t)
{
#ifndef NDEBUG
    assert(t->by_key.count == t->nheap);
    assert(t->nheap <= t->heap_cap || t->heap_cap == 0);
    assert((t->first == NULL) == (t->nheap == 0) && (t->last == NULL) == (t->nheap == 0));
    /* Full walks only while small: the sanity check must not make a big
     * table quadratic in a debug build. */
    if (t->nheap > 64)
        return;
    size_t n = 0;
    for (const struct pending_req *r = t->first; r; r = r->next, n++) {
        assert(r->heap_at < t->nheap && t->heap[r->heap_at] == r);
        assert(!r->next || r->next->prev == r);
        assert(!r->next || r->seq < r->next->seq);
        assert(r->heap_at == 0 || !before(r, t->heap[(r->heap_at - 1) / 2]));
        const struct pending_conn *pc = conn_list(t, r->conn);
        assert(pc && pc->n > 0 && pc->n <= t->max_per_conn);
    }
    assert(n == t->nheap);
#else
    (void)t;
#endif
}
