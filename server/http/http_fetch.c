/* http_fetch.c — see http_fetch.h. */
#include "http_fetch.h"

#include "buf.h"
#include "err.h"
#include "parse_int.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* An admin reply larger than this is refused rather than buffered. */
#define FETCH_MAX_BYTES (4u << 20)

void http_fetch_pct_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
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
    out[j] = 0;
}

/* Connects to hp; the socket, or -1 with *err set. */
static int connect_to(const char *hp, bool loopback_only, int timeout_ms, const char **err)
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
    if (loopback_only && (ntohl(sa->sin_addr.s_addr) >> 24) != 127) {
        freeaddrinfo(res);
        *err = "not a loopback address";
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
                    connect(fd, res->ai_addr, res->ai_addrlen) != 0)) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        *err = "cannot connect (is the daemon's HTTP admin listening there?)";
    return fd;
}

json_t *http_fetch_json(const char *hp, const char *path, int timeout_ms, bool loopback_only, int *status,
                        const char **err)
{
    char req[2048];
    int rn = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n", path, hp);
    if (rn < 0 || (size_t)rn >= sizeof req) {
        *err = "path too long";
        return NULL;
    }
    int fd = connect_to(hp, loopback_only, timeout_ms, err);
    if (fd < 0)
        return NULL;
    struct buf b;
    buf_init(&b, FETCH_MAX_BYTES);
    json_t *out = NULL;
    *err = "send failed";
    if (send(fd, req, (size_t)rn, MSG_NOSIGNAL) == rn) {
        char chunk[4096];
        ssize_t k;
        while ((k = recv(fd, chunk, sizeof chunk, 0)) > 0)
            if (buf_append(&b, chunk, (size_t)k) != 0)
                break;
        *err = k < 0 ? "timed out" : "bad HTTP reply";
        const char *text = (const char *)buf_head(&b);
        size_t n = buf_live(&b);
        const char *sep = NULL;
        for (size_t at = 0; !sep && n >= 4 && at <= n - 4; at++)
            if (!memcmp(text + at, "\r\n\r\n", 4))
                sep = text + at;
        int64_t code = 0;
        /* "HTTP/1.x NNN ..." */
        if (sep && k == 0 && n > 12 && !memcmp(text, "HTTP/1.", 7) &&
            rmq_parse_i64_n(text + 9, 3, 100, 599, &code) == 0) {
            json_error_t je;
            out = json_loadb(sep + 4, n - (size_t)(sep + 4 - text), 0, &je);
            *status = (int)code;
            if (!out)
                *err = "the reply is not JSON";
        }
    }
    close(fd);
    buf_free(&b);
    return out;
}
