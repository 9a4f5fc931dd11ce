/* http_fetch.c — see http_fetch.h. */
#include "http_fetch.h"

#include "buf.h"
#include "err.h"
#include "parse_int.h"

#include "clocks.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* An admin reply larger than this is refused rather than buffered. */
#define FETCH_MAX_BYTES (4u << 20)

void http_fetch_pct_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    assert(cap >= 1);
    size_t j = 0;
    for (; *s && j + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '_' || c == '.' || c == '~') {
            out[j++] = (char)c;
        } else {
            out[j++] = '%';
            out[j++] = hex[c >> 4];
            out[j++] = hex[c & 15];
        }
    }
    assert(j < cap); /* room for the NUL was kept by the loop's bound */
    out[j] = 0;
}

/* Waits until fd is ready for events (POLLIN or POLLOUT) within the
 * deadline. 0, or -1 with *err set (timed out, cancelled, poll failed). */
static int wait_ready(int fd, short events, const struct http_fetch_limits *lim, const char **err)
{
    assert(fd >= 0 && (events == POLLIN || events == POLLOUT));
    for (;;) {
        int64_t left = lim->deadline_ms - rmq_mono_ms();
        if (left <= 0) {
            *err = "timed out";
            return -1;
        }
        struct pollfd pf[2] = {{.fd = fd, .events = events}, {.fd = lim->cancel_fd, .events = POLLIN}};
        int n = poll(pf, lim->cancel_fd >= 0 ? 2 : 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *err = "poll failed";
            return -1;
        }
        if (lim->cancel_fd >= 0 && pf[1].revents) {
            *err = "cancelled";
            return -1;
        }
        if (n > 0 && pf[0].revents)
            return 0;
    }
}

/* Connects to hp (non-blocking, within the deadline); the socket, or -1
 * with *err set. */
static int connect_to(const char *hp, const struct http_fetch_limits *lim, const char **err)
{
    char host[256];
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof host) {
        *err = "not a host:port address";
        return -1;
    }
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res) {
        *err = "cannot resolve the address";
        return -1;
    }
    const struct sockaddr_in *sa = (const struct sockaddr_in *)res->ai_addr;
    if (lim->loopback_only && (ntohl(sa->sin_addr.s_addr) >> 24) != 127) {
        freeaddrinfo(res);
        *err = "not a loopback address";
        return -1;
    }
    const char *cannot = "cannot connect (is the daemon's HTTP admin listening there?)";
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int rc = fd < 0 ? -1 : connect(fd, res->ai_addr, res->ai_addrlen);
    bool in_progress = rc != 0 && errno == EINPROGRESS; /* before freeaddrinfo may touch errno */
    freeaddrinfo(res);
    *err = cannot;
    if (fd >= 0 && in_progress) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        rc = wait_ready(fd, POLLOUT, lim, err);
        if (rc == 0 && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0)) {
            *err = cannot;
            rc = -1;
        }
    }
    if (fd >= 0 && rc != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Sends all n bytes within the deadline; 0 or -1 with *err set. */
static int send_all(int fd, const char *p, size_t n, const struct http_fetch_limits *lim, const char **err)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        assert(k <= (ssize_t)n);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_ready(fd, POLLOUT, lim, err) != 0)
                return -1;
        } else {
            *err = "send failed";
            return -1;
        }
    }
    return 0;
}

/* Reads until the peer closes, into b, within the deadline. 0, or -1 with
 * *err set (timed out, cancelled, too large, reset). */
static int recv_all(int fd, struct buf *b, const struct http_fetch_limits *lim, const char **err)
{
    char chunk[4096];
    for (;;) {
        ssize_t k = recv(fd, chunk, sizeof chunk, 0);
        if (k == 0)
            return 0;
        if (k > 0) {
            if (buf_append(b, chunk, (size_t)k) != 0) {
                *err = "the reply is too large";
                return -1;
            }
            assert(buf_live(b) <= FETCH_MAX_BYTES); /* the buffer's cap bounds the reply */
        } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            if (wait_ready(fd, POLLIN, lim, err) != 0)
                return -1;
        } else {
            *err = "the connection failed";
            return -1;
        }
    }
}

/* The JSON body of a complete "HTTP/1.x NNN" reply text[0..n), with
 * *status set; NULL with *err set. */
static json_t *parse_reply(const char *text, size_t n, int *status, const char **err)
{
    const char *sep = NULL;
    for (size_t at = 0; !sep && n >= 4 && at <= n - 4; at++)
        if (!memcmp(text + at, "\r\n\r\n", 4))
            sep = text + at;
    int64_t code = 0;
    if (!sep || n <= 12 || memcmp(text, "HTTP/1.", 7) || rmq_parse_i64_n(text + 9, 3, 100, 599, &code) != 0) {
        *err = "bad HTTP reply";
        return NULL;
    }
    json_error_t je;
    json_t *out = json_loadb(sep + 4, n - (size_t)(sep + 4 - text), 0, &je);
    *status = (int)code;
    if (!out)
        *err = "the reply is not JSON";
    return out;
}

json_t *http_fetch_json(const char *hp, const char *path, const struct http_fetch_limits *lim, int *status,
                        const char **err)
{
    char req[2048];
    int rn = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n", path, hp);
    if (rn < 0 || (size_t)rn >= sizeof req) {
        *err = "path too long";
        return NULL;
    }
    int fd = connect_to(hp, lim, err);
    if (fd < 0)
        return NULL;
    struct buf b;
    buf_init(&b, FETCH_MAX_BYTES);
    json_t *out = NULL;
    if (send_all(fd, req, (size_t)rn, lim, err) == 0 && recv_all(fd, &b, lim, err) == 0)
        out = parse_reply((const char *)buf_head(&b), buf_live(&b), status, err);
    close(fd);
    buf_free(&b);
    return out;
}
