/* remoting_header_rmq.c — placeholder until the module lands. */
typedef int rmq_placeholder_remoting_header_rmq;
