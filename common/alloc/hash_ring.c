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

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* 8 bytes a slot and a sorted entry, half the earlier layout: fewer pages
 * to fault in for a big ring, fewer cache lines per binary search. */
struct ring_slot {
    uint32_t hash;
    uint32_t node1; /* node id + 1; 0 = empty */
};

struct hash_ring {
    size_t n_nodes;
    size_t *replicas; /* per node: entries it owns now */
    struct ring_slot *slots;
    size_t cap; /* power of two */
    size_t used;
    uint64_t *sorted; /* hash << 32 | node, ascending; valid when sealed */
    int sealed;
};

/* PROTOCOL: docs/protocol.md §11.8 the first 4 digest bytes, big-endian, unsigned. */
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

uint32_t hash_ring_hash_final(struct md5_ctx *ctx)
{
    uint8_t d[MD5_DIGEST_LEN];
    md5_final(ctx, d);
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
    if (expected_vnodes > HASH_RING_MAX_VNODES || n_nodes >= UINT32_MAX)
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

#ifndef NDEBUG
/* The building table: at most half full (probes end), and the replica
 * counts add up to the entries (each entry is owned by one node). O(cap +
 * nodes): for the operations that walk the table anyway. */
static int table_sanity(const struct hash_ring *r)
{
    assert(r->cap >= 16 && (r->cap & (r->cap - 1)) == 0);
    assert(2 * r->used <= r->cap);
    size_t used = 0, owned = 0;
    for (size_t i = 0; i < r->cap; i++) {
        assert(r->slots[i].node1 <= r->n_nodes);
        used += r->slots[i].node1 != 0;
    }
    for (size_t k = 0; k < r->n_nodes; k++)
        owned += r->replicas[k];
    assert(used == r->used && owned == r->used);
    return 1;
}
#endif

/* Index of the slot holding hash, or of the empty slot where it would go. */
static size_t probe(const struct ring_slot *slots, size_t cap, uint32_t hash)
{
    size_t j = slot_of(hash, cap);
    while (slots[j].node1 && slots[j].hash != hash)
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
        if (!r->slots[i].node1)
            continue;
        slots[probe(slots, cap, r->slots[i].hash)] = r->slots[i];
    }
    rmq_free(r->slots);
    r->slots = slots;
    r->cap = cap;
    assert(table_sanity(r)); /* the rehash walked every slot */
    return 0;
}

/* Puts hash -> node, replacing (and uncounting) a previous owner. */
static int put(struct hash_ring *r, uint32_t hash, size_t node)
{
    size_t j = probe(r->slots, r->cap, hash);
    if (r->slots[j].node1) {
        assert(r->replicas[r->slots[j].node1 - 1] > 0); /* the owner counted this entry */
        r->replicas[r->slots[j].node1 - 1]--;
    } else {
        if (r->used >= HASH_RING_MAX_VNODES)
            return RMQ_E2BIG;
        if (2 * (r->used + 1) > r->cap) {
            int rc = grow(r);
            if (rc)
                return rc;
            j = probe(r->slots, r->cap, hash);
        }
        r->slots[j].hash = hash;
        r->used++;
    }
    r->slots[j].node1 = (uint32_t)node + 1;
    r->replicas[node]++;
    assert(2 * r->used <= r->cap && r->slots[probe(r->slots, r->cap, hash)].node1 == node + 1);
    return 0;
}

/* Writes v in decimal at p; returns the length. */
static size_t put_decimal(char *p, size_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    assert(n <= 20); /* the 32 bytes left after the name hold it */
    for (size_t k = 0; k < n; k++)
        p[k] = tmp[n - 1 - k];
    return n;
}

int hash_ring_add(struct hash_ring *ring, const char *name, size_t node_id, long replicas)
{
    if (!name || node_id >= ring->n_nodes || replicas < 0)
        return RMQ_EINVAL;
    if ((size_t)replicas > HASH_RING_MAX_VNODES)
        return RMQ_E2BIG;
    ring->sealed = 0;
    /* PROTOCOL: docs/protocol.md §11.8 virtual node key = cid + "-" + replica index. The key
     * is built once and only its number rewritten, since formatting it
     * anew for every replica cost as much as hashing it. */
    size_t nlen = strlen(name);
    char stack[256];
    char *key = nlen + 32 <= sizeof stack ? stack : rmq_malloc(nlen + 32);
    if (!key)
        return RMQ_ENOMEM;
    memcpy(key, name, nlen);
    key[nlen] = '-';
    /* The numbering continues from what the node owns before this add. */
    size_t existing = ring->replicas[node_id];
    int rc = 0;
    for (long r = 0; !rc && r < replicas; r++) {
        size_t len = nlen + 1 + put_decimal(key + nlen + 1, (size_t)r + existing);
        rc = put(ring, hash_ring_hash(key, len), node_id);
    }
    if (key != stack)
        rmq_free(key);
    return rc;
}

/* Stable LSD radix sort of a by its upper 32 bits (the hash), 11 bits a
 * pass; tmp has room for n. Three linear passes instead of the
 * n log n comparisons of a qsort through a function pointer. */
static void sort_by_hash(uint64_t *a, uint64_t *tmp, size_t n)
{
    uint64_t *src = a, *dst = tmp;
    for (unsigned shift = 32; shift < 64; shift += 11) {
        size_t count[2049] = {0};
        for (size_t i = 0; i < n; i++)
            count[((src[i] >> shift) & 0x7FF) + 1]++;
        for (size_t k = 0; k < 2048; k++)
            count[k + 1] += count[k];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0x7FF]++] = src[i];
        uint64_t *t = src;
        src = dst, dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
#ifndef NDEBUG
    for (size_t i = 1; i < n; i++)
        assert(a[i - 1] >> 32 <= a[i] >> 32); /* lookup's binary search needs it */
#endif
}

int hash_ring_seal(struct hash_ring *ring)
{
    if (ring->sealed)
        return 0;
    uint64_t *e = rmq_malloc((ring->used ? ring->used : 1) * sizeof *e);
    uint64_t *tmp = rmq_malloc((ring->used ? ring->used : 1) * sizeof *tmp);
    if (!e || !tmp) {
        rmq_free(e);
        rmq_free(tmp);
        return RMQ_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < ring->cap; i++)
        if (ring->slots[i].node1)
            e[n++] = (uint64_t)ring->slots[i].hash << 32 | (ring->slots[i].node1 - 1);
    assert(n == ring->used && table_sanity(ring));
    sort_by_hash(e, tmp, n);
    rmq_free(tmp);
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
        if ((uint32_t)(ring->sorted[mid] >> 32) < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *node_id = (size_t)(ring->sorted[lo == ring->used ? 0 : lo] & UINT32_MAX);
    assert(*node_id < ring->n_nodes);
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
