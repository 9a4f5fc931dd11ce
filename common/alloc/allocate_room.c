/* allocate_room.c — the machine-room rule (see allocate_room.h). */
#include "allocate_room.h"

#include <string.h>

const char *allocate_room_by_rule(const char *name)
{
    const char *dash = name ? strrchr(name, '-') : NULL;
    return dash && dash[1] ? dash + 1 : NULL;
}
