/* hash_ring.c — placeholder until the module lands. */
typedef int rmq_placeholder_hash_ring;
