/* cmd_allocate.h — `rmqcoord allocate`: allocations for JSON Lines cases. Takes the arguments after the
 * subcommand name (argv[0] is the subcommand) and returns the process exit status. */
#ifndef RMQ_CMD_ALLOCATE_H
#define RMQ_CMD_ALLOCATE_H

int cmd_allocate_main(int argc, char **argv);

#endif
