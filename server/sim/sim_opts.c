/* sim_opts.c — the flags of `rmqcoord sim` (see sim_state.h for struct
 * sim_config). Every value is validated here so the rest can trust it.
 * Main thread, before the loop starts. */
#include "sim_opts.h"

#include "cli_opts.h"
#include "client_defaults.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "parse_int.h"
#include "remoting_cmd.h"
#include "rmq_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_OPTIONS(X)                                                                                       \
    X(OPT_NAMESRV, "namesrv", required_argument)                                                             \
    X(OPT_GROUP, "group", required_argument)                                                                 \
    X(OPT_TOPIC, "topic", required_argument)                                                                 \
    X(OPT_CLIENTS, "clients", required_argument)                                                             \
    X(OPT_PREFIX, "client-prefix", required_argument)                                                        \
    X(OPT_CLIENT_ID, "client-id", required_argument)                                                         \
    X(OPT_PER_CONN, "clients-per-conn", required_argument)                                                   \
    X(OPT_STRATEGY, "strategy", required_argument)                                                           \
    X(OPT_VNODES, "virtual-nodes", required_argument)                                                        \
    X(OPT_IDCS, "consumer-idcs", required_argument)                                                          \
    X(OPT_INNER, "inner", required_argument)                                                                 \
    X(OPT_BROKER_ROOMS, "broker-rooms", required_argument)                                                   \
    X(OPT_CONSUMER_ROOMS, "consumer-rooms", required_argument)                                               \
    X(OPT_CONFIG_QUEUES, "config-queues", required_argument)                                                 \
    X(OPT_HEARTBEAT, "heartbeat-ms", required_argument)                                                      \
    X(OPT_REBALANCE, "rebalance-ms", required_argument)                                                      \
    X(OPT_ROUTE, "route-ms", required_argument)                                                              \
    X(OPT_PERSIST, "persist-ms", required_argument)                                                          \
    X(OPT_DURATION, "duration-ms", required_argument)                                                        \
    X(OPT_VERSION, "client-version", required_argument)                                                      \
    X(OPT_PRINT_VERSION, "version", no_argument)                                                             \
    X(OPT_CONNECT_TIMEOUT, "connect-timeout-ms", required_argument)                                          \
    X(OPT_LANGUAGE, "language", required_argument)                                                           \
    X(OPT_BROADCAST, "broadcast", no_argument)                                                               \
    X(OPT_NO_NOTIFY, "no-notify", no_argument)                                                               \
    X(OPT_QUIET, "quiet", no_argument)                                                                       \
    X(OPT_LOG_LEVEL, "log-level", required_argument)                                                         \
    X(OPT_HELP, "help", no_argument)

