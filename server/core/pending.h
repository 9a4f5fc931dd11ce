/* pending.h — one table of requests that wait for their response: the
 * daemon's own requests to its clients (forwarded running-info asks, the
 * admin API's holdings checks) and the remoting client's requests.
 *
 * A request is keyed by its connection (an opaque pointer, never
 * dereferenced) and its opaque. Its callback runs exactly once: with the
 * response, or with NULL when its deadline passes, its connection goes
 * away or the table is freed. Matching a response is O(1) (hash), a
 * deadline O(log n) (binary heap), dropping a connection O(its requests):
 * a peer that never answers can park many requests without making the
 * loop's work grow with the square of their number.
 *
 * Each connection has a bound (max_per_conn): one more request is refused
 * with RMQ_E2BIG, so one silent peer cannot grow the table without end.
 *
 * Pure data structure on the caller's thread (the loop); no clock of its
 * own (deadlines are the caller's milliseconds), no I/O.
 */
#ifndef RMQ_PENDING_H
#define RMQ_PENDING_H

#include "hashmap.h"
#include "remoting_cmd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* owner is the table's owner (pending_init); ctx the request's; resp is
 * borrowed for the call, NULL when no response will come. */
typedef void (*pending_cb)(void *owner, void *ctx, const struct rmq_cmd *resp);

struct pending_req {
    const void *conn; /* key, with opaque; borrowed, never dereferenced */
    int32_t opaque;
    int64_t deadline_ms;
    uint64_t seq; /* send order */
    pending_cb cb;
    void *ctx;
    size_t heap_at;                            /* index in the deadline heap */
    struct pending_req *conn_prev, *conn_next; /* this connection's requests, in send order */
    struct pending_req *prev, *next;           /* every request, in send order */
};

struct pending_table {
    void *owner;
    size_t max_per_conn;
    struct hashmap by_key;  /* (conn, opaque) -> struct pending_req (owned) */
    struct hashmap by_conn; /* conn -> struct pending_conn (owned) */
    struct pending_req **heap;
    size_t nheap, heap_cap;
    struct pending_req *first, *last;
    uint64_t next_seq;
};

/* Sets up an empty table on t (zeroed by the caller). owner goes to every
 * callback. 0 or RMQ_ENOMEM. */
int pending_init(struct pending_table *t, void *owner, size_t max_per_conn);
/* Runs every callback with NULL (send order; what those callbacks add, for
 * a few rounds), then frees the storage. t may be a zeroed table that was
 * never set up. */
void pending_free(struct pending_table *t);

/* Adds a request. 0; RMQ_EEXIST when (conn, opaque) is already waiting;
 * RMQ_E2BIG when conn already has max_per_conn requests; RMQ_ENOMEM. On an
 * error cb is never called. */
int pending_add(struct pending_table *t, const void *conn, int32_t opaque, int64_t deadline_ms, pending_cb cb,
                void *ctx);
/* A response for (conn, opaque): removes the request and runs its callback
 * with resp. false when nothing was waiting (nothing runs). */
bool pending_complete(struct pending_table *t, const void *conn, int32_t opaque, const struct rmq_cmd *resp);
/* Takes back a request without running its callback (it was never sent).
 * false when (conn, opaque) was not waiting. */
bool pending_cancel(struct pending_table *t, const void *conn, int32_t opaque);
/* Runs with NULL, in deadline order, every request whose deadline is <=
 * now_ms (those its callbacks add wait for the next call). Returns how
 * many ran. */
size_t pending_expire(struct pending_table *t, int64_t now_ms);
/* conn is going away: runs its requests' callbacks with NULL, in send
 * order. Returns how many ran. */
size_t pending_drop_conn(struct pending_table *t, const void *conn);

/* The earliest deadline, INT64_MAX when nothing waits. */
int64_t pending_next_deadline(const struct pending_table *t);
size_t pending_count(const struct pending_table *t);
size_t pending_count_conn(const struct pending_table *t, const void *conn);
/* Every request in send order (borrowed; a callback may be replaced in
 * place, nothing else changed): for (r = pending_first(t); r; r = r->next). */
struct pending_req *pending_first(const struct pending_table *t);

/* Assert-only consistency check of every index (hash, heap, lists). */
void pending_sanity(const struct pending_table *t);

#endif
