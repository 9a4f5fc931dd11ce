/* http_admin.h — the HTTP admin API (libmicrohttpd, its own thread).
 *
 * Routes requests; answers persisted data (events) from its own store_read
 * connection and everything live or mutating by posting a mailbox message to
 * the loop and suspending the connection until the loop's reply arrives.
 * Replies are JSON; errors are {"error":"...","detail":"..."} with a 4xx/5xx
 * status. Request bodies are capped at 1 MiB (413 beyond).
 */
#ifndef RMQ_HTTP_ADMIN_H
#define RMQ_HTTP_ADMIN_H

#include "mailbox.h"

#include <stddef.h>
#include <stdint.h>

struct http_admin;

struct http_admin_options {
    const char *host;        /* listen address, e.g. "127.0.0.1" */
    uint16_t port;           /* 0 = pick a free port */
    const char *store_path;  /* SQLite file for the read-only connection */
    struct mailbox *mailbox; /* borrowed; must outlive the server */
    const char *admin_token; /* borrowed; non-NULL: mutating routes need "Authorization: Bearer TOKEN" */
};

/* Starts the HTTP thread. New *out owned by the caller. err gets a reason. */
int http_admin_start(const struct http_admin_options *opt, struct http_admin **out, char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
uint16_t http_admin_port(const struct http_admin *h);
/* Stops the thread and frees. Accepts NULL. */
void http_admin_stop(struct http_admin *h);

#endif
