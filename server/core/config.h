/* config.h — the daemon's settings: flags, defaults, validation, --help.
 *
 * Filled once by config_parse on the main thread before anything starts and
 * read-only afterwards (threads may read it freely).
 */
#ifndef RMQ_CONFIG_H
#define RMQ_CONFIG_H

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
    char store_path[4096];
    int64_t channel_expiry_ms;
    int64_t expiry_scan_ms;
    int64_t sync_interval_ms; /* 0 = every commit fsynced on the loop */
    bool notify_on_expiry;
    int auto_create_queues; /* 0 = auto-create off */
    size_t max_frame_bytes;
    size_t max_header_bytes;
    size_t max_pending_output; /* per connection; a slower reader is dropped */
    int64_t pull_hold_max_ms;
    int64_t lock_expiry_ms;
    int64_t max_connections;
    int64_t max_groups_per_client;
    int64_t max_subscriptions;
    int64_t max_client_id_bytes;
    int64_t max_requests_per_sec; /* per connection, 0 = unlimited */
    int64_t idle_timeout_ms;      /* 0 = never */
    char broker_name[128];
    char cluster_name[128];
    struct config_topic topics[CONFIG_MAX_TOPICS];
    size_t ntopics;
    int log_level;          /* enum log_level */
    char record_path[4096]; /* --record: heartbeat trace file, empty = off */
    char admin_token[256];  /* --admin-token / RMQCOORD_ADMIN_TOKEN; empty = mutating routes open */
    bool virtual_clock;
    /* Cluster mode (docs/cluster.md). */
    int role; /* enum config_role */
    struct config_addr namesrv[CONFIG_MAX_NAMESRV];
    size_t nnamesrv;
    int64_t register_interval_ms; /* broker: REGISTER_BROKER period */
    int64_t broker_expiry_ms;     /* namesrv: a broker silent this long leaves the routes */
    char acl_path[4096];
    /* --acl: accounts file; empty = no authentication */ /* --clock virtual: time moves only by POST
                                                             /api/clock/advance */
};

/* Fills *cfg from argv (argv[0] = "serve"). Returns 0 to run, 1 when
 * --help/--version was printed (exit 0), or RMQ_EINVAL after printing a
 * clear error to stderr (exit 2). */
int config_parse(struct config *cfg, int argc, char **argv);
/* Parses "HOST:PORT" (also "[v6]:PORT"). 0 or RMQ_EINVAL. */
int config_parse_addr(const char *s, struct config_addr *out);
void config_print_help(void);

#endif
