/* hash_ring.c — see hash_ring.h.
 *
 * Building uses an open-addressing table keyed by the 32-bit hash, because the
 * Java ring is a map and a colliding put must replace the earlier owner (and
 * lower that owner's replica count, which the numbering of its next add
 * depends on). Sealing copies the table into an array sorted by hash, so a
 * lookup is a binary search. Pure; any thread.
 */
#include "hash_ring.h"

#include "err.h"
#include "md5.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ring_slot {
    uint32_t hash;
    uint32_t used;
    size_t node;
};

struct ring_entry {
    uint32_t hash;
    size_t node;
};

struct hash_ring {
    size_t n_nodes;
    size_t *replicas; /* per node: entries it owns now */
    struct ring_slot *slots;
    size_t cap; /* power of two */
    size_t used;
    struct ring_entry *sorted; /* valid when sealed */
    int sealed;
};

/* PROTOCOL: §5.8 the first 4 digest bytes, big-endian, unsigned. */
static uint32_t digest_key(const uint8_t d[MD5_DIGEST_LEN])
{
    return (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
}

uint32_t hash_ring_hash(const void *data, size_t len)
{
    uint8_t d[MD5_DIGEST_LEN];
    md5_digest(data, len, d);
    return digest_key(d);
}

uint32_t hash_ring_hash_parts(const char *const *parts, size_t n)
{
    struct md5_ctx ctx;
    uint8_t d[MD5_DIGEST_LEN];
    md5_init(&ctx);
    for (size_t i = 0; i < n; i++)
        md5_update(&ctx, parts[i], strlen(parts[i]));
    md5_final(&ctx, d);
    return digest_key(d);
}

/* Smallest power of two >= 2n (load factor <= 1/2), at least 16. */
static size_t table_cap_for(size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    return cap;
}

/* The MD5 bits are already uniform; a multiplicative mix only guards against
 * callers feeding structured hashes through the public API. */
static size_t slot_of(uint32_t hash, size_t cap)
{
    return (size_t)(hash * 2654435761u) & (cap - 1);
}

int hash_ring_new(struct hash_ring **out, size_t n_nodes, size_t expected_vnodes)
{
    *out = NULL;
    if (expected_vnodes > HASH_RING_MAX_VNODES)
        return RMQ_E2BIG;
    struct hash_ring *r = rmq_calloc(1, sizeof *r);
    if (!r)
        return RMQ_ENOMEM;
    r->n_nodes = n_nodes;
    r->cap = table_cap_for(expected_vnodes);
    r->replicas = rmq_calloc(n_nodes ? n_nodes : 1, sizeof *r->replicas);
    r->slots = rmq_calloc(r->cap, sizeof *r->slots);
    if (!r->replicas || !r->slots) {
        hash_ring_free(r);
        return RMQ_ENOMEM;
    }
    *out = r;
    return 0;
}

void hash_ring_free(struct hash_ring *ring)
{
    if (!ring)
        return;
    rmq_free(ring->sorted);
    rmq_free(ring->slots);
    rmq_free(ring->replicas);
    rmq_free(ring);
}

/* Index of the slot holding hash, or of the empty slot where it would go. */
static size_t probe(const struct ring_slot *slots, size_t cap, uint32_t hash)
{
    size_t j = slot_of(hash, cap);
    while (slots[j].used && slots[j].hash != hash)
        j = (j + 1) & (cap - 1);
    return j;
}

/* Doubles the table. Returns 0 or RMQ_ENOMEM (the old table stays valid). */
static int grow(struct hash_ring *r)
{
    size_t cap = r->cap * 2;
    struct ring_slot *slots = rmq_calloc(cap, sizeof *slots);
    if (!slots)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < r->cap; i++) {
        if (!r->slots[i].used)
            continue;
        slots[probe(slots, cap, r->slots[i].hash)] = r->slots[i];
    }
    rmq_free(r->slots);
    r->slots = slots;
    r->cap = cap;
    return 0;
}

/* Puts hash -> node, replacing (and uncounting) a previous owner. */
static int put(struct hash_ring *r, uint32_t hash, size_t node)
{
    size_t j = probe(r->slots, r->cap, hash);
    if (r->slots[j].used) {
        r->replicas[r->slots[j].node]--;
    } else {
        if (r->used >= HASH_RING_MAX_VNODES)
            return RMQ_E2BIG;
        if (2 * (r->used + 1) > r->cap) {
            int rc = grow(r);
            if (rc)
                return rc;
            j = probe(r->slots, r->cap, hash);
        }
        r->slots[j].used = 1;
        r->slots[j].hash = hash;
        r->used++;
    }
    r->slots[j].node = node;
    r->replicas[node]++;
    return 0;
}

int hash_ring_add(struct hash_ring *ring, const char *name, size_t node_id, long replicas)
{
    if (!name || node_id >= ring->n_nodes || replicas < 0)
        return RMQ_EINVAL;
    if ((size_t)replicas > HASH_RING_MAX_VNODES)
        return RMQ_E2BIG;
    ring->sealed = 0;
    /* The numbering continues from what the node owns before this add. */
    size_t existing = ring->replicas[node_id];
    for (long r = 0; r < replicas; r++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "-%zu", (size_t)r + existing);
        /* PROTOCOL: §5.8 virtual node key = cid + "-" + replica index. */
        uint32_t h = hash_ring_hash_parts((const char *[]){name, suffix}, 2);
        int rc = put(ring, h, node_id);
        if (rc)
            return rc;
    }
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct ring_entry *)a)->hash, y = ((const struct ring_entry *)b)->hash;
    return (x > y) - (x < y);
}

int hash_ring_seal(struct hash_ring *ring)
{
    if (ring->sealed)
        return 0;
    struct ring_entry *e = rmq_malloc((ring->used ? ring->used : 1) * sizeof *e);
    if (!e)
        return RMQ_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < ring->cap; i++) {
        if (ring->slots[i].used) {
            e[n].hash = ring->slots[i].hash;
            e[n].node = ring->slots[i].node;
            n++;
        }
    }
    qsort(e, n, sizeof *e, entry_cmp);
    rmq_free(ring->sorted);
    ring->sorted = e;
    ring->sealed = 1;
    return 0;
}

int hash_ring_lookup(const struct hash_ring *ring, uint32_t x, size_t *node_id)
{
    if (!ring->sealed)
        return RMQ_ESTATE;
    if (!ring->used)
        return RMQ_ENOTFOUND;
    /* First entry with hash >= x (a ceiling search), else wrap to entry 0. */
    size_t lo = 0, hi = ring->used;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring->sorted[mid].hash < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *node_id = ring->sorted[lo == ring->used ? 0 : lo].node;
    return 0;
}

size_t hash_ring_size(const struct hash_ring *ring)
{
    return ring->used;
}

size_t hash_ring_replicas(const struct hash_ring *ring, size_t node_id)
{
    return node_id < ring->n_nodes ? ring->replicas[node_id] : 0;
}
