/* config.h — the daemon's settings: flags, defaults, validation, --help.
 *
 * Filled once by config_parse on the main thread before anything starts and
 * read-only afterwards (threads may read it freely).
 */
#ifndef RMQ_CONFIG_H
#define RMQ_CONFIG_H

#include "dialect.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_LISTEN 8
#define CONFIG_MAX_TOPICS 64

struct config_addr {
    char host[256];
    uint16_t port;
};

struct config_topic {
    char name[256];
    int queues;
};

/* --role: both = one process is name server and broker (the default). */
enum config_role { CONFIG_ROLE_BOTH = 0, CONFIG_ROLE_NAMESRV, CONFIG_ROLE_BROKER };
#define CONFIG_MAX_NAMESRV 8

struct config {
    struct config_addr listen[CONFIG_MAX_LISTEN];
    size_t nlisten;
    struct config_addr advertise; /* port 0 = the first listener's bound address */
    bool advertise_set;
    struct config_addr http;
    bool http_enabled;
    bool http_insecure; /* --http-insecure: serve a non-loopback --http without --admin-token */
    char store_path[4096];
    int64_t channel_expiry_ms;
    int64_t expiry_scan_ms;
    int64_t sync_interval_ms;   /* 0 = every commit fsynced on the loop */
    int64_t notify_coalesce_ms; /* --notify-coalesce-ms: least time between two NOTIFYs of a group, 0 = off */
    int auto_create_queues;     /* 0 = auto-create off */
    size_t max_frame_bytes;
    size_t max_header_bytes;
    size_t max_buffered_output;
    size_t max_buffered_input;
    size_t max_pending_output; /* per connection; a slower reader is dropped */
    int64_t pull_hold_max_ms;
    int64_t lock_expiry_ms;
    int64_t max_connections;
    int64_t max_groups_per_client;
    int64_t max_subscriptions;
    int64_t max_heartbeat_bytes;         /* body parsed at most */
    int64_t max_heartbeat_subscriptions; /* over all groups of one heartbeat */
    int64_t max_topics;                  /* past it no topic is created */
    int64_t max_client_id_bytes;
    int64_t max_requests_per_sec; /* per connection, 0 = unlimited */
    int64_t idle_timeout_ms;      /* 0 = never */
    char broker_name[128];
    char cluster_name[128];
    struct config_topic topics[CONFIG_MAX_TOPICS];
    size_t ntopics;
    int log_level;              /* enum log_level */
    char record_path[4096];     /* --record: heartbeat trace file, empty = off */
    int64_t record_holdings_ms; /* --record-holdings-ms: ask clients for their queues this often, 0 = off */
    int64_t record_max_bytes;   /* --record-max-bytes: the trace file's bound */
    int64_t max_queue_messages; /* --max-queue-messages: retention per queue (oldest go first) */
    int64_t max_message_bytes;  /* --max-message-bytes: retention of all stored messages */
    char admin_token[256];      /* --admin-token / RMQCOORD_ADMIN_TOKEN; empty = mutating routes open */
    bool virtual_clock;
    /* Cluster mode (docs/cluster.md). */
    int role; /* enum config_role */
    struct config_addr namesrv[CONFIG_MAX_NAMESRV];
    size_t nnamesrv;
    int64_t register_interval_ms;     /* broker: REGISTER_BROKER period */
    int64_t broker_expiry_ms;         /* namesrv: a broker silent this long leaves the routes */
    int64_t ns_max_topics_per_broker; /* namesrv: topics one REGISTER_BROKER may carry */
    int64_t ns_max_topics;            /* namesrv: topics of all registered brokers together */
    char namesrv_access_key[256];     /* broker: signs REGISTER/UNREGISTER_BROKER (ACL), empty = unsigned */
    char namesrv_secret_key[256];
    char acl_path[4096];
    /* Broker-exact behaviours (docs/protocol.md §12); --compat sets them all, a flag of its own overrides. */
    struct broker_dialect dialect; /* --compat MODE's answers, with --notify-on-expiry and
                                      --notify-on-noop-unregister in it (dialect.h) */
    bool refuse_sql92;             /* --sql92 refuse: CHECK_CLIENT_CONFIG refuses SQL92 */
    bool queue_end_zero; /* --queue-end zero: max offset 0 (an empty queue), not the highest commit */
    bool pull_checks;    /* --pull-checks on: OFFSET_MOVED, queueId, SUBSCRIPTION_NOT_EXIST/_LATEST */
    bool release_pulls_on_change; /* --release-pulls-on-change: held pulls answered when the group changes */
    bool refuse_send_back;        /* --send-back refuse: CONSUMER_SEND_MSG_BACK fails (no message stored) */
    /* --acl: accounts file; empty = no authentication */ /* --clock virtual: time moves only by POST
                                                             /api/clock/advance */
};

/* Fills *cfg from argv (argv[0] = "serve"). Returns 0 to run, 1 when
 * --help/--version was printed (exit 0), or RMQ_EINVAL after printing a
 * clear error to stderr (exit 2). */
/* Every field at its documented default (what `serve` runs with when no flag is given). */
void config_defaults(struct config *cfg);
int config_parse(struct config *cfg, int argc, char **argv);
/* Parses "HOST:PORT" (also "[v6]:PORT"). 0 or RMQ_EINVAL. */
int config_parse_addr(const char *s, struct config_addr *out);
void config_print_help(void);

#endif
