/* allocate_options.h — the strategies' names and the options' defaults
 * (allocate_options.c). Pure; any thread. */
#ifndef RMQ_ALLOCATE_OPTIONS_H
#define RMQ_ALLOCATE_OPTIONS_H

#include "allocate_types.h"

/* Sets defaults: the given strategy, 10 virtual nodes, inner AVG, no config,
 * no rooms. */
void allocate_options_init(struct allocate_options *opt, enum allocate_strategy strategy);

/* The strategy's short name ("AVG", "AVG_BY_CIRCLE", "CONFIG",
 * "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH"); static string,
 * "?" for an invalid value. */
const char *allocate_strategy_name(enum allocate_strategy s);
/* Parses a short name (exact, case-sensitive). Returns 0 or RMQ_EINVAL. */
int allocate_strategy_parse(const char *name, enum allocate_strategy *out);

#endif
