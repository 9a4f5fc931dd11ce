/* cmd_replay.c — placeholder until the module lands. */
#include "commands.h"

#include <stdio.h>

int cmd_replay_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("rmqcoord: this command is not built yet\n", stderr);
    return 2;
}