static void usage(FILE *out)
{
    /* Defaults that are shared constants are printed with %d, not pasted
     * into the literal, so one figure cannot drift from the code. */
    fputs("usage: rmqcoord sim --namesrv HOST:PORT --group G --topic T [--topic T2 ...] [options]\n"
          "\n"
          "Simulates N Java push consumers (DefaultMQPushConsumer 4.9.x, CLUSTERING unless\n"
          "--broadcast) over the remoting protocol: route lookup, heartbeats, rebalance on\n"
          "NOTIFY and on a timer, offset queries, long-polling pulls, offset persistence,\n"
          "GET_CONSUMER_RUNNING_INFO replies, UNREGISTER_CLIENT at exit.\n"
          "\n"
          "  --namesrv HOST:PORT      the name server (default: $NAMESRV_ADDR, as RocketMQ's tools;\n"
          "                           host names are resolved)\n"
          "  --clients N              simulated clients (default 1)\n"
          "  --client-prefix P        client ids P-<i> (default 127.0.0.1@<pid>-sim<i>: unique per\n"
          "                           process, as Java's ip@pid), i from 0\n"
          "  --client-id ID           the id of the single client\n"
          "  --clients-per-conn K     clients sharing one connection per address (default 1)\n"
          "  --strategy S             AVG (default), AVG_BY_CIRCLE, CONFIG, MACHINE_ROOM,\n"
          "                           MACHINE_ROOM_NEARBY, CONSISTENT_HASH\n"
          "  --virtual-nodes N        CONSISTENT_HASH ring size per client (default 10)\n"
          "  --consumer-idcs A,B      MACHINE_ROOM rooms (brokers are named room@name)\n"
          "  --inner AVG|AVG_BY_CIRCLE  MACHINE_ROOM_NEARBY inner strategy (default AVG)\n"
          "  --broker-rooms B=R,...   MACHINE_ROOM_NEARBY maps (both or neither; neither:\n"
          "  --consumer-rooms ID=R,...  the room is the text after the last '-')\n"
          "  --config-queues T:B:Q,.. CONFIG: the queues every client takes\n",
          out);
    fprintf(out,
            "  --heartbeat-ms N         heartbeat period, ms (default %d)\n"
            "  --rebalance-ms N         rebalance timer, ms (default %d)\n"
            "  --route-ms N             route refresh, ms (default %d)\n",
            RMQ_DEFAULT_HEARTBEAT_MS, RMQ_DEFAULT_REBALANCE_MS, RMQ_DEFAULT_ROUTE_POLL_MS);
    fputs("  --persist-ms N           offset persistence, ms (default 5000)\n"
          "  --duration-ms N          run time, ms (default: until SIGINT/SIGTERM)\n"
          "  --connect-timeout-ms N   give up (exit 3) when the name server cannot be reached\n"
          "                           within N ms of the start (default 5000)\n"
          "  --client-version N       header version ordinal (default 409 = V4_9_8)\n"
          "  --language NAME          header language (default JAVA)\n"
          "  --broadcast              BROADCASTING: every client takes every queue\n"
          "  --no-notify              ignore NOTIFY_CONSUMER_IDS_CHANGED (like ali-ons)\n"
          "  --quiet                  no holdings lines (the summary line still prints)\n"
          "  --log-level LEVEL        stderr logs: error, warn (default), info, debug\n"
          "  --help                   this text; --version: rmqcoord's version\n"
          "\n"
          "Output (stdout, JSON Lines): on every change of a client's holdings\n"
          "  {\"t\":ms,\"clientId\":..,\"topic\":..,\"queues\":[{\"brokerName\":..,\"queueId\":..}],\n"
          "   \"reason\":\"start\"|\"notify\"|\"timer\"}\n"
          "and {\"t\":ms,\"summary\":{...}} at exit.\n"
          "Exit status: 0 after a clean shutdown, 1 on a runtime error, 2 for bad options,\n"
          "3 when the name server could not be reached.\n",
          out);
}

static int bad(const char *flag, const char *arg, const char *why)
{
    fprintf(stderr, "rmqcoord sim: --%s %s, got '%s' (see rmqcoord sim --help)\n", flag, why, arg);
    return RMQ_EINVAL;
}

static int parse_long(const char *flag, const char *arg, long long lo, long long hi, long long *out)
{
    int64_t v;
    if (rmq_parse_i64_range(arg, lo, hi, &v) != 0) {
        char why[96];
        snprintf(why, sizeof why, "needs a whole number from %lld to %lld", lo, hi);
        return bad(flag, arg, why);
    }
    *out = v;
    return RMQ_OK;
}

static int copy_str(const char *flag, const char *arg, char *dst, size_t cap)
{
    if (!*arg || strlen(arg) >= cap)
        return bad(flag, arg, "needs a non-empty value");
    memcpy(dst, arg, strlen(arg) + 1);
    return RMQ_OK;
}

/* Splits a comma list into a new owned copy; items point into it. */
static int split_list(struct sim_config *cfg, const char *flag, const char *arg, char ***items, size_t *n)
{
    if (cfg->nowned == sizeof cfg->owned / sizeof cfg->owned[0] || !*arg)
        return bad(flag, arg, "cannot be empty or given this often");
    char *copy = rmq_strdup(arg);
    size_t cnt = 1;
    for (const char *p = arg; *p; p++)
        cnt += *p == ',';
    char **out = rmq_calloc(cnt, sizeof *out);
    if (!copy || !out) {
        rmq_free(copy);
        rmq_free(out);
        return RMQ_ENOMEM;
    }
    cfg->owned[cfg->nowned++] = copy;
    size_t k = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        out[k++] = tok;
    *items = out;
    *n = k;
    return RMQ_OK;
}

