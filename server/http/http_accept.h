/* http_accept.h — the HTTP listening socket, accepted by our own thread and
 * handed to libmicrohttpd (MHD_USE_NO_LISTEN_SOCKET + MHD_add_connection).
 *
 * libmicrohttpd 0.9.75 retries a failed accept() at once when it has no
 * connection of its own it could close ("Will try busy waiting for system
 * resources to become magically available"): out of descriptors, one
 * pending connect made the HTTP thread spin and log without end. This
 * thread pauses instead and logs at most once a second. */
#ifndef RMQ_HTTP_ACCEPT_H
#define RMQ_HTTP_ACCEPT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct MHD_Daemon;
struct http_accept;

/* How long accept pauses after failing for want of descriptors or memory. */
#define HTTP_ACCEPT_PAUSE_MS 100

/* Binds and listens on ss. *out is new, owned by the caller (http_accept_stop);
 * *port is the bound port. 0 or RMQ_EIO / RMQ_ENOMEM with err filled. */
int http_accept_bind(const struct sockaddr_storage *ss, struct http_accept **out, uint16_t *port, char *err,
                     size_t errlen);
/* Starts the accept thread, which hands each connection to d (borrowed:
 * it must outlive http_accept_stop). 0 or RMQ_EIO. */
int http_accept_run(struct http_accept *a, struct MHD_Daemon *d);
/* Stops the thread (if running), closes the socket, frees a. Call before
 * MHD_stop_daemon. NULL is a no-op. */
void http_accept_stop(struct http_accept *a);

/* MHD_OPTION_EXTERNAL_LOGGER: libmicrohttpd's messages through our log, at
 * most one a second (the rest counted in the next line). Any thread. */
void http_accept_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
