/* http_accept.c — see http_accept.h. One thread blocks in poll() on the
 * listening socket and a wake pipe; stop writes the pipe. */
#include "http_accept.h"

#include "clocks.h"
#include "err.h"
#include "log.h"
#include "mem.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct http_accept {
    int fd;      /* listening socket */
    int wake[2]; /* stop writes wake[1]; the thread polls wake[0] */
    struct MHD_Daemon *daemon;
    pthread_t thread;
    bool running;
    struct log_limit fail_log; /* the accept thread's only */
};

int http_accept_bind(const struct sockaddr_storage *ss, struct http_accept **out, uint16_t *port, char *err,
                     size_t errlen)
{
    struct http_accept *a = rmq_calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return RMQ_ENOMEM;
    }
    a->wake[0] = a->wake[1] = -1;
    socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    a->fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    /* As libmicrohttpd binds without MHD_USE_DUAL_STACK: IPv6 only. */
    int v6only = ss->ss_family == AF_INET6 && a->fd >= 0
                     ? setsockopt(a->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one)
                     : 0;
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    if (a->fd < 0 || v6only != 0 || setsockopt(a->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(a->fd, (const struct sockaddr *)ss, len) != 0 || listen(a->fd, SOMAXCONN) != 0 ||
        getsockname(a->fd, (struct sockaddr *)&bound, &blen) != 0 ||
        pipe2(a->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot listen for HTTP: %s", strerror(errno));
        http_accept_stop(a);
        return RMQ_EIO;
    }
    *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
    *out = a;
    return RMQ_OK;
}

/* Waits ms for the wake pipe; true when stop was asked. */
static bool stop_within(struct http_accept *a, int ms)
{
    struct pollfd p = {a->wake[0], POLLIN, 0};
    return poll(&p, 1, ms) > 0;
}

static void *accept_main(void *arg)
{
    struct http_accept *a = arg;
    for (;;) {
        struct pollfd p[2] = {{a->fd, POLLIN, 0}, {a->wake[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_error("HTTP accept: poll failed: %s", strerror(errno));
            break;
        }
        if (p[1].revents)
            break;
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        int c = accept4(a->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
                continue;
            /* EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays in the
             * backlog and poll says readable again at once. Pause. */
            log_limited(&a->fail_log, rmq_mono_ms(), LOG_WARN, "HTTP accept failed: %s; pausing %d ms",
                        strerror(errno), HTTP_ACCEPT_PAUSE_MS);
            if (stop_within(a, HTTP_ACCEPT_PAUSE_MS))
                break;
            continue;
        }
        /* MHD owns c from here, and closes it itself when it refuses it
         * (its connection limits: it logs why). */
        (void)MHD_add_connection(a->daemon, c, (struct sockaddr *)&peer, plen);
    }
    return NULL;
}

int http_accept_run(struct http_accept *a, struct MHD_Daemon *d)
{
    assert(!a->running && a->fd >= 0); /* bound, not yet running */
    a->daemon = d;
    if (pthread_create(&a->thread, NULL, accept_main, a) != 0)
        return RMQ_EIO;
    a->running = true;
    return RMQ_OK;
}

void http_accept_stop(struct http_accept *a)
{
    if (!a)
        return;
    if (a->running) {
        ssize_t w;
        do
            w = write(a->wake[1], "x", 1);
        while (w < 0 && errno == EINTR);
        pthread_join(a->thread, NULL);
    }
    if (a->fd >= 0)
        close(a->fd);
    if (a->wake[0] >= 0)
        close(a->wake[0]);
    if (a->wake[1] >= 0)
        close(a->wake[1]);
    rmq_free(a);
}

static pthread_mutex_t mhd_log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_limit mhd_log_limit; /* under mhd_log_lock */

void http_accept_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    pthread_mutex_lock(&mhd_log_lock);
    log_limited(&mhd_log_limit, rmq_mono_ms(), LOG_WARN, "HTTP: %s", line);
    pthread_mutex_unlock(&mhd_log_lock);
}
