/* config.c — see config.h. */
#include "config.h"
#include "rmq_version.h"

#include "cli_opts.h"
#include "client_defaults.h"
#include "err.h"
#include "log.h"
#include "parse_int.h"
#include "remoting_frame.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Every flag once: OPT rows are parsed by apply_option, NUM rows (the
 * whole-number flags) by apply_num_flag. */
#define SERVE_OPTIONS(OPT, NUM)                                                                              \
    OPT(OPT_LISTEN, "listen", required_argument)                                                             \
    OPT(OPT_ADVERTISE, "advertise", required_argument)                                                       \
    OPT(OPT_HTTP, "http", required_argument)                                                                 \
    OPT(OPT_HTTP_INSECURE, "http-insecure", no_argument)                                                     \
    OPT(OPT_STORE, "store", required_argument)                                                               \
    OPT(OPT_NOTIFY_EXPIRY, "notify-on-expiry", required_argument)                                            \
    OPT(OPT_BROKER_NAME, "broker-name", required_argument)                                                   \
    OPT(OPT_CLUSTER, "cluster", required_argument)                                                           \
    OPT(OPT_TOPIC, "topic", required_argument)                                                               \
    OPT(OPT_LOG_LEVEL, "log-level", required_argument)                                                       \
    OPT(OPT_RECORD, "record", required_argument)                                                             \
    OPT(OPT_ADMIN_TOKEN, "admin-token", required_argument)                                                   \
    OPT(OPT_ACL, "acl", required_argument)                                                                   \
    OPT(OPT_CLOCK, "clock", required_argument)                                                               \
    OPT(OPT_ROLE, "role", required_argument)                                                                 \
    OPT(OPT_NAMESRV, "namesrv", required_argument)                                                           \
    OPT(OPT_NS_ACCESS_KEY, "namesrv-access-key", required_argument)                                          \
    OPT(OPT_NS_SECRET_KEY, "namesrv-secret-key", required_argument)                                          \
    OPT(OPT_COMPAT, "compat", required_argument)                                                             \
    OPT(OPT_NOOP_UNREGISTER, "notify-on-noop-unregister", required_argument)                                 \
    OPT(OPT_SQL92, "sql92", required_argument)                                                               \
    OPT(OPT_QUEUE_END, "queue-end", required_argument)                                                       \
    OPT(OPT_PULL_CHECKS, "pull-checks", required_argument)                                                   \
    OPT(OPT_RELEASE_PULLS, "release-pulls-on-change", required_argument)                                     \
    OPT(OPT_SEND_BACK, "send-back", required_argument)                                                       \
    OPT(OPT_HELP, "help", no_argument)                                                                       \
    OPT(OPT_VERSION, "version", no_argument)                                                                 \
    NUM(OPT_SYNC_INTERVAL, "sync-interval-ms", 0, 3600000, sync_interval_ms)                                 \
    NUM(OPT_EXPIRY, "channel-expiry-ms", 1, INT64_C(1) << 40, channel_expiry_ms)                             \
    NUM(OPT_EXPIRY_SCAN, "expiry-scan-ms", 1, 3600000, expiry_scan_ms)                                       \
    NUM(OPT_NOTIFY_COALESCE, "notify-coalesce-ms", 0, 3600000, notify_coalesce_ms)                           \
    NUM(OPT_AUTO_CREATE, "auto-create-queues", 0, 1024, auto_create_queues)                                  \
    NUM(OPT_MAX_FRAME, "max-frame-bytes", 1024, INT64_C(1) << 30, max_frame_bytes)                           \
    NUM(OPT_MAX_HEADER, "max-header-bytes", 1024, INT64_C(1) << 24, max_header_bytes)                        \
    NUM(OPT_MAX_OUTPUT, "max-pending-output", 65536, INT64_C(1) << 34, max_pending_output)                   \
    NUM(OPT_MAX_BUF_OUT, "max-buffered-output", 0, INT64_C(1) << 40, max_buffered_output)                    \
    NUM(OPT_MAX_BUF_IN, "max-buffered-input", 0, INT64_C(1) << 40, max_buffered_input)                       \
    NUM(OPT_PULL_HOLD, "pull-hold-max-ms", 0, 60000, pull_hold_max_ms)                                       \
    NUM(OPT_LOCK_EXPIRY, "lock-expiry-ms", 1, INT64_C(1) << 40, lock_expiry_ms)                              \
    NUM(OPT_MAX_CONNECTIONS, "max-connections", 1, 1000000, max_connections)                                 \
    NUM(OPT_MAX_GROUPS, "max-groups-per-client", 1, 100000, max_groups_per_client)                           \
    NUM(OPT_MAX_SUBS, "max-subscriptions", 1, 100000, max_subscriptions)                                     \
    NUM(OPT_MAX_HB_BYTES, "max-heartbeat-bytes", 1024, INT64_C(1) << 30, max_heartbeat_bytes)                \
    NUM(OPT_MAX_HB_SUBS, "max-heartbeat-subscriptions", 1, 10000000, max_heartbeat_subscriptions)            \
    NUM(OPT_MAX_TOPICS, "max-topics", 1, 100000000, max_topics)                                              \
    NUM(OPT_MAX_CLIENT_ID, "max-client-id-bytes", 1, 255, max_client_id_bytes)                               \
    NUM(OPT_RATE, "max-requests-per-sec", 0, 100000000, max_requests_per_sec)                                \
    NUM(OPT_IDLE, "idle-timeout-ms", 0, INT64_C(1) << 40, idle_timeout_ms)                                   \
    NUM(OPT_RECORD_HOLDINGS, "record-holdings-ms", 10, 3600000, record_holdings_ms)                          \
    NUM(OPT_RECORD_MAX, "record-max-bytes", 4096, INT64_C(1) << 50, record_max_bytes)                        \
    NUM(OPT_MAX_QUEUE_MESSAGES, "max-queue-messages", 1, INT64_C(1) << 40, max_queue_messages)               \
    NUM(OPT_MAX_MESSAGE_BYTES, "max-message-bytes", 1, INT64_C(1) << 50, max_message_bytes)                  \
    NUM(OPT_REGISTER_INTERVAL, "register-interval-ms", 10, 3600000, register_interval_ms)                    \
    NUM(OPT_BROKER_EXPIRY, "broker-expiry-ms", 10, INT64_C(1) << 40, broker_expiry_ms)                       \
    NUM(OPT_NS_MAX_TOPICS_PER_BROKER, "ns-max-topics-per-broker", 1, 1000000, ns_max_topics_per_broker)      \
    NUM(OPT_NS_MAX_TOPICS, "ns-max-topics", 1, 100000000, ns_max_topics)

