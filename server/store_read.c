/* store_read.c — placeholder until the module lands. */
typedef int rmq_placeholder_store_read;
