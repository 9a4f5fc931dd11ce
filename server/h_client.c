/* h_client.c — placeholder until the module lands. */
typedef int rmq_placeholder_h_client;
