/* server.h — the daemon: a struct broker (requests/broker.h) with what only
 * a running daemon has (listeners, signals, the HTTP side and its mailbox),
 * set up from the configuration, run, torn down. The wiring itself (accept,
 * signals, timers, the loop hooks calling requests/turn.h) is in server.c,
 * the one place that sees every layer. */
#ifndef RMQ_SERVER_H
#define RMQ_SERVER_H

#include "broker.h"
#include "log.h"

#include <stdbool.h>
#include <stddef.h>

struct mailbox;
struct http_admin;

struct daemon {
    struct broker b; /* the loop-owned state every layer below sees */
    int listen_fds[CONFIG_MAX_LISTEN];
    char listen_addrs[CONFIG_MAX_LISTEN][300];
    size_t nlisten;
    struct mailbox *mailbox; /* owned: the HTTP thread posts here */
    struct http_admin *http; /* owned; NULL while HTTP is off */
    int signal_fd;           /* SIGTERM/SIGINT; -1 until set up */
    bool stopping;
    bool accept_paused;          /* listeners off after accept ran out of descriptors */
    struct log_limit accept_log; /* accept failures, once a second */
};

/* Sets up everything from cfg (borrowed; must outlive d): store, topics,
 * listeners, HTTP. 0 or an error (logged). Main thread. */
int server_init(struct daemon *d, const struct config *cfg);
/* Runs the loop until SIGTERM/SIGINT. */
int server_run(struct daemon *d);
/* Closes channels, flushes the store and frees everything (main thread). */
void server_fini(struct daemon *d);

#endif