/* NAME=ROOM pairs. */
static int parse_rooms(struct sim_config *cfg, const char *flag, const char *arg,
                       struct allocate_room **rooms, size_t *n)
{
    char **items;
    size_t cnt;
    int rc = split_list(cfg, flag, arg, &items, &cnt);
    if (rc)
        return rc;
    rmq_free(*rooms);
    struct allocate_room *r = rmq_calloc(cnt ? cnt : 1, sizeof *r);
    *rooms = r;
    for (size_t i = 0; r && i < cnt; i++) {
        char *eq = strchr(items[i], '=');
        if (!eq || eq == items[i] || !eq[1]) {
            rmq_free(items);
            return bad(flag, arg, "needs NAME=ROOM items");
        }
        *eq = '\0';
        r[i] = (struct allocate_room){items[i], eq + 1};
    }
    rmq_free(items);
    *n = cnt;
    return r ? RMQ_OK : RMQ_ENOMEM;
}

/* TOPIC:BROKER:QUEUEID items (topic names cannot hold ':'). */
static int parse_config_queues(struct sim_config *cfg, const char *arg)
{
    char **items;
    size_t cnt;
    int rc = split_list(cfg, "config-queues", arg, &items, &cnt);
    if (rc)
        return rc;
    rmq_free(cfg->config_queues);
    cfg->config_queues = rmq_calloc(cnt ? cnt : 1, sizeof *cfg->config_queues);
    for (size_t i = 0; cfg->config_queues && i < cnt; i++) {
        char *first = strchr(items[i], ':'), *last = strrchr(items[i], ':');
        int64_t q;
        if (!first || first == last || first == items[i] || last == first + 1 ||
            rmq_parse_i64_range(last + 1, 0, INT32_MAX, &q) != 0) {
            rmq_free(items);
            return bad("config-queues", arg, "needs TOPIC:BROKER:QUEUEID items");
        }
        *first = *last = '\0';
        cfg->config_queues[i] = (struct allocate_queue){items[i], first + 1, (int32_t)q};
    }
    rmq_free(items);
    cfg->alloc.config = cfg->config_queues;
    cfg->alloc.n_config = cnt;
    return cfg->config_queues ? RMQ_OK : RMQ_ENOMEM;
}

static int parse_ms(const char *flag, const char *arg, long long lo, int64_t *out)
{
    long long v;
    int rc = parse_long(flag, arg, lo, 7LL * 24 * 3600 * 1000, &v);
    if (!rc)
        *out = v;
    return rc;
}

static int parse_strategy(struct sim_config *cfg, const char *arg)
{
    enum allocate_strategy s;
    if (allocate_strategy_parse(arg, &s) != 0)
        return bad("strategy", arg,
                   "takes AVG, AVG_BY_CIRCLE, CONFIG, MACHINE_ROOM, MACHINE_ROOM_NEARBY or "
                   "CONSISTENT_HASH");
    cfg->alloc.strategy = s;
    return RMQ_OK;
}

static int parse_inner(struct sim_config *cfg, const char *arg)
{
    enum allocate_strategy s;
    if (allocate_strategy_parse(arg, &s) != 0 || (s != ALLOCATE_AVG && s != ALLOCATE_AVG_BY_CIRCLE))
        return bad("inner", arg, "takes AVG or AVG_BY_CIRCLE");
    cfg->alloc.inner = s;
    return RMQ_OK;
}

CLI_OPTS(SIM_OPTIONS, long_options);

