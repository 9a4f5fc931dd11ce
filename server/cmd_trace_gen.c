/* cmd_trace_gen.c — placeholder until the module lands. */
#include "commands.h"

#include <stdio.h>

int cmd_trace_gen_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("rmqcoord: this command is not built yet\n", stderr);
    return 2;
}