CLI_OPTS_NUM(SERVE_OPTIONS, long_options);

void config_print_help(void)
{
    fputs(
        "usage: rmqcoord serve [options]\n"
        "\n"
        "Runs the RocketMQ name server + broker consumer-group coordinator.\n"
        "\n"
        "  --listen HOST:PORT         remoting listener (repeatable; default 127.0.0.1:9876; port 0 picks "
        "one)\n"
        "  --advertise HOST:PORT      broker address put in routes (default: the first listener)\n"
        "  --http HOST:PORT|off       HTTP admin API (default 127.0.0.1:8080); a non-loopback HOST\n"
        "                             needs --admin-token, or --http-insecure to serve it open\n"
        "  --http-insecure            allow a non-loopback --http without --admin-token (anyone who\n"
        "                             reaches it can change or wipe the state)\n"
        "  --store PATH               SQLite file (default ./rmqcoord.db)\n"
        "  --sync-interval-ms N       history and heartbeat times are fsynced in the background at least\n"
        "                             every N ms; acknowledged facts always before the reply (default\n"
        "                             1000; 0 = fsync every commit on the loop)\n"
        "  --channel-expiry-ms N      drop a member with no heartbeat for its group for N ms "
        "(default " RMQ_DEFAULT_STR(
            RMQ_DEFAULT_CHANNEL_EXPIRY_MS) ")\n"
                                           "  --expiry-scan-ms N         how often expiry is checked "
                                           "(default 1000)\n"
                                           "  --notify-on-expiry on|off  NOTIFY the group when a member "
                                           "expires (default on; the broker: off)\n"
                                           "  --notify-coalesce-ms N     at most one NOTIFY per group per N "
                                           "ms; changes inside the\n"
                                           "                             window get one more at its end "
                                           "(default 0 = off)\n"
                                           "  --auto-create-queues N     queues of a topic created on "
                                           "first route query (default 8; 0 = off)\n",
        stdout);
    /* Two calls: one string literal of the whole text is over C's 4095-byte minimum. */
    fputs("  --max-frame-bytes N        largest accepted frame (default "
          "16777216)\n"
          "  --max-header-bytes N       largest accepted frame header; a "
          "larger one closes the "
          "connection (default 65536)\n"
          "  --max-pending-output N     bytes queued to one connection "
          "before it is dropped "
          "(default 4194304)\n"
          "  --max-buffered-output N    bytes queued to all connections; "
          "past it a connection "
          "holding over 64 KiB is dropped (default 134217728; 0 = no "
          "limit)\n"
          "  --max-buffered-input N     bytes of partial frames held for "
          "all connections; past it a "
          "connection holding over 64 KiB is dropped (default 268435456; "
          "0 = no limit)\n"
          "  --pull-hold-max-ms N       longest a PULL_MESSAGE is held "
          "(default 15000)\n"
          "  --lock-expiry-ms N         queue lock lease (default 60000)\n"
          "  --max-connections N        connections beyond N are closed "
          "at accept (default 10000)\n"
          "  --max-groups-per-client N  consumer groups one connection "
          "may be in "
          "(default 256)\n"
          "  --max-subscriptions N      topics one consumer group may "
          "subscribe (default 256)\n"
          "  --max-heartbeat-bytes N    largest heartbeat body parsed "
          "(default 1048576)\n"
          "  --max-heartbeat-subscriptions N  subscriptions over all "
          "groups of one heartbeat "
          "(default 4096)\n"
          "  --max-topics N             topics the daemon holds; past it "
          "none is created (default "
          "50000)\n"
          "  --max-client-id-bytes N    longest client id accepted "
          "(default 255)\n"
          "  --max-requests-per-sec N   per connection; above it requests "
          "get SYSTEM_BUSY (default 20000, 0 = "
          "off)\n"
          "  --idle-timeout-ms N        close a connection that sent "
          "nothing for N ms (default 120000, 0 = "
          "off)\n"
          "  --broker-name NAME         broker name of auto-created and "
          "retry topics (default broker-a)\n"
          "  --cluster NAME             cluster name in routes (default "
          "DefaultCluster)\n"
          "  --topic NAME[:QUEUES]      create a topic at start if "
          "missing (repeatable; default 8 queues)\n"
          "  --log-level LEVEL          error, warn, info (default) or "
          "debug\n"
          "  --record FILE              append a heartbeat trace (JSON "
          "Lines) for `rmqcoord replay`\n"
          "  --record-holdings-ms N     with --record: every N ms ask each "
          "consumer for its queues\n"
          "                             (GET_CONSUMER_RUNNING_INFO) and "
          "record the answers (default off)\n"
          "  --record-max-bytes N       with --record: stop recording (logged) before the file "
          "passes N\n"
          "                             bytes (default 1073741824)\n"
          "  --max-queue-messages N     keep at most N messages per queue, the oldest go first "
          "(1000000)\n"
          "  --max-message-bytes N      keep at most N bytes of messages in all, the oldest go "
          "first\n"
          "                             (1073741824); a queue's newest message always stays\n"
          "  --admin-token TOKEN        mutating HTTP routes need "
          "'Authorization: Bearer TOKEN'\n"
          "                             (default: $RMQCOORD_ADMIN_TOKEN; "
          "unset = open)\n"
          "  --acl FILE                 require RocketMQ ACL signatures "
          "(accounts as in plain_acl.yml)\n"
          "  --clock real|virtual       virtual: time moves only by POST "
          "/api/clock/advance (tests)\n"
          "  --role both|namesrv|broker cluster mode (default both: one "
          "process is name server and broker)\n"
          "  --namesrv HOST:PORT        broker: name server to register "
          "with (repeatable)\n"
          "  --register-interval-ms N   broker: REGISTER_BROKER period "
          "(default 30000)\n"
          "  --broker-expiry-ms N       namesrv: drop a broker not "
          "registered for N ms (default 120000)\n"
          "  --namesrv-access-key K     broker: sign registrations with "
          "this account (with --namesrv-secret-key S)\n"
          "  --ns-max-topics-per-broker N namesrv: topics one broker may "
          "register (default 20000)\n"
          "  --ns-max-topics N          namesrv: topics of all brokers "
          "together (default 200000)\n",
          stdout);
    fputs("\nBroker-exact answers (README \"Where rmqcoord differs\"; --compat sets every one, a flag given\n"
          "with it overrides):\n"
          "  --compat MODE              rmqcoord (default), broker (= broker-5), broker-5 or broker-4.9:\n"
          "                             answer as that RocketMQ broker where rmqcoord differs\n"
          "  --notify-on-noop-unregister on|off  NOTIFY the group on an UNREGISTER_CLIENT that removed\n"
          "                             nothing (default off; the broker: on)\n"
          "  --sql92 accept|refuse      CHECK_CLIENT_CONFIG of a SQL92 subscription (default accept;\n"
          "                             the broker without property filtering: refuse)\n"
          "  --queue-end committed|zero max offset of a queue: the highest committed offset (default)\n"
          "                             or 0, as a broker with no messages answers\n"
          "  --pull-checks on|off       PULL_MESSAGE answers PULL_OFFSET_MOVED, bad queueId,\n"
          "                             SUBSCRIPTION_NOT_EXIST / _NOT_LATEST as the broker (default off)\n"
          "  --release-pulls-on-change on|off  answer held pulls when the group changes (default on;\n"
          "                             the broker: off)\n"
          "  --send-back accept|refuse  CONSUMER_SEND_MSG_BACK (default accept; the broker, which cannot\n"
          "                             find a message rmqcoord never stored: refuse)\n"
          "  --help, --version\n"
          "\n"
          "On start it prints one line to stdout once every listener is "
          "bound:\n"
          "  READY remoting=HOST:PORT[,HOST:PORT...] http=HOST:PORT|off\n",
          stdout);
}

