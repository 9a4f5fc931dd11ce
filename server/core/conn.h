/* conn.h — TCP connections carrying remoting frames, accepted or dialed.
 *
 * A conn_set owns every connection: accepted ones it adopts and dialed ones
 * it connects itself (conn_set_dial; the connect completes when the socket
 * turns writable, and a failed connect closes the connection like any
 * other error, with the reason). It reads and decodes frames (handing
 * each to on_frame), queues encoded replies in a per-connection output
 * buffer, writes them right after that connection's frames are dispatched
 * (unless the owner set hold_output) or else in conn_set_flush (called
 * before the loop sleeps),
 * arms writability only while bytes remain, and frees connections marked
 * with conn_close_async in conn_set_reap — never inside their own callback.
 * Knows frames, not request codes. Loop thread only.
 */
#ifndef RMQ_CONN_H
#define RMQ_CONN_H

#include "buf.h"
#include "remoting_frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct loop;
struct conn_set;

struct conn {
    int fd;
    uint64_t id;   /* the owner's: for accepted ones unique across restarts (the store's channel id) */
    char peer[64]; /* "ip:port" */
    int64_t opened_ms;
    int64_t last_frame_ms; /* loop clock of the last decoded frame (idle detection) */
    struct rmq_frame_decoder dec;
    struct buf out;
    bool closing;
    bool write_armed;
    bool in_flush_list;
    bool hold_output; /* set by the owner: output waits for conn_set_flush */
    bool bulk;        /* in the loop's bulk set (conn.c classify) */
    bool dialed;      /* made by conn_set_dial, not adopted */
    bool connecting;  /* dialed and the connect not yet complete */
    uint32_t frames_in_event, calm_events;
    uint32_t bulk_frames_in_event;  /* counted by the owner's on_frame: frames of a bulk kind */
    size_t in_counted, out_counted; /* what the set's budget totals hold for it */
    char close_reason[200];
    void *user; /* the owner's per-connection state (borrowed) */
    struct conn_set *set;
    struct conn *prev, *next; /* all connections */
    struct conn *next_flush;  /* connections with output queued */
    struct conn *next_close;  /* connections to reap */
};

/* on_frame: a decoded frame; cmd is borrowed (cleared after the call; the
 * callback may take its body by setting cmd->body = NULL). on_close: the
 * connection is about to be freed (reason in c->close_reason). */
typedef void (*conn_frame_cb)(void *ctx, struct conn *c, struct rmq_cmd *cmd);
typedef void (*conn_close_cb)(void *ctx, struct conn *c);
/* A dialed connection's connect completed: frames flow from now on. */
typedef void (*conn_open_cb)(void *ctx, struct conn *c);

struct conn_set_options {
    size_t max_frame;
    size_t max_header; /* 0: RMQ_HEADER_MAX_DEFAULT */
    size_t max_output; /* per connection */
    /* Over all connections (0 = none): past them the connection adding
     * bytes is closed if it holds more than 64 KiB, so the memory a daemon
     * spends on clients that stop reading, or on stalled partial frames,
     * is bounded whatever their number. */
    size_t max_buffered_output;
    size_t max_buffered_input;
    size_t read_budget; /* bytes one readable event may read; 0: 256 KiB */
    /* Output waits for conn_set_flush even after a read (a client that
     * writes once per loop turn); otherwise replies go out right after the
     * frames that caused them. */
    bool defer_output;
    conn_frame_cb on_frame;
    conn_close_cb on_close;
    conn_open_cb on_open; /* may be NULL (a set that never dials) */
    void *ctx;
};

/* Bytes the set's connections hold in their buffers now, and how many
 * connections were closed at a global budget. */
struct conn_budget_stats {
    size_t input_bytes, output_bytes;
    uint64_t input_closes, output_closes;
};

/* New set, owned by the caller (conn_set_free). 0 or RMQ_ENOMEM. */
int conn_set_new(struct loop *loop, const struct conn_set_options *opt, struct conn_set **out);
/* The set's buffer totals and budget closes (borrowed). */
const struct conn_budget_stats *conn_set_budget(const struct conn_set *s);
/* Closes every connection (on_close is called for each) and frees. */
void conn_set_free(struct conn_set *s);
size_t conn_set_count(const struct conn_set *s);
/* Connections closed so far because their frames were malformed. */
uint64_t conn_set_bad_frames(const struct conn_set *s);

/* Adopts an accepted fd; the new conn gets id. 0 or an error (fd closed). */
int conn_set_adopt(struct conn_set *s, int fd, uint64_t id, const char *peer, int64_t now_ms,
                   struct conn **out);

/* Connects to sa without blocking; the new conn (dialed, connecting) gets
 * id, and peer names it. Output may be queued at once: it is written once
 * the connect completes. 0, or -errno when the connect failed at once (no
 * conn was made), or RMQ_ENOMEM. */
int conn_set_dial(struct conn_set *s, const struct sockaddr *sa, socklen_t salen, uint64_t id,
                  const char *peer, int64_t now_ms, struct conn **out);

/* Encodes cmd and queues it. 0, or an error after which the connection is
 * closing (output limit, memory). */
int conn_send(struct conn *c, const struct rmq_cmd *cmd);
/* Encodes cmd and queues it, or, when it does not fit (RMQ_E2BIG) or cannot
 * be encoded, leaves the output as it was and returns the error: the
 * connection stays open (unless a global budget of the set is exceeded,
 * as with conn_send) and the caller may try again later. RMQ_ESTATE when
 * c is closing. */
int conn_try_send(struct conn *c, const struct rmq_cmd *cmd);
/* Queues pre-encoded frame bytes (e.g. one NOTIFY shared by many). */
int conn_send_bytes(struct conn *c, const uint8_t *p, size_t n);

/* Marks c for closing; its frames stop being dispatched and it is freed in
 * conn_set_reap. The first reason given wins. */
void conn_close_async(struct conn *c, const char *reason);
/* Drops c's queued output, so nothing more is written when it is freed (a
 * connection given up on rather than closed politely). */
void conn_drop_output(struct conn *c);

/* Before sleep: writes all queued output, arming writability where the
 * socket is full. */
void conn_set_flush(struct conn_set *s);
/* Frees every connection marked closing (calling on_close first); how
 * many it freed. */
size_t conn_set_reap(struct conn_set *s);
/* First connection of the set (iterate with ->next). */
struct conn *conn_set_first(struct conn_set *s);

/* Assert-only check of the set's invariants: every conn once in the list
 * of all, the closing ones (and only they) in the reap list, the flush
 * list and the flags agreeing, the budget totals equal to the buffers,
 * the dialed/connecting flags consistent. Asserted at the end of the set's
 * mutators (new, adopt, dial, flush, reap); those of one connection check
 * that connection's own invariants. Walks every conn only while the set is
 * small, so debug builds stay linear. No-op under NDEBUG. */
void conn_set_sanity(const struct conn_set *s);

#endif
