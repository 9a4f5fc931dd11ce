/* conn.h — TCP connections carrying remoting frames.
 *
 * A conn_set owns every connection: it reads and decodes frames (handing
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

struct loop;
struct conn_set;

struct conn {
    int fd;
    uint64_t id;   /* unique across restarts (the store's channel id) */
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
    conn_frame_cb on_frame;
    conn_close_cb on_close;
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

/* Encodes cmd and queues it. 0, or an error after which the connection is
 * closing (output limit, memory). */
int conn_send(struct conn *c, const struct rmq_cmd *cmd);
/* Queues pre-encoded frame bytes (e.g. one NOTIFY shared by many). */
int conn_send_bytes(struct conn *c, const uint8_t *p, size_t n);

/* Marks c for closing; its frames stop being dispatched and it is freed in
 * conn_set_reap. The first reason given wins. */
void conn_close_async(struct conn *c, const char *reason);

/* Before sleep: writes all queued output, arming writability where the
 * socket is full. */
void conn_set_flush(struct conn_set *s);
/* Frees every connection marked closing (calling on_close first). */
void conn_set_reap(struct conn_set *s);
/* First connection of the set (iterate with ->next). */
struct conn *conn_set_first(struct conn_set *s);

#endif