int config_parse_addr(const char *s, struct config_addr *out)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return RMQ_EINVAL;
    const char *host = s;
    size_t hlen = (size_t)(colon - s);
    if (host[0] == '[') {
        if (hlen < 3 || host[hlen - 1] != ']')
            return RMQ_EINVAL;
        host++;
        hlen -= 2;
    }
    if (hlen >= sizeof out->host)
        return RMQ_EINVAL;
    int64_t port;
    if (rmq_parse_i64_range(colon + 1, 0, 65535, &port) != 0)
        return RMQ_EINVAL;
    memcpy(out->host, host, hlen);
    out->host[hlen] = 0;
    out->port = (uint16_t)port;
    return RMQ_OK;
}

/* Parses a non-negative integer within [min, max]; prints the error. */
static int parse_num(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (rmq_parse_i64_range(s, min, max, out) != 0) {
        fprintf(stderr, "rmqcoord serve: --%s needs a whole number from %lld to %lld, got '%s'\n", flag,
                (long long)min, (long long)max, s);
        return RMQ_EINVAL;
    }
    return RMQ_OK;
}

static int parse_topic(struct config *cfg, const char *s)
{
    if (cfg->ntopics == CONFIG_MAX_TOPICS) {
        fprintf(stderr, "rmqcoord serve: at most %d --topic flags\n", CONFIG_MAX_TOPICS);
        return RMQ_EINVAL;
    }
    struct config_topic *t = &cfg->topics[cfg->ntopics];
    const char *colon = strrchr(s, ':');
    size_t nlen = colon ? (size_t)(colon - s) : strlen(s);
    if (nlen == 0 || nlen >= sizeof t->name) {
        fprintf(stderr, "rmqcoord serve: --topic needs NAME[:QUEUES] with a name of 1 to 255 bytes\n");
        return RMQ_EINVAL;
    }
    int64_t q = 8;
    if (colon && parse_num("topic", colon + 1, 1, 1024, &q) != 0)
        return RMQ_EINVAL;
    memcpy(t->name, s, nlen);
    t->name[nlen] = 0;
    t->queues = (int)q;
    cfg->ntopics++;
    return RMQ_OK;
}

