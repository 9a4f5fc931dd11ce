/* cmd_serve.c — placeholder until the daemon lands. */
#include "commands.h"

#include <stdio.h>

int cmd_serve_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("rmqcoord serve: not built yet\n", stderr);
    return 2;
}
