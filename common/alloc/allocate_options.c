/* allocate_options.c — the strategies' names and the options' defaults (see
 * allocate_options.h). */
#include "allocate_options.h"

#include "err.h"

#include <string.h>

static const char *const strategy_names[ALLOCATE_STRATEGY_COUNT] = {
    "AVG", "AVG_BY_CIRCLE", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH",
};

const char *allocate_strategy_name(enum allocate_strategy s)
{
    return (unsigned)s < ALLOCATE_STRATEGY_COUNT ? strategy_names[s] : "?";
}

int allocate_strategy_parse(const char *name, enum allocate_strategy *out)
{
    for (unsigned i = 0; name && i < ALLOCATE_STRATEGY_COUNT; i++) {
        if (!strcmp(name, strategy_names[i])) {
            *out = (enum allocate_strategy)i;
            return 0;
        }
    }
    return RMQ_EINVAL;
}

void allocate_options_init(struct allocate_options *opt, enum allocate_strategy strategy)
{
    memset(opt, 0, sizeof *opt);
    opt->strategy = strategy;
    opt->virtual_nodes = ALLOCATE_DEFAULT_VIRTUAL_NODES;
    opt->inner = ALLOCATE_AVG;
}