void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->http_enabled = true;
    strcpy(cfg->http.host, "127.0.0.1");
    cfg->http.port = 8080;
    strcpy(cfg->store_path, "rmqcoord.db");
    cfg->channel_expiry_ms = RMQ_DEFAULT_CHANNEL_EXPIRY_MS;
    cfg->expiry_scan_ms = 1000;
    cfg->sync_interval_ms = 1000;
    dialect_init(&cfg->dialect, DIALECT_RMQCOORD);
    cfg->auto_create_queues = 8;
    cfg->max_frame_bytes = RMQ_FRAME_MAX_DEFAULT;
    cfg->max_header_bytes = RMQ_HEADER_MAX_DEFAULT;
    cfg->max_pending_output = 4u * 1024u * 1024u;
    cfg->max_buffered_output = 128u * 1024u * 1024u;
    cfg->max_buffered_input = 256u * 1024u * 1024u;
    cfg->pull_hold_max_ms = 15000;
    cfg->lock_expiry_ms = 60000;
    cfg->max_connections = 10000;
    /* The same values as REGISTRY_LIMITS_DEFAULT, which replay applies. */
    cfg->max_groups_per_client = 256;
    cfg->max_subscriptions = 256;
    cfg->max_heartbeat_bytes = 1024 * 1024;
    cfg->max_heartbeat_subscriptions = 4096;
    cfg->max_topics = 50000;
    cfg->max_client_id_bytes = 255;
    cfg->max_requests_per_sec = 20000;
    cfg->record_max_bytes = INT64_C(1) << 30;
    cfg->max_queue_messages = 1000000;
    cfg->max_message_bytes = INT64_C(1) << 30;
    cfg->idle_timeout_ms = 120000;
    strcpy(cfg->broker_name, "broker-a");
    strcpy(cfg->cluster_name, "DefaultCluster");
    cfg->log_level = LOG_INFO;
    cfg->register_interval_ms = 30000;
    cfg->broker_expiry_ms = 120000;
    cfg->ns_max_topics_per_broker = 20000;
    cfg->ns_max_topics = 200000;
    cfg->release_pulls_on_change = true;
    const char *token = getenv("RMQCOORD_ADMIN_TOKEN");
    if (token && strlen(token) < sizeof cfg->admin_token)
        strcpy(cfg->admin_token, token);
}