static int parse_numbers(struct sim_config *cfg, int opt, const char *arg)
{
    long long v;
    int rc;
    switch (opt) {
    case OPT_CLIENTS:
        rc = parse_long("clients", arg, 1, SIM_MAX_CLIENTS, &v);
        cfg->clients = rc ? cfg->clients : (long)v;
        return rc;
    case OPT_PER_CONN:
        rc = parse_long("clients-per-conn", arg, 1, SIM_MAX_CLIENTS, &v);
        cfg->per_conn = rc ? cfg->per_conn : (long)v;
        return rc;
    case OPT_VNODES:
        rc = parse_long("virtual-nodes", arg, 0, 100000, &v);
        cfg->alloc.virtual_nodes = rc ? cfg->alloc.virtual_nodes : (long)v;
        return rc;
    case OPT_VERSION:
        rc = parse_long("client-version", arg, 0, 32767, &v);
        cfg->version = rc ? cfg->version : (int)v;
        return rc;
    case OPT_HEARTBEAT: return parse_ms("heartbeat-ms", arg, 1, &cfg->heartbeat_ms);
    case OPT_REBALANCE: return parse_ms("rebalance-ms", arg, 1, &cfg->rebalance_ms);
    case OPT_ROUTE: return parse_ms("route-ms", arg, 1, &cfg->route_ms);
    case OPT_PERSIST: return parse_ms("persist-ms", arg, 1, &cfg->persist_ms);
    case OPT_DURATION: return parse_ms("duration-ms", arg, 1, &cfg->duration_ms);
    case OPT_CONNECT_TIMEOUT: return parse_ms("connect-timeout-ms", arg, 1, &cfg->connect_timeout_ms);
    default: return RMQ_EINVAL;
    }
}

static int parse_lists(struct sim_config *cfg, int opt, const char *arg)
{
    switch (opt) {
    case OPT_IDCS: {
        char **items;
        size_t n;
        int rc = split_list(cfg, "consumer-idcs", arg, &items, &n);
        if (!rc) {
            rmq_free(cfg->idcs);
            cfg->idcs = (const char **)items;
            cfg->alloc.idcs = cfg->idcs;
            cfg->alloc.n_idcs = n;
        }
        return rc;
    }
    case OPT_BROKER_ROOMS:
        return parse_rooms(cfg, "broker-rooms", arg, &cfg->broker_rooms, &cfg->alloc.n_broker_rooms);
    case OPT_CONSUMER_ROOMS:
        return parse_rooms(cfg, "consumer-rooms", arg, &cfg->consumer_rooms, &cfg->alloc.n_consumer_rooms);
    case OPT_CONFIG_QUEUES: return parse_config_queues(cfg, arg);
    default: return RMQ_EINVAL;
    }
}

static int parse_one(struct sim_config *cfg, int opt, const char *arg)
{
    switch (opt) {
    case OPT_NAMESRV: return copy_str("namesrv", arg, cfg->namesrv, sizeof cfg->namesrv);
    case OPT_GROUP: return copy_str("group", arg, cfg->group, sizeof cfg->group);
    case OPT_TOPIC:
        if (!*arg || strlen(arg) > 255 || cfg->ntopics == SIM_MAX_TOPICS / 2)
            return bad("topic", arg, "needs a name of 1 to 255 bytes (at most 32 topics)");
        cfg->topics[cfg->ntopics++] = arg;
        return RMQ_OK;
    case OPT_PREFIX: cfg->client_prefix = arg; return *arg ? RMQ_OK : bad("client-prefix", arg, "is empty");
    case OPT_CLIENT_ID: cfg->client_id = arg; return *arg ? RMQ_OK : bad("client-id", arg, "is empty");
    case OPT_STRATEGY: return parse_strategy(cfg, arg);
    case OPT_INNER: return parse_inner(cfg, arg);
    case OPT_LANGUAGE: cfg->language = rmq_language_from_name(arg); return RMQ_OK;
    case OPT_BROADCAST: cfg->broadcast = true; return RMQ_OK;
    case OPT_NO_NOTIFY: cfg->no_notify = true; return RMQ_OK;
    case OPT_QUIET: cfg->quiet = true; return RMQ_OK;
    case OPT_LOG_LEVEL: {
        enum log_level lv;
        if (log_level_parse(arg, &lv) != 0)
            return bad("log-level", arg, "takes error, warn, info or debug");
        cfg->log_level = (int)lv;
        return RMQ_OK;
    }
    case OPT_IDCS:
    case OPT_BROKER_ROOMS:
    case OPT_CONSUMER_ROOMS:
    case OPT_CONFIG_QUEUES: return parse_lists(cfg, opt, arg);
    default: return parse_numbers(cfg, opt, arg);
    }
}

