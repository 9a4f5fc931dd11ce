/* server.h — the daemon's lifecycle: set up every module from the
 * configuration, run the loop, tear down. The wiring itself (accept, frames,
 * before-sleep, timers) is in server.c, the one place that sees every layer. */
#ifndef RMQ_SERVER_H
#define RMQ_SERVER_H

#include "broker.h"

/* Sets up everything from cfg (borrowed; must outlive s): store, topics,
 * listeners, HTTP. 0 or an error (logged). Main thread. */
int server_init(struct broker *s, const struct config *cfg);
/* Runs the loop until SIGTERM/SIGINT. */
int server_run(struct broker *s);
/* Closes channels, flushes the store and frees everything (main thread). */
void server_fini(struct broker *s);

#endif
