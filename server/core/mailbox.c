/* mailbox.c — the one cross-thread channel (see mailbox.h).
 *
 * Design: a singly linked FIFO (head/tail) guarded by a pthread mutex, plus
 * an eventfd the loop polls. Invariant, kept under the lock: the eventfd is
 * readable exactly when the queue is non-empty. So mailbox_post writes the
 * eventfd only when it makes the queue non-empty (a burst of posts costs one
 * syscall, not one each), and mailbox_drain reads it in the same critical
 * section that swaps the whole queue out. Handlers and done() then run with
 * the lock released, so a handler may post again (or take as long as it
 * likes) without blocking the HTTP thread. No wakeup is lost and none is
 * spurious.
 *
 * Threads: mailbox_post / mailbox_close from any thread; mailbox_drain on the
 * loop thread only; mailbox_new / mailbox_free by the owner when no other
 * thread can post any more.
 *
 * Ownership: the mailbox never owns a message. Between mailbox_post and the
 * message's done() it only borrows it; done() hands it back to the poster.
 */
#include "mailbox.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct mailbox {
    pthread_mutex_t lock;     /* guards head, tail, closed */
    struct mailbox_msg *head; /* oldest first */
    struct mailbox_msg *tail;
    bool closed;
    int efd; /* eventfd; readable while messages may be queued */
};

int mailbox_new(struct mailbox **out)
{
    struct mailbox *mb = rmq_calloc(1, sizeof *mb);
    if (!mb)
        return RMQ_ENOMEM;
    int rc = pthread_mutex_init(&mb->lock, NULL);
    if (rc != 0) {
        rmq_free(mb);
        return -rc;
    }
    mb->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (mb->efd < 0) {
        rc = -errno;
        pthread_mutex_destroy(&mb->lock);
        rmq_free(mb);
        return rc;
    }
    *out = mb;
    return 0;
}

/* Detaches and returns the whole queue (oldest first); caller walks ->next.
 * Clears the eventfd in the same critical section (see the invariant). */
/* Under the lock: head and tail are both set or both NULL, and tail ends
 * the list (the eventfd counter is non-zero exactly while head is set). */
static void queue_sane(const struct mailbox *mb)
{
    assert((mb->head == NULL) == (mb->tail == NULL));
    assert(!mb->tail || mb->tail->next == NULL);
    (void)mb;
}

static struct mailbox_msg *take_all(struct mailbox *mb)
{
    uint64_t count;
    pthread_mutex_lock(&mb->lock);
    queue_sane(mb);
    struct mailbox_msg *list = mb->head;
    if (list) {
        /* Cannot block (EFD_NONBLOCK) and cannot fail with the counter > 0. */
        while (read(mb->efd, &count, sizeof count) < 0 && errno == EINTR)
            ;
    }
    mb->head = mb->tail = NULL;
    pthread_mutex_unlock(&mb->lock);
    return list;
}

/* Completes every message still queued with 503 so each poster gets its
 * done() exactly once, even when the loop never ran again. */
void mailbox_free(struct mailbox *mb)
{
    if (!mb)
        return;
    mailbox_close(mb);
    struct mailbox_msg *msg = take_all(mb);
    while (msg) {
        struct mailbox_msg *next = msg->next;
        msg->next = NULL;
        msg->status = 503;
        json_decref(msg->reply);
        msg->reply = json_pack("{s:s}", "error", "shutting down");
        if (msg->done)
            msg->done(msg);
        msg = next;
    }
    close(mb->efd);
    pthread_mutex_destroy(&mb->lock);
    rmq_free(mb);
}

int mailbox_fd(const struct mailbox *mb)
{
    return mb->efd;
}

/* Queues msg at the tail and, if the queue was empty, wakes the loop.
 * Returns 0, or RMQ_ESTATE once closed (msg untouched, done never called). */
int mailbox_post(struct mailbox *mb, struct mailbox_msg *msg)
{
    assert(msg && msg != mb->tail);
    msg->next = NULL;
    pthread_mutex_lock(&mb->lock);
    queue_sane(mb);
    if (mb->closed) {
        pthread_mutex_unlock(&mb->lock);
        return RMQ_ESTATE;
    }
    if (mb->tail) {
        mb->tail->next = msg; /* eventfd already readable */
    } else {
        mb->head = msg;
        uint64_t one = 1;
        /* The counter is 0 here (invariant), so this cannot hit EAGAIN. */
        while (write(mb->efd, &one, sizeof one) < 0 && errno == EINTR)
            ;
    }
    mb->tail = msg;
    queue_sane(mb);
    pthread_mutex_unlock(&mb->lock);
    return 0;
}

void mailbox_close(struct mailbox *mb)
{
    pthread_mutex_lock(&mb->lock);
    mb->closed = true;
    pthread_mutex_unlock(&mb->lock);
}

void mailbox_complete(struct mailbox_msg *msg)
{
    if (msg->done)
        msg->done(msg);
}

/* Loop thread. Takes the queue (clearing the eventfd); a post that lands
 * after the swap re-arms the eventfd, so it is seen on the next wakeup.
 * handler fills status/reply; done hands the message back (after which we
 * must not touch it, hence reading ->next first). Returns the count run. */
int mailbox_drain(struct mailbox *mb, mailbox_handler handler, void *ctx)
{
    int n = 0;
    struct mailbox_msg *msg = take_all(mb);
    while (msg) {
        struct mailbox_msg *next = msg->next;
        msg->next = NULL;
        handler(ctx, msg);
        if (msg->status != MAILBOX_DEFERRED)
            mailbox_complete(msg);
        msg = next;
        n++;
    }
    return n;
}
