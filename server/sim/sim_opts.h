/* sim_opts.h — the flags of `rmqcoord sim` (sim_opts.c). */
#ifndef RMQ_SIM_OPTS_H
#define RMQ_SIM_OPTS_H

#include "sim_state.h"

/* Parses argv into cfg (zeroed). 0, 1 for --help (printed), or
 * RMQ_EINVAL (message printed). sim_config_clear frees the arrays. */
int sim_config_parse(struct sim_config *cfg, int argc, char **argv);
void sim_config_clear(struct sim_config *cfg);

#endif
