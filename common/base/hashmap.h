/* hashmap.h — a chained hash map with byte-string keys.
 *
 * Keys are copied into the map (owned by it); values are borrowed pointers
 * whose lifetime the caller manages (hashmap_free can release them through a
 * callback). Iteration order is unspecified and unstable across inserts.
 * Pure; one thread.
 */
#ifndef RMQ_HASHMAP_H
#define RMQ_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_entry {
    struct hashmap_entry *next;
    uint64_t hash;
    void *val;
    size_t klen;
    char key[]; /* klen bytes plus a NUL, so string keys read as C strings */
};

struct hashmap {
    struct hashmap_entry **buckets;
    size_t nbuckets;
    size_t count;
};

void hashmap_init(struct hashmap *m);
/* Frees every entry, calling free_val(val) for each when non-NULL. */
void hashmap_free(struct hashmap *m, void (*free_val)(void *val));

void *hashmap_get(const struct hashmap *m, const void *key, size_t klen);
/* Inserts or replaces; *old (may be NULL) gets the replaced value or NULL.
 * 0 or RMQ_ENOMEM (map unchanged). */
int hashmap_put(struct hashmap *m, const void *key, size_t klen, void *val, void **old);
/* Removes key; returns its value (NULL when absent). */
void *hashmap_remove(struct hashmap *m, const void *key, size_t klen);

static inline void *hashmap_get_str(const struct hashmap *m, const char *key);
static inline int hashmap_put_str(struct hashmap *m, const char *key, void *val, void **old);
static inline void *hashmap_remove_str(struct hashmap *m, const char *key);

/* Iteration: for (it = hashmap_first(m, &b); it; it = hashmap_next(m, it, &b)).
 * Removing the current entry during iteration is not allowed. */
struct hashmap_entry *hashmap_first(const struct hashmap *m, size_t *bucket);
struct hashmap_entry *hashmap_next(const struct hashmap *m, const struct hashmap_entry *e, size_t *bucket);

/* The m->count keys read as C strings, in strcmp order, for output that
 * must not depend on the hash layout. A new array (the caller frees it with
 * rmq_free; non-NULL even for an empty map) of pointers borrowed from the
 * map, valid until it changes. NULL when out of memory. */
const char **hashmap_sorted_keys(const struct hashmap *m);

/* Asserts (debug builds) that every entry sits in its hash's bucket and
 * that count is the number of entries; true when it is. O(n): for tests and
 * for the operations that walk the whole map anyway. */
bool hashmap_sanity(const struct hashmap *m);

#include <string.h>
static inline void *hashmap_get_str(const struct hashmap *m, const char *key)
{
    return hashmap_get(m, key, strlen(key));
}
static inline int hashmap_put_str(struct hashmap *m, const char *key, void *val, void **old)
{
    return hashmap_put(m, key, strlen(key), val, old);
}
static inline void *hashmap_remove_str(struct hashmap *m, const char *key)
{
    return hashmap_remove(m, key, strlen(key));
}

#endif
