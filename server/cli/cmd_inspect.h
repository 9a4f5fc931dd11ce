/* cmd_inspect.h — `rmqcoord groups`, `describe`, `events`: a terminal view
 * of a running daemon. argv[0] is the subcommand; returns the exit status. */
#ifndef RMQ_CMD_INSPECT_H
#define RMQ_CMD_INSPECT_H

int cmd_inspect_main(int argc, char **argv);

#endif
