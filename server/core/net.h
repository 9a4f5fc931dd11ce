/* net.h — socket helpers: listen, accept, connect (non-blocking,
 * close-on-exec), TCP_NODELAY, address formatting. Knows nothing of RocketMQ. Return 0 / an
 * fd, or -errno (getaddrinfo failures map to -EADDRNOTAVAIL). */
#ifndef RMQ_NET_H
#define RMQ_NET_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Non-blocking listening TCP socket on host:port (port 0 = any free port),
 * SO_REUSEADDR, backlog 1024. Returns the fd or -errno. */
int net_listen(const char *host, uint16_t port);
/* The bound local address of fd as "ip:port" into out; 0 or -errno. */
int net_local_addr(int fd, char *out, size_t outlen, uint16_t *port_out);
/* Accepts one connection (non-blocking, cloexec, TCP_NODELAY, keepalive);
 * the peer "ip:port" goes to peer. Returns the fd, -EAGAIN when none is
 * pending, or -errno. */
int net_accept(int lfd, char *peer, size_t peerlen);
/* Starts a non-blocking connect to sa (TCP_NODELAY, close-on-exec).
 * Returns the fd (the connect may still be in progress: it is complete
 * when the fd turns writable, SO_ERROR telling how it ended) or -errno
 * when it failed at once. */
int net_connect(const struct sockaddr *sa, socklen_t salen);

/* Reads fd until it would block, budget bytes have been read, or sink
 * returns non-zero, handing each chunk to sink. Returns -EAGAIN when the
 * socket is drained, 0 when the budget is spent, 1 at end of stream,
 * another -errno on a read error, or sink's own non-zero result. */
int net_read_into(int fd, size_t budget, int (*sink)(void *ctx, const uint8_t *p, size_t n), void *ctx);

/* Writes as much of b's live bytes to fd as the socket takes (consuming
 * them). 0 when b is drained, -EAGAIN when the socket is full, another
 * -errno on failure (-EPIPE for a zero-byte write). Never raises SIGPIPE. */
int net_write_buf(int fd, struct buf *b);

#endif
