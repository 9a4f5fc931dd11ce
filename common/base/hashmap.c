/* hashmap.c — see hashmap.h. FNV-1a hashing, power-of-two bucket counts,
 * doubling when the load factor passes 1. */
#include "hashmap.h"

#include "array.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const void *key, size_t klen)
{
    const unsigned char *p = key;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < klen; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

#ifndef NDEBUG
/* One entry: it hashes to what it remembers and sits in its hash's bucket. */
static int entry_sanity(const struct hashmap *m, const struct hashmap_entry *e, size_t bucket)
{
    assert(e->hash == hash_bytes(e->key, e->klen));
    assert((e->hash & (m->nbuckets - 1)) == bucket);
    assert(e->key[e->klen] == 0);
    return 1;
}

/* The cheap part, for every mutator: a power-of-two bucket count (masking
 * picks the bucket) that put keeps at or above the count (load factor 1). */
static int shape_sanity(const struct hashmap *m)
{
    assert((m->nbuckets & (m->nbuckets - 1)) == 0);
    assert(m->count <= m->nbuckets);
    assert((m->buckets == NULL) == (m->nbuckets == 0));
    return 1;
}
#endif

bool hashmap_sanity(const struct hashmap *m)
{
    assert(shape_sanity(m));
    size_t n = 0;
    for (size_t b = 0; b < m->nbuckets; b++) {
        for (const struct hashmap_entry *e = m->buckets[b]; e; e = e->next) {
            assert(entry_sanity(m, e, b));
            n++;
        }
    }
    assert(n == m->count);
    return n == m->count;
}

void hashmap_init(struct hashmap *m)
{
    m->buckets = NULL;
    m->nbuckets = 0;
    m->count = 0;
}

void hashmap_free(struct hashmap *m, void (*free_val)(void *val))
{
    assert(hashmap_sanity(m)); /* freeing walks every entry anyway */
    for (size_t b = 0; b < m->nbuckets; b++) {
        struct hashmap_entry *e = m->buckets[b];
        while (e) {
            struct hashmap_entry *next = e->next;
            if (free_val)
                free_val(e->val);
            rmq_free(e);
            e = next;
        }
    }
    rmq_free(m->buckets);
    hashmap_init(m);
}

static struct hashmap_entry **find_slot(const struct hashmap *m, const void *key, size_t klen, uint64_t h)
{
    if (m->nbuckets == 0)
        return NULL;
    struct hashmap_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
    while (*pp) {
        if ((*pp)->hash == h && (*pp)->klen == klen && memcmp((*pp)->key, key, klen) == 0)
            return pp;
        pp = &(*pp)->next;
    }
    return pp;
}

void *hashmap_get(const struct hashmap *m, const void *key, size_t klen)
{
    struct hashmap_entry **pp = find_slot(m, key, klen, hash_bytes(key, klen));
    return pp && *pp ? (*pp)->val : NULL;
}

static int grow(struct hashmap *m)
{
    size_t n = m->nbuckets ? m->nbuckets * 2 : 16;
    struct hashmap_entry **nb = rmq_calloc(n, sizeof *nb);
    if (!nb)
        return RMQ_ENOMEM;
    for (size_t b = 0; b < m->nbuckets; b++) {
        struct hashmap_entry *e = m->buckets[b];
        while (e) {
            struct hashmap_entry *next = e->next;
            size_t i = e->hash & (n - 1);
            e->next = nb[i];
            nb[i] = e;
            e = next;
        }
    }
    rmq_free(m->buckets);
    m->buckets = nb;
    m->nbuckets = n;
    assert(hashmap_sanity(m)); /* rehashing walked every entry anyway */
    return RMQ_OK;
}

int hashmap_put(struct hashmap *m, const void *key, size_t klen, void *val, void **old)
{
    uint64_t h = hash_bytes(key, klen);
    if (old)
        *old = NULL;
    struct hashmap_entry **pp = find_slot(m, key, klen, h);
    if (pp && *pp) {
        if (old)
            *old = (*pp)->val;
        (*pp)->val = val;
        assert(shape_sanity(m));
        return RMQ_OK;
    }
    if (m->count >= m->nbuckets) {
        if (grow(m) != 0)
            return RMQ_ENOMEM;
    }
    struct hashmap_entry *e = rmq_malloc(sizeof *e + klen + 1);
    if (!e)
        return RMQ_ENOMEM;
    e->hash = h;
    e->val = val;
    e->klen = klen;
    memcpy(e->key, key, klen);
    e->key[klen] = 0;
    size_t i = h & (m->nbuckets - 1);
    e->next = m->buckets[i];
    m->buckets[i] = e;
    m->count++;
    assert(shape_sanity(m) && entry_sanity(m, e, i));
    return RMQ_OK;
}

void *hashmap_remove(struct hashmap *m, const void *key, size_t klen)
{
    struct hashmap_entry **pp = find_slot(m, key, klen, hash_bytes(key, klen));
    if (!pp || !*pp)
        return NULL;
    struct hashmap_entry *e = *pp;
    void *val = e->val;
    assert(m->count > 0);
    assert(entry_sanity(m, e, e->hash & (m->nbuckets - 1)));
    *pp = e->next;
    rmq_free(e);
    m->count--;
    assert(shape_sanity(m));
    return val;
}

struct hashmap_entry *hashmap_first(const struct hashmap *m, size_t *bucket)
{
    for (size_t b = 0; b < m->nbuckets; b++) {
        if (m->buckets[b]) {
            *bucket = b;
            return m->buckets[b];
        }
    }
    return NULL;
}

struct hashmap_entry *hashmap_next(const struct hashmap *m, const struct hashmap_entry *e, size_t *bucket)
{
    if (e->next)
        return e->next;
    for (size_t b = *bucket + 1; b < m->nbuckets; b++) {
        if (m->buckets[b]) {
            *bucket = b;
            return m->buckets[b];
        }
    }
    return NULL;
}

const char **hashmap_sorted_keys(const struct hashmap *m)
{
    const char **keys = rmq_malloc((m->count ? m->count : 1) * sizeof *keys);
    if (!keys)
        return NULL;
    size_t n = 0, b;
    for (struct hashmap_entry *e = hashmap_first(m, &b); e; e = hashmap_next(m, e, &b))
        keys[n++] = e->key;
    assert(n == m->count);
    qsort(keys, n, sizeof *keys, rmq_strp_cmp);
    return keys;
}
