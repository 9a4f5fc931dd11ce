/* cmd_trace_gen.h — `rmqcoord trace-gen`. Takes the arguments after the subcommand name (argv[0] is the
 * subcommand) and returns the process exit status. */
#ifndef RMQ_CMD_TRACE_GEN_H
#define RMQ_CMD_TRACE_GEN_H

int cmd_trace_gen_main(int argc, char **argv);

#endif
