/* cmd_replay.h — `rmqcoord replay`. Takes the arguments after the subcommand name (argv[0] is the
 * subcommand) and returns the process exit status. */
#ifndef RMQ_CMD_REPLAY_H
#define RMQ_CMD_REPLAY_H

int cmd_replay_main(int argc, char **argv);

#endif
