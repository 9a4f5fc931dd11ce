/* commands.h — the subcommands of the rmqcoord binary. Each takes the
 * arguments after the subcommand name (argv[0] is the subcommand) and returns
 * the process exit status. */
#ifndef RMQ_COMMANDS_H
#define RMQ_COMMANDS_H

int cmd_serve_main(int argc, char **argv);
int cmd_allocate_main(int argc, char **argv);
int cmd_sim_main(int argc, char **argv);
int cmd_replay_main(int argc, char **argv);
int cmd_trace_gen_main(int argc, char **argv);

#endif
