/* cmd_allocate.c — placeholder until the allocation module lands. */
#include "commands.h"

#include <stdio.h>

int cmd_allocate_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("rmqcoord allocate: not built yet\n", stderr);
    return 2;
}