/* Cross-flag rules, checked once every flag is in. */
static int validate(struct sim_config *cfg)
{
    const char *why = NULL;
    /* As RocketMQ's own tools: the name server may come from the
     * environment; of a ';'-separated list the first is used. */
    const char *env = getenv("NAMESRV_ADDR");
    if (!cfg->namesrv[0] && env && *env) {
        size_t n = strcspn(env, ";");
        if (n < sizeof cfg->namesrv) {
            memcpy(cfg->namesrv, env, n);
            cfg->namesrv[n] = 0;
        }
    }
    if (!cfg->namesrv[0] || !cfg->group[0] || !cfg->ntopics)
        why = "--namesrv (or NAMESRV_ADDR), --group and at least one --topic are required";
    else if (cfg->client_id && cfg->clients != 1)
        why = "--client-id names one client; it cannot be used with --clients N > 1";
    else if (cfg->client_id && cfg->client_prefix)
        why = "--client-id and --client-prefix exclude each other";
    else if (cfg->alloc.strategy == ALLOCATE_CONFIG && !cfg->alloc.n_config)
        why = "--strategy CONFIG needs --config-queues";
    else if (cfg->alloc.strategy == ALLOCATE_MACHINE_ROOM && !cfg->alloc.n_idcs)
        why = "--strategy MACHINE_ROOM needs --consumer-idcs";
    else if ((cfg->alloc.n_broker_rooms > 0) != (cfg->alloc.n_consumer_rooms > 0))
        why = "--broker-rooms and --consumer-rooms go together";
    if (why) {
        fprintf(stderr, "rmqcoord sim: %s (see rmqcoord sim --help)\n", why);
        return RMQ_EINVAL;
    }
    cfg->alloc.rooms_by_rule = cfg->alloc.n_broker_rooms == 0;
    cfg->alloc.broker_rooms = cfg->broker_rooms;
    cfg->alloc.consumer_rooms = cfg->consumer_rooms;
    if (cfg->per_conn > cfg->clients)
        cfg->per_conn = cfg->clients;
    return RMQ_OK;
}

static void set_defaults(struct sim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    allocate_options_init(&cfg->alloc, ALLOCATE_AVG);
    cfg->clients = 1;
    cfg->per_conn = 1;
    cfg->connect_timeout_ms = 5000;
    cfg->heartbeat_ms = RMQ_DEFAULT_HEARTBEAT_MS; /* PROTOCOL: docs/protocol.md §10.1 Java 4.9.x timers */
    cfg->rebalance_ms = RMQ_DEFAULT_REBALANCE_MS;
    cfg->route_ms = RMQ_DEFAULT_ROUTE_POLL_MS;
    cfg->persist_ms = 5000;
    cfg->version = 409;
    cfg->language = RMQ_LANG_JAVA;
    cfg->log_level = LOG_WARN;
}

int sim_config_parse(struct sim_config *cfg, int argc, char **argv)
{
    set_defaults(cfg);
    optind = 1;
    opterr = 1;
    for (;;) {
        int opt = getopt_long(argc, argv, "h", long_options, NULL);
        if (opt == -1)
            break;
        if (opt == 'h' || opt == OPT_HELP) {
            usage(stdout);
            sim_config_clear(cfg);
            return 1;
        }
        if (opt == OPT_PRINT_VERSION) {
            printf("rmqcoord %s\n", RMQ_VERSION);
            sim_config_clear(cfg);
            return 1;
        }
        if (opt == '?' || parse_one(cfg, opt, optarg) != 0) {
            if (opt == '?')
                fputs("rmqcoord sim: unknown option (see rmqcoord sim --help)\n", stderr);
            sim_config_clear(cfg);
            return RMQ_EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rmqcoord sim: unexpected argument '%s'\n", argv[optind]);
        sim_config_clear(cfg);
        return RMQ_EINVAL;
    }
    int rc = validate(cfg);
    if (rc)
        sim_config_clear(cfg);
    return rc;
}

void sim_config_clear(struct sim_config *cfg)
{
    rmq_free(cfg->config_queues);
    rmq_free(cfg->idcs);
    rmq_free(cfg->broker_rooms);
    rmq_free(cfg->consumer_rooms);
    for (size_t i = 0; i < cfg->nowned; i++)
        rmq_free(cfg->owned[i]);
    cfg->config_queues = NULL;
    cfg->idcs = NULL;
    cfg->broker_rooms = cfg->consumer_rooms = NULL;
    cfg->nowned = 0;
}
