/* loop.c — see loop.h. Loop thread only. */
#include "loop.h"

#include "array.h"
#include "clocks.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct watch {
    int fd;
    loop_fd_cb cb;
    void *ctx;
    uint32_t events; /* the epoll mask it is registered with */
    bool bulk;       /* in the bulk set (loop_set_bulk) */
    int dead;
    struct watch *next_dead;
};

struct timer {
    int id; /* 0 = free slot */
    int64_t when;
    int64_t period;
    loop_timer_cb cb;
    void *ctx;
};

struct loop {
    int epfd;
    int bulk_epfd; /* the bulk set; itself watched by epfd (bulk_marker) */
    char bulk_marker;
    struct watch **by_fd; /* index = fd */
    size_t by_fd_cap;
    struct watch *dead; /* freed after the current event batch */
    struct timer *timers;
    int ntimers, next_timer_id;
    size_t timers_cap;
    loop_hook_cb before_sleep;
    void *before_sleep_ctx;
    volatile sig_atomic_t stop;
    int64_t now;
    bool backlogged; /* the last iteration fetched as many events as it could take */
};

int loop_new(struct loop **out)
{
    struct loop *l = rmq_calloc(1, sizeof *l);
    if (!l)
        return RMQ_ENOMEM;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->bulk_epfd = l->epfd < 0 ? -1 : epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event bev = {.events = EPOLLIN, .data.ptr = &l->bulk_marker};
    if (l->bulk_epfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->bulk_epfd, &bev) != 0) {
        int e = -errno;
        if (l->bulk_epfd >= 0)
            close(l->bulk_epfd);
        if (l->epfd >= 0)
            close(l->epfd);
        rmq_free(l);
        return e;
    }
    l->next_timer_id = 1;
    l->now = rmq_mono_ms();
    *out = l;
    return RMQ_OK;
}

static void free_dead(struct loop *l)
{
    while (l->dead) {
        struct watch *w = l->dead;
        assert(w->dead);
        l->dead = w->next_dead;
        rmq_free(w);
    }
}

void loop_free(struct loop *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->by_fd_cap; i++)
        rmq_free(l->by_fd[i]);
    free_dead(l);
    rmq_free(l->by_fd);
    rmq_free(l->timers);
    close(l->bulk_epfd);
    close(l->epfd);
    rmq_free(l);
}

static uint32_t to_epoll(uint32_t events)
{
    return ((events & LOOP_READ) ? EPOLLIN | EPOLLRDHUP : 0) | ((events & LOOP_WRITE) ? EPOLLOUT : 0);
}

/* The epoll set w is registered in. */
static int set_of(const struct loop *l, const struct watch *w)
{
    return w->bulk ? l->bulk_epfd : l->epfd;
}

int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *ctx)
{
    assert(cb);
    if (fd < 0)
        return RMQ_EINVAL;
    size_t old = l->by_fd_cap;
    if (RMQ_GROW(l->by_fd, l->by_fd_cap, (size_t)fd + 1, 64) != 0)
        return RMQ_ENOMEM;
    memset(l->by_fd + old, 0, (l->by_fd_cap - old) * sizeof *l->by_fd);
    if (l->by_fd[fd])
        return RMQ_EEXIST;
    struct watch *w = rmq_calloc(1, sizeof *w);
    if (!w)
        return RMQ_ENOMEM;
    w->fd = fd;
    w->cb = cb;
    w->ctx = ctx;
    w->events = to_epoll(events);
    struct epoll_event ev = {.events = w->events, .data.ptr = w};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        int e = -errno;
        rmq_free(w);
        return e;
    }
    l->by_fd[fd] = w;
    assert(!w->bulk && (size_t)fd < l->by_fd_cap);
    return RMQ_OK;
}

int loop_mod_fd(struct loop *l, int fd, uint32_t events)
{
    if (fd < 0 || (size_t)fd >= l->by_fd_cap || !l->by_fd[fd])
        return RMQ_ENOTFOUND;
    struct watch *w = l->by_fd[fd];
    assert(w->fd == fd && !w->dead);
    struct epoll_event ev = {.events = to_epoll(events), .data.ptr = w};
    if (epoll_ctl(set_of(l, w), EPOLL_CTL_MOD, fd, &ev) != 0)
        return -errno;
    w->events = ev.events;
    return RMQ_OK;
}

