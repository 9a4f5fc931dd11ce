/* stats.h — counters and latency histograms the loop thread keeps for
 * /metrics and /healthz. Only the loop thread writes them; the HTTP side
 * gets a snapshot built on the loop thread through the mailbox. */
#ifndef RMQ_STATS_H
#define RMQ_STATS_H

#include <stddef.h>
#include <stdint.h>

#define STATS_MAX_CODES 48
/* Histogram upper bounds in microseconds; the last bucket is +Inf. */
#define STATS_BUCKETS 12
extern const uint64_t stats_bucket_bounds_us[STATS_BUCKETS - 1];

struct stats_histogram {
    uint64_t count;
    uint64_t sum_us;
    uint64_t buckets[STATS_BUCKETS]; /* not cumulative */
};

struct stats_code {
    int32_t code;
    struct stats_histogram latency; /* handler time, decode to reply queued */
};

enum stats_change_kind {
    STATS_CHANGE_JOIN,
    STATS_CHANGE_CLOSE,
    STATS_CHANGE_UNREGISTER,
    STATS_CHANGE_EXPIRE,
    STATS_CHANGE_SUBSCRIPTION,
    STATS_CHANGE_KINDS
};

struct server_stats {
    uint64_t requests;
    uint64_t heartbeats;
    uint64_t heartbeats_repeated; /* answered by the unchanged-heartbeat fast path */
    uint64_t notifications_sent;
    uint64_t changes;
    uint64_t changes_by_kind[STATS_CHANGE_KINDS];
    uint64_t expirations;
    uint64_t connections_accepted;
    uint64_t connections_refused; /* over --max-connections */
    uint64_t accept_failures;     /* accept() out of descriptors or memory */
    uint64_t limit_hits;          /* requests refused at a configured limit (--max-*) */
    uint64_t messages_retired;    /* stored messages removed by retention (--max-queue-messages, ...) */
    uint64_t requests_throttled;  /* over --max-requests-per-sec */
    uint64_t requests_denied;     /* failed the --acl check */
    uint64_t commit_failures;
    /* --record-holdings-ms: GET_CONSUMER_RUNNING_INFO asks sent, answered with
     * queues, unanswered (timeout, closed, error, unreadable), group rounds
     * skipped because the group's previous round was still waiting. */
    uint64_t holdings_asks, holdings_answers, holdings_unanswered, holdings_rounds_skipped;
    /* Any holdings ask (HTTP check or recording) answered over the running
     * info bounds; HTTP checks refused because too many were waiting. */
    uint64_t holdings_too_big, holdings_checks_refused;
    struct stats_histogram commit; /* store batch commit latency */
    /* Loop iterations that sent NOTIFYs: from queueing the first to having
     * written the last (or found its socket full), the commit included. */
    struct stats_histogram fanout;
    struct stats_histogram expiry_scan; /* one expiry scan, idle connections and members */
    struct stats_code codes[STATS_MAX_CODES];
    size_t ncodes;
    uint64_t codes_overflow; /* requests whose code found no free slot */
};

void stats_histogram_add(struct stats_histogram *h, uint64_t us);
/* Records one request of code taking us microseconds. */
void stats_record_request(struct server_stats *st, int32_t code, uint64_t us);
/* "join" -> STATS_CHANGE_JOIN ...; -1 for an unknown kind. */
int stats_change_kind(const char *kind);
const char *stats_change_kind_name(int kind);

#endif
