/* outbound.c — placeholder. */
typedef int rmq_placeholder_outbound;
