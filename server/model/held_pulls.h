/* held_pulls.h — PULL_MESSAGE requests held open (long polling) until their
 * deadline or until their group changes (docs/protocol.md §6.3). The table
 * only keeps them; answering is the request layer's (pull_requests.c).
 * Loop thread only. */
#ifndef RMQ_HELD_PULLS_H
#define RMQ_HELD_PULLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;

struct held_pull {
    struct conn *conn; /* borrowed; NULL once it closed (nothing is sent then) */
    int32_t opaque;
    int32_t version;
    uint8_t serialize_type;
    char *group; /* owned */
    char *topic; /* owned */
    int32_t queue_id;
    int64_t queue_offset;
    int64_t deadline_ms; /* broker_now_ms clock (virtual-clock aware) */
};

struct held_pulls {
    struct held_pull *items; /* owned */
    size_t n, cap;
};

/* Which holds to release, and what to do with each released one (called
 * before its strings are freed; h is borrowed for the call). */
typedef bool (*held_pull_pick)(const struct held_pull *h, const void *arg);
typedef void (*held_pull_answer)(void *ctx, const struct held_pull *h);

/* Adds h, taking its group and topic (freed by the table); RMQ_ENOMEM
 * leaves them with the caller. */
int held_pulls_add(struct held_pulls *p, const struct held_pull *h);
/* Removes every hold pick() accepts, calling answer (may be NULL) for each. */
void held_pulls_release(struct held_pulls *p, held_pull_pick pick, const void *arg, held_pull_answer answer,
                        void *ctx);
/* c is closing: its holds stay until released but answer nothing. */
void held_pulls_forget_conn(struct held_pulls *p, const struct conn *c);
/* Frees every hold without answering; p is empty and reusable after. */
void held_pulls_free(struct held_pulls *p);

#endif