static int copy_name(const char *flag, const char *s, char *dst, size_t cap)
{
    size_t n = strlen(s);
    if (n == 0 || n >= cap) {
        fprintf(stderr, "rmqcoord serve: --%s needs a value of 1 to %zu bytes\n", flag, cap - 1);
        return RMQ_EINVAL;
    }
    memcpy(dst, s, n + 1);
    return RMQ_OK;
}

/* Numeric flags: name, bounds and where the value goes. */
struct num_flag {
    int opt;
    const char *name;
    int64_t min, max;
    size_t offset;
    size_t size; /* sizeof the field: int, int64_t or size_t */
};

#define NUM_FLAG(o, n, lo, hi, field)                                                                        \
    {o, n, lo, hi, offsetof(struct config, field), sizeof(((struct config *)0)->field)},

static const struct num_flag num_flags[] = {SERVE_OPTIONS(CLI_NOT_NUM_, NUM_FLAG)};

_Static_assert(sizeof(size_t) == sizeof(int64_t), "numeric flags store size_t fields as 8 bytes");

/* Parses and stores a numeric flag; RMQ_ENOTFOUND when opt is not one. */
static int apply_num_flag(struct config *cfg, int opt, const char *arg)
{
    for (size_t i = 0; i < sizeof num_flags / sizeof num_flags[0]; i++) {
        const struct num_flag *f = &num_flags[i];
        if (f->opt != opt)
            continue;
        int64_t v;
        if (parse_num(f->name, arg, f->min, f->max, &v) != 0)
            return RMQ_EINVAL;
        char *field = (char *)cfg + f->offset;
        if (f->size == sizeof(int)) {
            int x = (int)v;
            memcpy(field, &x, sizeof x);
        } else {
            memcpy(field, &v, sizeof v); /* int64_t and size_t are both 8 bytes here */
        }
        return RMQ_OK;
    }
    return RMQ_ENOTFOUND;
}

