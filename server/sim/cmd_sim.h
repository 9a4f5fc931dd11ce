/* cmd_sim.h — `rmqcoord sim`: simulated consumers. Takes the arguments after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit status. */
#ifndef RMQ_CMD_SIM_H
#define RMQ_CMD_SIM_H

int cmd_sim_main(int argc, char **argv);

#endif
