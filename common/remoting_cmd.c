/* remoting_cmd.c — placeholder until the module lands. */
typedef int rmq_placeholder_remoting_cmd;