/* A two-word flag: *out = (arg is yes), false for no; anything else is an error. */
static int parse_choice(const char *flag, const char *arg, const char *yes, const char *no, bool *out)
{
    if (strcmp(arg, yes) && strcmp(arg, no)) {
        fprintf(stderr, "rmqcoord serve: --%s takes %s or %s, got '%s'\n", flag, yes, no, arg);
        return RMQ_EINVAL;
    }
    *out = !strcmp(arg, yes);
    return RMQ_OK;
}

/* --compat MODE: the mode's dialect (dialect.c), and the broker's side of every
 * other difference that has a switch (docs/protocol.md §12), before the other
 * flags so they override it. */
static int apply_compat(struct config *cfg, const char *arg)
{
    enum dialect_mode mode;
    if (dialect_mode_parse(arg, &mode) != 0) {
        fprintf(stderr, "rmqcoord serve: --compat takes " DIALECT_MODE_VALUES ", got '%s'\n", arg);
        return RMQ_EINVAL;
    }
    dialect_init(&cfg->dialect, mode);
    if (mode == DIALECT_RMQCOORD)
        return RMQ_OK;
    cfg->expiry_scan_ms = 10000;
    cfg->auto_create_queues = 0;
    cfg->refuse_sql92 = true;
    cfg->queue_end_zero = true;
    cfg->pull_checks = true;
    cfg->release_pulls_on_change = false;
    cfg->refuse_send_back = true;
    return RMQ_OK;
}

/* Finds --compat MODE / --compat=MODE in argv (the last one wins) and applies it. */
static int prescan_compat(struct config *cfg, int argc, char **argv)
{
    const char *mode = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--compat") && i + 1 < argc)
            mode = argv[++i];
        else if (!strncmp(argv[i], "--compat=", 9))
            mode = argv[i] + 9;
    }
    return mode ? apply_compat(cfg, mode) : RMQ_OK;
}