int loop_set_bulk(struct loop *l, int fd, bool bulk)
{
    if (fd < 0 || (size_t)fd >= l->by_fd_cap || !l->by_fd[fd])
        return RMQ_ENOTFOUND;
    struct watch *w = l->by_fd[fd];
    assert(w->fd == fd && !w->dead);
    if (w->bulk == bulk)
        return RMQ_OK;
    struct epoll_event ev = {.events = w->events, .data.ptr = w};
    if (epoll_ctl(bulk ? l->bulk_epfd : l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        return -errno;
    /* Cannot fail: fd is in its current set (added there, not removed). */
    (void)epoll_ctl(set_of(l, w), EPOLL_CTL_DEL, fd, NULL);
    w->bulk = bulk;
    return RMQ_OK;
}

void loop_del_fd(struct loop *l, int fd)
{
    if (fd < 0 || (size_t)fd >= l->by_fd_cap || !l->by_fd[fd])
        return;
    struct watch *w = l->by_fd[fd];
    assert(w->fd == fd && !w->dead);
    /* Failure only means the fd is already gone from the set; nothing to undo. */
    (void)epoll_ctl(set_of(l, w), EPOLL_CTL_DEL, fd, NULL);
    l->by_fd[fd] = NULL;
    /* Events for it may still sit in the batch being processed: defer the free. */
    w->dead = 1;
    w->next_dead = l->dead;
    l->dead = w;
}

int loop_add_timer(struct loop *l, int64_t delay_ms, int64_t period_ms, loop_timer_cb cb, void *ctx,
                   int *id_out)
{
    assert(cb && period_ms >= 0);
    int slot = -1;
    for (int i = 0; i < l->ntimers; i++) {
        if (l->timers[i].id == 0) {
            slot = i;
            break;
        }
    }
    if (slot < 0) {
        if (RMQ_GROW(l->timers, l->timers_cap, (size_t)l->ntimers + 1, 8) != 0)
            return RMQ_ENOMEM;
        slot = l->ntimers++;
    }
    struct timer *t = &l->timers[slot];
    assert(slot >= 0 && slot < l->ntimers);
    t->id = l->next_timer_id++;
    t->when = rmq_mono_ms() + delay_ms;
    t->period = period_ms;
    t->cb = cb;
    t->ctx = ctx;
    if (id_out)
        *id_out = t->id;
    return RMQ_OK;
}

static struct timer *find_timer(struct loop *l, int id)
{
    for (int i = 0; i < l->ntimers; i++)
        if (l->timers[i].id == id)
            return &l->timers[i];
    return NULL;
}

void loop_timer_set(struct loop *l, int id, int64_t when_ms)
{
    struct timer *t = find_timer(l, id);
    if (t)
        t->when = when_ms;
}

void loop_timer_cancel(struct loop *l, int id)
{
    struct timer *t = find_timer(l, id);
    if (t)
        t->id = 0;
}

void loop_set_before_sleep(struct loop *l, loop_hook_cb cb, void *ctx)
{
    l->before_sleep = cb;
    l->before_sleep_ctx = ctx;
}

void loop_stop(struct loop *l)
{
    l->stop = 1;
}

int64_t loop_now_ms(const struct loop *l)
{
    return l->now;
}

bool loop_backlogged(const struct loop *l)
{
    return l->backlogged;
}

static void run_timers(struct loop *l)
{
    /* Index loop: a callback may add timers (realloc), so never hold a pointer across it. */
    for (int i = 0; i < l->ntimers; i++) {
        if (l->timers[i].id == 0 || l->timers[i].when > l->now)
            continue;
        int id = l->timers[i].id;
        loop_timer_cb cb = l->timers[i].cb;
        void *ctx = l->timers[i].ctx;
        if (l->timers[i].period > 0)
            l->timers[i].when = l->now + l->timers[i].period;
        else
            l->timers[i].id = 0; /* one-shot: the slot is free again */
        cb(l, id, ctx);
    }
}

static int next_timeout(const struct loop *l)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < l->ntimers; i++)
        if (l->timers[i].id && l->timers[i].when < next)
            next = l->timers[i].when;
    if (next == INT64_MAX)
        return 1000;
    int64_t d = next - rmq_mono_ms();
    if (d < 0)
        return 0;
    return d > 1000 ? 1000 : (int)d;
}

/* Ready fds handled per iteration. Smaller batches run before_sleep (commit,
 * flush, coalesced NOTIFYs) more often, which bounds how long any reply can
 * wait behind the rest of the batch; the commit is cheap (lazy) so the extra
 * iterations cost little. */
#define LOOP_MAX_EVENTS 64

/* Runs the callbacks of n fetched events (skipping fds removed meanwhile);
 * true if one of them was the bulk set's marker. */
static bool dispatch_events(struct loop *l, const struct epoll_event *events, int n)
{
    bool bulk_ready = false;
    for (int i = 0; i < n; i++) {
        if (events[i].data.ptr == &l->bulk_marker) {
            bulk_ready = true;
            continue;
        }
        struct watch *w = events[i].data.ptr;
        if (w->dead)
            continue;
        /* A live watch is the one its fd maps to (loop_del_fd marks it dead first). */
        assert((size_t)w->fd < l->by_fd_cap && l->by_fd[w->fd] == w);
        uint32_t e = events[i].events, out = 0;
        if (e & (EPOLLIN | EPOLLRDHUP))
            out |= LOOP_READ;
        if (e & EPOLLOUT)
            out |= LOOP_WRITE;
        if (e & (EPOLLERR | EPOLLHUP))
            out |= LOOP_ERROR | LOOP_READ;
        w->cb(l, w->fd, out, w->ctx);
    }
    return bulk_ready;
}

int loop_run(struct loop *l)
{
    struct epoll_event events[LOOP_MAX_EVENTS];
    while (!l->stop) {
        if (l->before_sleep)
            l->before_sleep(l, l->before_sleep_ctx);
        if (l->stop)
            break;
        int n = epoll_wait(l->epfd, events, LOOP_MAX_EVENTS, next_timeout(l));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        l->now = rmq_mono_ms();
        l->backlogged = n == LOOP_MAX_EVENTS;
        if (dispatch_events(l, events, n)) {
            /* Level-triggered: what is left stays ready for the next turn. */
            int m = epoll_wait(l->bulk_epfd, events, LOOP_BULK_SLICE, 0);
            if (m > 0)
                (void)dispatch_events(l, events, m);
            l->backlogged = l->backlogged || m == LOOP_BULK_SLICE;
        }
        free_dead(l);
        run_timers(l);
    }
    return RMQ_OK;
}
