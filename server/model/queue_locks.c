/* queue_locks.c — the queue-lock table (see queue_locks.h). Loop thread only. */
#include "queue_locks.h"

#include "mem.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

struct queue_lock {
    char *client_id; /* owned */
    int64_t renewed_ms;
};

/* Names are bounded by the request limits; a longer key is cut, which only
 * makes two over-long names share a lock. */
#define QUEUE_LOCK_KEY_MAX 1024

static size_t lock_key(char *out, size_t cap, const char *group, const struct rmq_mq *mq)
{
    int n =
        snprintf(out, cap, "%s%c%s%c%s%c%d", group, 0, mq->topic, 0, mq->broker_name, 0, (int)mq->queue_id);
    return n < 0 ? 0 : ((size_t)n >= cap ? cap - 1 : (size_t)n);
}

static void free_lock(void *p)
{
    struct queue_lock *l = p;
    if (l)
        rmq_free(l->client_id);
    rmq_free(l);
}

void queue_locks_init(struct queue_locks *q)
{
    hashmap_init(&q->map);
}

void queue_locks_free(struct queue_locks *q)
{
#ifndef NDEBUG
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&q->map, &b); e; e = hashmap_next(&q->map, e, &b))
        assert(((const struct queue_lock *)e->val)->client_id); /* no lock without a holder */
#endif
    hashmap_free(&q->map, free_lock);
}

#ifndef NDEBUG
/* A lock always has a holder; the one just taken or renewed is held by
 * client as of now_ms. */
static int lock_sanity(const struct queue_lock *l, const char *client, int64_t now_ms)
{
    assert(l && l->client_id && !strcmp(l->client_id, client));
    assert(l->renewed_ms == now_ms);
    return 1;
}
#endif

bool queue_locks_acquire(struct queue_locks *q, const char *group, const char *client,
                         const struct rmq_mq *mq, int64_t now_ms, int64_t lease_ms)
{
    char key[QUEUE_LOCK_KEY_MAX];
    size_t n = lock_key(key, sizeof key, group, mq);
    struct queue_lock *l = hashmap_get(&q->map, key, n);
    if (l) {
        bool mine = !strcmp(l->client_id, client);
        if (!mine && now_ms - l->renewed_ms <= lease_ms)
            return false;
        if (!mine) {
            char *id = rmq_strdup(client);
            if (!id)
                return false;
            rmq_free(l->client_id);
            l->client_id = id;
        }
        l->renewed_ms = now_ms;
        assert(lock_sanity(l, client, now_ms));
        return true;
    }
    l = rmq_calloc(1, sizeof *l);
    if (!l)
        return false;
    l->client_id = rmq_strdup(client);
    l->renewed_ms = now_ms;
    if (!l->client_id || hashmap_put(&q->map, key, n, l, NULL) != 0) {
        free_lock(l);
        return false;
    }
    assert(lock_sanity(hashmap_get(&q->map, key, n), client, now_ms));
    return true;
}

void queue_locks_release(struct queue_locks *q, const char *group, const char *client,
                         const struct rmq_mq *mq)
{
    char key[QUEUE_LOCK_KEY_MAX];
    size_t n = lock_key(key, sizeof key, group, mq);
    struct queue_lock *l = hashmap_get(&q->map, key, n);
    if (l && !strcmp(l->client_id, client))
        free_lock(hashmap_remove(&q->map, key, n));
    /* Released when it was client's; another holder's lock stays. */
    assert(!hashmap_get(&q->map, key, n) || (l && strcmp(l->client_id, client) != 0));
}

const char *queue_locks_holder(const struct queue_locks *q, const char *group, const struct rmq_mq *mq)
{
    char key[QUEUE_LOCK_KEY_MAX];
    size_t n = lock_key(key, sizeof key, group, mq);
    const struct queue_lock *l = hashmap_get(&q->map, key, n);
    return l ? l->client_id : NULL;
}