/* Applies one option; 0, 1 (help/version printed) or RMQ_EINVAL. */
static int apply_option(struct config *cfg, int opt, const char *arg)
{
    int rc = apply_num_flag(cfg, opt, arg);
    if (rc != RMQ_ENOTFOUND)
        return rc;
    switch (opt) {
    case OPT_LISTEN:
        if (cfg->nlisten == CONFIG_MAX_LISTEN) {
            fprintf(stderr, "rmqcoord serve: at most %d --listen flags\n", CONFIG_MAX_LISTEN);
            return RMQ_EINVAL;
        }
        if (config_parse_addr(arg, &cfg->listen[cfg->nlisten]) != 0) {
            fprintf(stderr, "rmqcoord serve: --listen needs HOST:PORT, got '%s'\n", arg);
            return RMQ_EINVAL;
        }
        cfg->nlisten++;
        return RMQ_OK;
    case OPT_ADVERTISE:
        if (config_parse_addr(arg, &cfg->advertise) != 0 || cfg->advertise.port == 0) {
            fprintf(stderr, "rmqcoord serve: --advertise needs HOST:PORT with a non-zero port, got '%s'\n",
                    arg);
            return RMQ_EINVAL;
        }
        cfg->advertise_set = true;
        return RMQ_OK;
    case OPT_HTTP:
        if (!strcmp(arg, "off")) {
            cfg->http_enabled = false;
            return RMQ_OK;
        }
        if (config_parse_addr(arg, &cfg->http) != 0) {
            fprintf(stderr, "rmqcoord serve: --http needs HOST:PORT or off, got '%s'\n", arg);
            return RMQ_EINVAL;
        }
        cfg->http_enabled = true;
        return RMQ_OK;
    case OPT_HTTP_INSECURE: cfg->http_insecure = true; return RMQ_OK;
    case OPT_STORE: return copy_name("store", arg, cfg->store_path, sizeof cfg->store_path);
    case OPT_NOTIFY_EXPIRY:
        return parse_choice("notify-on-expiry", arg, "on", "off", &cfg->dialect.notify_on_expiry);
    case OPT_BROKER_NAME: return copy_name("broker-name", arg, cfg->broker_name, sizeof cfg->broker_name);
    case OPT_CLUSTER: return copy_name("cluster", arg, cfg->cluster_name, sizeof cfg->cluster_name);
    case OPT_TOPIC: return parse_topic(cfg, arg);
    case OPT_RECORD: return copy_name("record", arg, cfg->record_path, sizeof cfg->record_path);
    case OPT_ACL: return copy_name("acl", arg, cfg->acl_path, sizeof cfg->acl_path);
    case OPT_NS_ACCESS_KEY:
        return copy_name("namesrv-access-key", arg, cfg->namesrv_access_key, sizeof cfg->namesrv_access_key);
    case OPT_NS_SECRET_KEY:
        return copy_name("namesrv-secret-key", arg, cfg->namesrv_secret_key, sizeof cfg->namesrv_secret_key);
    case OPT_ADMIN_TOKEN: return copy_name("admin-token", arg, cfg->admin_token, sizeof cfg->admin_token);
    case OPT_ROLE:
        if (!strcmp(arg, "both"))
            cfg->role = CONFIG_ROLE_BOTH;
        else if (!strcmp(arg, "namesrv"))
            cfg->role = CONFIG_ROLE_NAMESRV;
        else if (!strcmp(arg, "broker"))
            cfg->role = CONFIG_ROLE_BROKER;
        else {
            fprintf(stderr, "rmqcoord serve: --role takes both, namesrv or broker, got '%s'\n", arg);
            return RMQ_EINVAL;
        }
        return RMQ_OK;
    case OPT_NAMESRV:
        if (cfg->nnamesrv == CONFIG_MAX_NAMESRV) {
            fprintf(stderr, "rmqcoord serve: at most %d --namesrv flags\n", CONFIG_MAX_NAMESRV);
            return RMQ_EINVAL;
        }
        if (config_parse_addr(arg, &cfg->namesrv[cfg->nnamesrv]) != 0 ||
            cfg->namesrv[cfg->nnamesrv].port == 0) {
            fprintf(stderr, "rmqcoord serve: --namesrv needs HOST:PORT with a non-zero port, got '%s'\n",
                    arg);
            return RMQ_EINVAL;
        }
        cfg->nnamesrv++;
        return RMQ_OK;
    case OPT_CLOCK: {
        bool real = !cfg->virtual_clock;
        rc = parse_choice("clock", arg, "real", "virtual", &real);
        cfg->virtual_clock = !real;
        return rc;
    }
    case OPT_LOG_LEVEL: {
        enum log_level lv;
        if (log_level_parse(arg, &lv) != 0) {
            fprintf(stderr, "rmqcoord serve: --log-level takes error, warn, info or debug, got '%s'\n", arg);
            return RMQ_EINVAL;
        }
        cfg->log_level = (int)lv;
        return RMQ_OK;
    }
    case OPT_COMPAT: return RMQ_OK; /* applied before the other flags (config_parse) */
    case OPT_NOOP_UNREGISTER:
        return parse_choice("notify-on-noop-unregister", arg, "on", "off",
                            &cfg->dialect.notify_noop_unregister);
    case OPT_SQL92: return parse_choice("sql92", arg, "refuse", "accept", &cfg->refuse_sql92);
    case OPT_QUEUE_END: return parse_choice("queue-end", arg, "zero", "committed", &cfg->queue_end_zero);
    case OPT_PULL_CHECKS: return parse_choice("pull-checks", arg, "on", "off", &cfg->pull_checks);
    case OPT_RELEASE_PULLS:
        return parse_choice("release-pulls-on-change", arg, "on", "off", &cfg->release_pulls_on_change);
    case OPT_SEND_BACK: return parse_choice("send-back", arg, "refuse", "accept", &cfg->refuse_send_back);
    case OPT_HELP: config_print_help(); return 1;
    case OPT_VERSION: printf("rmqcoord %s\n", RMQ_VERSION); return 1;
    default: fputs("rmqcoord serve: unknown option (see rmqcoord serve --help)\n", stderr); return RMQ_EINVAL;
    }
}

