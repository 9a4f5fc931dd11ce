/* mailbox.h — the only channel between the HTTP thread and the loop thread.
 *
 * The HTTP thread fills a mailbox_msg, posts it and waits (its MHD
 * connection suspended). The loop thread is woken through an eventfd
 * (mailbox_fd), drains the queue, runs the handler for each message on its
 * own thread — the handler may read and change protocol state and fills
 * status and reply — then calls the message's done callback, which the HTTP
 * side uses to resume its connection. The handler never keeps a pointer to
 * the message after it returns; the HTTP side frees the message after done.
 */
#ifndef RMQ_MAILBOX_H
#define RMQ_MAILBOX_H

#include <jansson.h>

enum admin_op {
    ADMIN_OP_GROUPS_LIST = 1,
    ADMIN_OP_GROUP_GET,        /* arg = group */
    ADMIN_OP_GROUP_ALLOCATION, /* arg = group; query: topic, strategy, virtualNodes, consumerIdcs, inner */
    ADMIN_OP_TOPICS_LIST,
    ADMIN_OP_TOPIC_GET,           /* arg = topic */
    ADMIN_OP_TOPIC_PUT,           /* arg = topic; body */
    ADMIN_OP_TOPIC_DELETE,        /* arg = topic */
    ADMIN_OP_STATS,               /* live counters for /healthz */
    ADMIN_OP_CLIENT_RUNNING_INFO, /* arg = group; query: clientId (asks the client with 307; deferred) */
    ADMIN_OP_GROUP_CONSISTENCY, /* arg = group; query: topic, strategy...: holdings vs expected (deferred) */
    ADMIN_OP_GROUP_CONVERGED,   /* arg = group; query: topic, strategy..., timeout_ms (deferred) */
    /* Ops from here on are handled by admin_ops.c (the admin surface). */
    ADMIN_OP_EXTRA_FIRST = 100,
    ADMIN_OP_CLIENTS_LIST,        /* live clients, sorted by client id */
    ADMIN_OP_CLIENT_GET,          /* arg = clientId */
    ADMIN_OP_GROUP_EVICT,         /* arg = group; query: clientId (closes its channels) */
    ADMIN_OP_RESET,               /* broker_reset_live + store_reset */
    ADMIN_OP_CLOCK_GET,           /* {"virtual","nowMs"} */
    ADMIN_OP_CLOCK_ADVANCE,       /* body {"ms":N} (validated by the HTTP side) */
    ADMIN_OP_GROUP_DIAGNOSTICS,   /* arg = group */
    ADMIN_OP_ALLOCATE_MEMBERS,    /* arg = group; query: topic, strategy...; body {"members"} */
    ADMIN_OP_METRICS,             /* {"text": Prometheus text of the loop's state} */
    ADMIN_OP_CLUSTER,             /* query: group; role, brokers / registrations (cluster.h) */
    ADMIN_OP_GROUP_OFFSETS,       /* arg = group; query: topic, strategy...: committed offsets per queue */
    ADMIN_OP_GROUP_OFFSETS_RESET, /* arg = group; body {"topic",...,"dryRun"} (admin_offsets.h) */
    ADMIN_OP_GROUP_OFFSETS_CLONE, /* arg = group (destination); body {"from","topic","dryRun"} */
};

struct mailbox_msg {
    enum admin_op op;
    char *arg;     /* owned by the HTTP side; may be NULL */
    json_t *query; /* owned by the HTTP side: object of query parameters (strings) */
    json_t *body;  /* owned by the HTTP side: parsed request body or NULL */

    /* Filled by the loop-side handler. */
    int status;    /* HTTP status */
    json_t *reply; /* new reference, handed to the HTTP side */

    /* Completion, called on the loop thread after the handler. */
    void (*done)(struct mailbox_msg *msg);
    void *done_ctx;
    struct mailbox_msg *next; /* private to mailbox.c */
};

struct mailbox;

/* New mailbox (eventfd + mutex-protected queue); 0 or -errno / RMQ_ENOMEM. */
int mailbox_new(struct mailbox **out);
/* Frees the mailbox; messages still queued get status 503 and done(). Accepts NULL. */
void mailbox_free(struct mailbox *mb);
/* The eventfd the loop polls for readability. */
int mailbox_fd(const struct mailbox *mb);
/* Any thread: queues msg and wakes the loop. 0, or RMQ_ESTATE after mailbox_close. */
int mailbox_post(struct mailbox *mb, struct mailbox_msg *msg);
/* Refuses further posts (shutdown); queued messages are still drained. */
void mailbox_close(struct mailbox *mb);

/* A handler that cannot answer at once (it waits for a client's reply) sets
 * msg->status to MAILBOX_DEFERRED; drain then does not call done, and the
 * loop calls mailbox_complete(msg) later, once status and reply are set. */
#define MAILBOX_DEFERRED (-1)
void mailbox_complete(struct mailbox_msg *msg);

typedef void (*mailbox_handler)(void *ctx, struct mailbox_msg *msg);
/* Loop thread: clears the eventfd, then for every queued message calls
 * handler(ctx, msg) and msg->done(msg). Returns the number handled. */
int mailbox_drain(struct mailbox *mb, mailbox_handler handler, void *ctx);

#endif
