/* cmd_serve.c — `rmqcoord serve`: parse flags, run the daemon, shut down
 * cleanly on SIGTERM/SIGINT. Main thread (which becomes the loop thread). */
#include "cmd_serve.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "proc.h"
#include "server.h"

#include <stdio.h>

int cmd_serve_main(int argc, char **argv)
{
    static struct config cfg;
    int rc = config_parse(&cfg, argc, argv);
    if ((rc = proc_start(rc, cfg.log_level)) >= 0)
        return rc;
    static struct daemon srv;
    rc = server_init(&srv, &cfg);
    if (rc == 0)
        rc = server_run(&srv);
    server_fini(&srv);
    if (rc != 0) {
        log_error("rmqcoord serve stopped with an error");
        return 1;
    }
    log_info("rmqcoord stopped");
    return 0;
}
