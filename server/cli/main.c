/* main.c — the rmqcoord binary: picks the subcommand and runs it. */
#include "cmd_allocate.h"
#include "cmd_inspect.h"
#include "cmd_replay.h"
#include "cmd_serve.h"
#include "cmd_sim.h"
#include "cmd_trace_gen.h"
#include "rmq_version.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fputs("usage: rmqcoord <command> [options]\n"
          "\n"
          "commands:\n"
          "  serve      run the daemon (name server + broker consumer-group management)\n"
          "  allocate   compute queue allocations for JSON Lines cases on stdin\n"
          "  sim        simulated push consumers that rebalance like the Java client\n"
          "  replay     replay a heartbeat trace offline (or live against a daemon)\n"
          "  trace-gen  write a synthetic heartbeat trace\n"
          "  groups     list the consumer groups of a running daemon (its HTTP admin API)\n"
          "  describe   one group of a running daemon: members, and per queue owner, holder, offset\n"
          "  events     one group's membership history (--follow for new events)\n"
          "\n"
          "rmqcoord <command> --help shows the options of a command.\n"
          "rmqcoord --version prints the version.\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("rmqcoord %s\n", RMQ_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "serve"))
        return cmd_serve_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "groups") || !strcmp(cmd, "describe") || !strcmp(cmd, "events"))
        return cmd_inspect_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "allocate"))
        return cmd_allocate_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "sim"))
        return cmd_sim_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "replay"))
        return cmd_replay_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "trace-gen"))
        return cmd_trace_gen_main(argc - 1, argv + 1);
    fprintf(stderr, "rmqcoord: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
