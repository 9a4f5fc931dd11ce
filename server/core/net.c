/* net.c — see net.h. */
#include "net.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t outlen, uint16_t *port_out)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        port = ntohs(a->sin_port);
        snprintf(out, outlen, "%s:%u", ip, port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        port = ntohs(a->sin6_port);
        snprintf(out, outlen, "[%s]:%u", ip, port);
    } else {
        snprintf(out, outlen, "unknown");
    }
    if (port_out)
        *port_out = port;
}

int net_listen(const char *host, uint16_t port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0 || !res)
        return -EADDRNOTAVAIL;
    int err = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = -errno;
            continue;
        }
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
            bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            err = -errno;
            close(fd);
            continue;
        }
        freeaddrinfo(res);
        return fd;
    }
    freeaddrinfo(res);
    return err;
}

int net_local_addr(int fd, char *out, size_t outlen, uint16_t *port_out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -errno;
    format_addr(&ss, out, outlen, port_out);
    return 0;
}

int net_read_into(int fd, size_t budget, int (*sink)(void *ctx, const uint8_t *p, size_t n), void *ctx)
{
    assert(fd >= 0 && sink && budget > 0);
    while (budget > 0) {
        uint8_t tmp[65536];
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n > 0) {
            budget = (size_t)n > budget ? 0 : budget - (size_t)n;
            int rc = sink(ctx, tmp, (size_t)n);
            if (rc != 0)
                return rc;
            /* A short read drained the socket: asking again would only
             * return EAGAIN, one syscall per event for nothing. The fd is
             * level-triggered, so anything arriving later is reported. */
            if ((size_t)n < sizeof tmp)
                return 0;
            continue;
        }
        if (n == 0)
            return 1;
        if (errno == EINTR)
            continue;
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
    return 0;
}

int net_write_buf(int fd, struct buf *b)
{
    while (buf_live(b) > 0) {
        ssize_t n = send(fd, buf_head(b), buf_live(b), MSG_NOSIGNAL);
        if (n > 0) {
            assert((size_t)n <= buf_live(b));
            buf_consume(b, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        return -EPIPE;
    }
    return 0;
}

int net_accept(int lfd, char *peer, size_t peerlen)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    int one = 1;
    /* Small request/response frames: Nagle would add 40 ms to NOTIFY fan-out. */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    format_addr(&ss, peer, peerlen, NULL);
    return fd;
}

int net_connect(const struct sockaddr *sa, socklen_t salen)
{
    assert(sa && salen > 0 && (size_t)salen <= sizeof(struct sockaddr_storage));
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* latency, not required */
    if (connect(fd, sa, salen) != 0 && errno != EINPROGRESS) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}
