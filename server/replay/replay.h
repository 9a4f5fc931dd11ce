/* replay.h — offline replay of a heartbeat trace: the daemon's membership
 * history plus a model of every client's rebalancing, with the intervals
 * where a queue had two owners (duplicate consumption) or none (stall).
 *
 * Membership runs through server/model/registry.c — the daemon's own registry,
 * which applies common/broker/membership.c — so replay and daemon cannot disagree
 * on what is a change. The engine lives in server/ for that reason; it does
 * no I/O (output accumulates in a buffer the caller drains) and reads no
 * clock: time is the trace's. Events go in file order through replay_feed;
 * replay_finish writes the report. Same input and options, same output,
 * byte for byte. One thread.
 */
#ifndef RMQ_REPLAY_H
#define RMQ_REPLAY_H

#include "allocate.h"
#include "buf.h"
#include "dialect.h"
#include "trace_fmt.h"

#include <stdbool.h>
#include <stdint.h>

/* Which NOTIFYs make a modeled client rebalance. */
enum replay_notify_source {
    REPLAY_NOTIFY_AUTO = 0, /* the model's, except to connections the trace shows never receiving one */
    REPLAY_NOTIFY_MODEL,    /* the model's, to everyone */
    REPLAY_NOTIFY_TRACE,    /* the recorded notify lines */
};

enum replay_format { REPLAY_TEXT = 0, REPLAY_JSON };

/* --client ID:notify=on|off,rebalance-ms=N: one client's behaviour, which
 * replaces what was inferred and the global flags. */
struct replay_client_override {
    const char *client_id; /* borrowed */
    int notify;            /* -1 unset, 0 ignores NOTIFY, 1 reacts */
    int64_t rebalance_ms;  /* 0 unset */
};

/* What a client's recorded GET_CONSUMER_LIST_BY_GROUP queries say about it
 * (replay_infer.c): whether it re-queried right after a NOTIFY, and how far
 * apart its own rounds are. */
struct replay_behaviour {
    int notify;        /* -1 unknown, 0 ignores NOTIFY, 1 reacts */
    int64_t period_ms; /* its timer period, 0 unknown */
    uint32_t notifies; /* NOTIFYs that tell (not at its start, window inside the trace) */
    uint32_t reacted;  /* of those, followed by a query round within REPLAY_REACT_WINDOW_MS */
    uint32_t rounds;   /* query rounds (queries closer than REPLAY_ROUND_GAP_MS are one) */
    uint32_t gaps;     /* gaps the period was measured over */
};
#define REPLAY_REACT_WINDOW_MS 1000
#define REPLAY_ROUND_GAP_MS 300

/* Infers a behaviour from one client's recorded NOTIFY times and query
 * times (any order; sorted in place). end_ms: the last time the trace
 * covers (a NOTIFY whose window runs past it tells nothing). Pure. */
void replay_infer_behaviour(int64_t *notifies, size_t nn, int64_t *queries, size_t nq, int64_t end_ms,
                            struct replay_behaviour *out);

struct replay_options {
    struct allocate_options alloc; /* strategy; strings borrowed */
    int64_t rebalance_ms;          /* client timer (20000) */
    int64_t notify_delay_ms;       /* NOTIFY to rebalance (0) */
    int64_t expiry_ms;             /* channel expiry (120000) */
    int64_t scan_ms;               /* expiry scan period (1000, the daemon's default) */
    struct broker_dialect dialect; /* --compat (rmqcoord's, the daemon's default), its notify flags
                                      overridden by --notify-on-expiry, --notify-on-noop-unregister */
    enum replay_notify_source notify_source;
    const char *const *ignore_notify; /* client ids that only rebalance on their timer; borrowed */
    size_t n_ignore;
    bool rebalance_explicit; /* --client-rebalance-ms given: it beats a measured period */
    bool infer;              /* use the behaviour inferred from recorded queries (true) */
    const struct replay_client_override *overrides; /* borrowed */
    size_t n_overrides;
    /* Report window; relative values are ms after the trace start. */
    bool has_from, has_to, from_rel, to_rel;
    int64_t from_ms, to_ms;
    /* --explain TOPIC:BROKER:QUEUE (strings borrowed). */
    const char *explain_topic, *explain_broker;
    int32_t explain_qid;
    enum replay_format format;
};

/* Sets the defaults listed above (AVG). */
void replay_options_init(struct replay_options *opt);

struct replay_stats {
    uint64_t events, headers, connects, requests, closes, notifies_recorded, routes;
    uint64_t heartbeats, heartbeats_rejected, unregisters, other_requests;
    uint64_t ignored_closed_conn, implicit_connects, duplicate_connects, time_regressions;
    uint64_t changes, joins, leaves_close, leaves_unregister, leaves_expire, sub_changes, restarts;
    uint64_t notify_groups, notify_deliveries, notify_skipped_deaf;
    uint64_t rebalances_start, rebalances_notify, rebalances_timer, alloc_changes, alloc_errors;
    uint64_t overlap_intervals, stall_intervals, open_intervals;
    uint64_t consumer_list_queries, inferred_ignore, inferred_react, inferred_period;
    /* Recorded holdings (replay_truth.c, docs/trace-format.md). */
    uint64_t holdings_samples, holdings_unanswered, holdings_rounds;
    uint64_t real_overlaps, real_gaps, disagreements, dis_model, dis_client;
    int64_t real_overlap_ms, real_gap_ms, disagreement_ms;
    int64_t overlap_ms, stall_ms, overlap_max_ms, stall_max_ms;
    uint64_t clients;
};

struct replay;

/* New engine (replay_free). 0, RMQ_EINVAL (bad option, err says which) or
 * RMQ_ENOMEM. */
int replay_new(const struct replay_options *opt, struct replay **out, char *err, size_t errlen);
void replay_free(struct replay *rp);

/* Before the first replay_feed (a first pass over the file): conn received a
 * recorded NOTIFY. Feeds REPLAY_NOTIFY_AUTO's notion of a deaf client. */
int replay_note_recorded_notify(struct replay *rp, uint64_t conn);

/* Before the first replay_feed, with the notify pre-pass: a recorded NOTIFY
 * for group to conn at ts (also does replay_note_recorded_notify), and a
 * recorded GET_CONSUMER_LIST_BY_GROUP for group on conn at ts. They feed the
 * inferred behaviour. 0 or RMQ_ENOMEM. */
int replay_note_notify(struct replay *rp, uint64_t conn, const char *group, int64_t ts);
int replay_note_query(struct replay *rp, uint64_t conn, const char *group, int64_t ts);

/* One event, in file order. Returns 0, 1 when the event is past --to (the
 * caller may stop reading), or RMQ_ENOMEM. */
int replay_feed(struct replay *rp, const struct trace_event *ev);

/* Runs the model to the end time and writes the report. 0 or RMQ_ENOMEM. */
int replay_finish(struct replay *rp);

/* Output written so far (borrowed; the caller writes and buf_reset()s it). */
struct buf *replay_output(struct replay *rp);
const struct replay_stats *replay_get_stats(const struct replay *rp);

#endif
