/* http_fetch.h — a tiny blocking HTTP/1.0 GET client for the daemon's own
 * admin API: the cluster view asks brokers with it (on a worker thread) and
 * the terminal commands (`rmqcoord groups`, `describe`, `events`) ask a
 * running daemon. Any thread; no state. */
#ifndef RMQ_HTTP_FETCH_H
#define RMQ_HTTP_FETCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_fetch_limits {
    /* rmq_mono_ms() by which the whole exchange (connect, send and every
     * recv) is over: a peer that drips a byte at a time cannot stretch it. */
    int64_t deadline_ms;
    /* An fd that becomes readable when the fetch is to stop at once (a
     * server shutting down), or -1. */
    int cancel_fd;
    /* Refuse any address outside 127/8 (the cluster view is not a proxy). */
    bool loopback_only;
};

/* GET http://hp<path> (hp "host:port", a host name is resolved; path starts
 * with '/' and is already percent-encoded). The parsed JSON body as a new
 * reference with *status set to the HTTP status, or NULL with *err set to a
 * static reason ("timed out" past the deadline, "cancelled"). */
json_t *http_fetch_json(const char *hp, const char *path, const struct http_fetch_limits *lim, int *status,
                        const char **err);
/* Percent-encodes s for one path segment or query value into out (cap
 * bytes, always NUL-terminated; cut if too long). */
void http_fetch_pct_encode(const char *s, char *out, size_t cap);

#endif