/* Whether an --http host is loopback (by its spelling: 127.0.0.0/8, ::1,
 * localhost). Anything else, a wildcard or a name included, is not. */
static bool http_host_loopback(const char *h)
{
    if (!strcasecmp(h, "localhost") || !strcmp(h, "::1"))
        return true;
    unsigned a, b, c, d;
    char extra;
    return sscanf(h, "%u.%u.%u.%u%c", &a, &b, &c, &d, &extra) == 4 && a == 127 && b < 256 && c < 256 &&
           d < 256;
}

/* A non-loopback admin API without a token lets anyone who reaches it wipe
 * the state: refused unless --http-insecure says so, and then loudly. */
static int check_http_exposure(const struct config *cfg)
{
    if (!cfg->http_enabled || cfg->admin_token[0] || http_host_loopback(cfg->http.host))
        return RMQ_OK;
    if (!cfg->http_insecure) {
        fprintf(stderr,
                "rmqcoord serve: refusing to serve the admin API on %s:%u without --admin-token: anyone "
                "who can reach it could change or wipe every group, topic and offset. Set --admin-token "
                "(or RMQCOORD_ADMIN_TOKEN), listen on a loopback address, or pass --http-insecure to "
                "accept that.\n",
                cfg->http.host, (unsigned)cfg->http.port);
        return RMQ_EINVAL;
    }
    log_warn("INSECURE: the admin API on %s:%u has no --admin-token (--http-insecure): anyone who can "
             "reach it can change or wipe every group, topic and offset",
             cfg->http.host, (unsigned)cfg->http.port);
    return RMQ_OK;
}

int config_parse(struct config *cfg, int argc, char **argv)
{
    config_defaults(cfg);
    if (prescan_compat(cfg, argc, argv) != 0)
        return RMQ_EINVAL;
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
        if (opt == '?' || opt == ':') {
            const char *bad = argv[optind - 1];
            fprintf(stderr, "rmqcoord serve: %s '%s' (see rmqcoord serve --help)\n",
                    opt == ':' ? "missing value for" : "unknown option", bad);
            return RMQ_EINVAL;
        }
        int rc = apply_option(cfg, opt, optarg);
        if (rc != 0)
            return rc;
    }
    if (optind < argc) {
        fprintf(stderr, "rmqcoord serve: unexpected argument '%s' (see rmqcoord serve --help)\n",
                argv[optind]);
        return RMQ_EINVAL;
    }
    if (cfg->role == CONFIG_ROLE_BROKER && cfg->nnamesrv == 0) {
        fputs("rmqcoord serve: --role broker needs at least one --namesrv HOST:PORT\n", stderr);
        return RMQ_EINVAL;
    }
    if (cfg->nnamesrv > 0 && cfg->role != CONFIG_ROLE_BROKER) {
        fputs("rmqcoord serve: --namesrv is only meaningful with --role broker\n", stderr);
        return RMQ_EINVAL;
    }
    if (!cfg->namesrv_access_key[0] != !cfg->namesrv_secret_key[0] ||
        (cfg->namesrv_access_key[0] && cfg->role != CONFIG_ROLE_BROKER)) {
        fputs(
            "rmqcoord serve: --namesrv-access-key and --namesrv-secret-key go together, with --role broker\n",
            stderr);
        return RMQ_EINVAL;
    }
    if (cfg->record_holdings_ms && !cfg->record_path[0]) {
        fputs("rmqcoord serve: --record-holdings-ms needs --record FILE\n", stderr);
        return RMQ_EINVAL;
    }
    if (cfg->nlisten == 0) {
        strcpy(cfg->listen[0].host, "127.0.0.1");
        cfg->listen[0].port = 9876;
        cfg->nlisten = 1;
    }
    return check_http_exposure(cfg);
}
