/* hash_ring.h — consistent-hash ring with virtual nodes (used by allocate_plan.c).
 *
 * Reproduces the ring the Java client builds for its ConsistentHash strategy:
 * a map from 32-bit hash to physical node, where node `name` with `replicas`
 * virtual nodes puts hash(name + "-" + (r + existing)) for r = 0..replicas-1,
 * `existing` being how many ring entries that node owns at that moment (so a
 * node added twice continues its numbering). A later key with the same hash
 * overwrites the earlier entry. Lookup returns the owner of the first key >= x,
 * wrapping around to the smallest key; an empty ring has no owner.
 *
 * Physical nodes are identified by a caller-chosen id in [0, n_nodes); the
 * caller must give equal names the same id. Pure; any thread (one ring per
 * thread at a time).
 */
#ifndef RMQ_HASH_RING_H
#define RMQ_HASH_RING_H

#include "md5.h"

#include <stddef.h>
#include <stdint.h>

/* Ring size cap (virtual nodes in total); hash_ring_add refuses beyond it. */
#define HASH_RING_MAX_VNODES ((size_t)1 << 22)

struct hash_ring; /* opaque handle */

/* The ring's hash: the first 4 bytes of MD5(data) as a big-endian unsigned
 * 32-bit value. */
uint32_t hash_ring_hash(const void *data, size_t len);
/* hash_ring_hash of the concatenation of n NUL-terminated strings (borrowed),
 * without building the concatenation. */
uint32_t hash_ring_hash_parts(const char *const *parts, size_t n);
/* hash_ring_hash of everything fed to ctx; finalizes ctx. Lets a caller
 * hash many keys with a common prefix from a copy of the prefix's state. */
uint32_t hash_ring_hash_final(struct md5_ctx *ctx);

/* Makes a new, empty ring for node ids < n_nodes; expected_vnodes only sizes
 * the initial table. *out is new, owned by the caller (hash_ring_free).
 * Returns 0, RMQ_ENOMEM, or RMQ_E2BIG when expected_vnodes is over the cap
 * or n_nodes does not fit 32 bits. */
int hash_ring_new(struct hash_ring **out, size_t n_nodes, size_t expected_vnodes);

/* Frees the ring; NULL is fine. */
void hash_ring_free(struct hash_ring *ring);

/* Adds `replicas` virtual nodes for node `node_id` named `name` (borrowed,
 * NUL-terminated; only hashed, not kept). Returns 0, RMQ_EINVAL (bad id,
 * negative replicas), RMQ_E2BIG (over HASH_RING_MAX_VNODES) or RMQ_ENOMEM. On
 * error the ring keeps the virtual nodes added before the failure. */
int hash_ring_add(struct hash_ring *ring, const char *name, size_t node_id, long replicas);

/* Sorts the ring for lookups; call after the last add (adding again
 * unseals it). Returns 0 or RMQ_ENOMEM. */
int hash_ring_seal(struct hash_ring *ring);

/* Finds the owner of hash x. Returns 0 with *node_id set, RMQ_ENOTFOUND for
 * an empty ring, RMQ_ESTATE when the ring is not sealed. */
int hash_ring_lookup(const struct hash_ring *ring, uint32_t x, size_t *node_id);

/* Number of entries (distinct hashes) in the ring. */
size_t hash_ring_size(const struct hash_ring *ring);

/* Number of ring entries node_id currently owns (0 for a bad id). */
size_t hash_ring_replicas(const struct hash_ring *ring, size_t node_id);

#endif
