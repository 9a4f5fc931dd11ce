/* bench_load_internal.h — what the parts of bench_load share: the options,
 * the connection and statistics records, the run's global state (defined
 * in bench_load.c; one thread) and the functions each part offers the
 * others. Not an interface beyond tests/bench/bench_load*.c.
 */
#ifndef RMQ_BENCH_LOAD_INTERNAL_H
#define RMQ_BENCH_LOAD_INTERNAL_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_CONNS 20000
#define MAX_WINDOW 256
#define SAMPLE_CAP (4u * 1024u * 1024u)
#define READ_CHUNK 65536
#define DRAIN_S 3.0 /* longest wait for outstanding replies after the deadline */

enum mode { M_HB, M_ROUTE, M_LIST, M_HOLD, M_NOTIFY, M_STORM };
enum storm_kind { STORM_JOIN, STORM_CLOSE, STORM_EXPIRE };

struct opts {
    enum mode mode;
    const char *host;
    uint16_t port;
    int conns, window, groups, topics, members, repeats, span;
    double duration, warmup, setup_timeout;
    double rate;  /* > 0: open loop, total requests per second */
    double pause; /* > 0: closed loop, a connection sends at most once per pause seconds */
    long max_requests;
    enum storm_kind storm;
    bool alternate;  /* hb -a: every other heartbeat of a connection differs by a space */
    double expiry_s; /* storm expire: the daemon's --channel-expiry-ms, in seconds */
    double quiet_s;  /* storm: no frame for this long ends it (-Q ms) */
    const char *group_prefix, *list_group, *id_prefix;
};

struct lconn {
    int fd;
    struct buf in, out;
    const struct buf *req;     /* borrowed template of this connection (hb, list) */
    const struct buf *req_alt; /* hb -a: the other template, sent every other time */
    bool flip;
    double sent[MAX_WINDOW]; /* send times of outstanding requests, FIFO ring */
    int head, outstanding;
    unsigned next_topic;
    bool write_armed, notified;
    double notify_ts;
    double last_notify_ts; /* arrival of the latest NOTIFY (storm) */
    double last_reply_ts;  /* arrival of the latest response (storm) */
    double next_send_at;   /* with -P: not before this time */
};

struct stats {
    uint32_t *samples; /* latency in units of 100 ns */
    size_t nsamples;
    uint64_t seen, completed, notifies, resp_bytes, resp_count;
    uint64_t rng;
};

extern struct opts g_opt;
extern struct lconn *g_conns; /* MAX_CONNS slots; the first g_nconns are open */
extern int g_nconns, g_epfd;
extern struct stats g_st;
extern bool g_sending; /* off: fill_window queues nothing more */
/* Replies inside [g_measure_from, g_measure_to] count; latency only for requests sent inside it. */
extern double g_measure_from, g_measure_to;
extern struct buf *g_route_reqs; /* one pre-encoded request per topic */
/* open loop */
extern int g_tfd;
extern char g_timer_tag; /* epoll data.ptr of the timerfd */
extern double g_ol_start;
extern uint64_t g_ol_next, g_ol_sent_in, g_ol_skipped;
extern double g_ol_max_lag;

/* bench_load.c */
double now_s(void);
int fail_errno(const char *what);

/* bench_load_latency.c: the latency sample */
/* Keeps a uniform sample of at most SAMPLE_CAP latencies (reservoir). */
void record_latency(double secs);
/* Sorts the sample and prints its percentiles as RESULT fields named prefix*. */
void print_latency(const char *prefix);

/* bench_load_requests.c: pre-encoded requests */
/* A request frame: code, at most one extFields pair (k may be NULL), a body. */
int encode_request(int32_t code, const char *k, const char *v, const char *body, size_t body_len,
                   struct buf *out);
/* A HeartbeatData body naming ngroups groups PREFIX{first}.., each subscribed to "T". */
int heartbeat_frame(const char *client_id, const char *prefix, int first, int ngroups, struct buf *out);
/* heartbeat_frame with pad spaces before the body's last brace: the same
 * heartbeat in other bytes. */
int heartbeat_frame_padded(const char *client_id, const char *prefix, int first, int ngroups, int pad,
                           struct buf *out);

/* bench_load_conns.c: connections and the event loop */
/* Writes what is queued; arms EPOLLOUT only when the socket is full. */
int flush_out(struct lconn *c);
/* Queues requests until the window is full (while sending is on). */
int fill_window(struct lconn *c, double now);
/* Open loop: queues every request whose scheduled time has come. */
int open_loop_tick(void);
/* Connects c (non-blocking, TCP_NODELAY) and adds it to the epoll set. */
int connect_one(struct lconn *c);
void close_one(struct lconn *c);
/* Runs the event loop until `until` or until done() says so. */
int run_loop(double until, bool (*done)(void));
/* No request outstanding and nothing left to write on any connection. */
bool all_idle(void);
/* Waits until no frame has arrived for quiet_s (at most max_s). */
int wait_quiet(double quiet_s, double max_s);
/* Connects g_conns[0..n), counting them in g_nconns as they open. */
int open_conns(int n);
/* Sends one request on each connection (template per connection) and waits for all replies. */
int one_round(double max_s);

/* bench_load_modes.c: one function per mode */
/* hb, route, list (closed or, with -R, open loop). */
int run_closed_loop(void);
int run_hold(void);
int run_notify(void);

/* bench_load_storm.c */
int run_storm(void);

#endif
