/* rmq_body.c — placeholder until the module lands. */
typedef int rmq_placeholder_rmq_body;
