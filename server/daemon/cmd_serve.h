/* cmd_serve.h — `rmqcoord serve`: the daemon. Takes the arguments after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit status. */
#ifndef RMQ_CMD_SERVE_H
#define RMQ_CMD_SERVE_H

int cmd_serve_main(int argc, char **argv);

#endif
