/* h_lock.c — placeholder until the module lands. */
typedef int rmq_placeholder_h_lock;
