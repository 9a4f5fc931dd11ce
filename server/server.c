/* server.c — placeholder until the module lands. */
typedef int rmq_placeholder_server;
