/* cmd_trace_gen.c — `rmqcoord trace-gen`: a synthetic heartbeat trace on
 * stdout, deterministic per --seed, shaped like what the daemon records:
 * a header, the topics' routes, then clients that connect, heartbeat every
 * --heartbeat-ms (± --jitter-ms), and churn: at --churn-per-min a random
 * client leaves — crashing (close only) with probability --crash-rate,
 * freezing silently (no more lines; replay's expiry removes it) with
 * --freeze-rate, gracefully (UNREGISTER_CLIENT then close) otherwise — and
 * a new client joins the same group a few seconds later. Each group's retry
 * topic route appears after its first heartbeat, as the daemon creates it.
 * Used for replay benchmarks (--events 1000000) and as test input.
 */
#include "cmd_trace_gen.h"
#include "array.h"
#include "client_defaults.h"
#include "err.h"
#include "mem.h"
#include "request_codes.h"
#include "trace_fmt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gen_opts {
    long groups, clients, queues;
    int64_t duration_ms, heartbeat_ms, jitter_ms, start_ms;
    double churn_per_min, crash_rate, freeze_rate;
    uint64_t seed, events;
};

struct gclient {
    uint64_t conn;
    long group;
    char *body; /* owned heartbeat JSON */
    char peer[32];
    bool alive;
};

enum { G_JOIN = 0, G_HB, G_CHURN };

struct gact {
    int64_t at;
    uint64_t seq;
    int kind;
    long arg; /* G_HB: client index; G_JOIN: group */
};

struct gen {
    struct gen_opts o;
    uint64_t rng, seq, written, next_conn;
    struct gclient *c;
    size_t nc, cc;
    struct gact *h;
    size_t nh, ch;
    bool *retry_routed;
    struct buf out;
};

static uint64_t rnd(struct gen *g)
{
    uint64_t z = (g->rng += 0x9E3779B97F4A7C15ULL); /* splitmix64: tiny, and the same on every platform */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double rnd01(struct gen *g)
{
    return (double)(rnd(g) >> 11) / 9007199254740992.0;
}

static int64_t rnd_range(struct gen *g, int64_t n)
{
    return n > 0 ? (int64_t)(rnd(g) % (uint64_t)n) : 0;
}

static bool gact_less(const struct gact *a, const struct gact *b)
{
    return a->at != b->at ? a->at < b->at : a->seq < b->seq;
}

static int push(struct gen *g, int64_t at, int kind, long arg)
{
    if (RMQ_GROW(g->h, g->ch, g->nh + 1, 256) != 0)
        return RMQ_ENOMEM;
    struct gact a = {at, g->seq++, kind, arg};
    size_t i = g->nh++;
    for (; i > 0 && gact_less(&a, &g->h[(i - 1) / 2]); i = (i - 1) / 2)
        g->h[i] = g->h[(i - 1) / 2];
    g->h[i] = a;
    return RMQ_OK;
}

static struct gact pop(struct gen *g)
{
    struct gact top = g->h[0], last = g->h[--g->nh];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const struct gact *best = &last;
        if (l < g->nh && gact_less(&g->h[l], best))
            best = &g->h[m = l];
        if (l + 1 < g->nh && gact_less(&g->h[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        g->h[i] = g->h[m];
        i = m;
    }
    if (g->nh)
        g->h[i] = last;
    return top;
}

/* Writes one line; returns 1 when --events is reached. */
static int emit(struct gen *g, const struct trace_event *ev)
{
    if (g->o.events && g->written >= g->o.events)
        return 1;
    int rc = trace_encode_event(ev, &g->out);
    if (rc != 0)
        return rc;
    g->written++;
    if (buf_live(&g->out) > ((size_t)1 << 20)) {
        fwrite(buf_head(&g->out), 1, buf_live(&g->out), stdout);
        buf_reset(&g->out);
    }
    return g->o.events && g->written >= g->o.events ? 1 : 0;
}

static int emit_route(struct gen *g, int64_t ts, const char *topic, int nq)
{
    struct trace_broker b = {"broker-a", nq, nq, 6};
    struct trace_event ev = {.kind = TRACE_ROUTE, .ts = ts, .topic = topic, .brokers = &b, .nbrokers = 1};
    return emit(g, &ev);
}

static char *heartbeat_json(long group, const char *cid)
{
    char *b = rmq_malloc(1024);
    if (b)
        snprintf(
            b, 1024,
            "{\"clientID\":\"%s\",\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\","
            "\"consumeType\":\"CONSUME_PASSIVELY\",\"groupName\":\"GID_%ld\",\"messageModel\":\"CLUSTERING\","
            "\"subscriptionDataSet\":[{\"classFilterMode\":false,\"codeSet\":[],\"expressionType\":\"TAG\","
            "\"subString\":\"*\",\"subVersion\":1,\"tagsSet\":[],\"topic\":\"Topic_%ld\"},{"
            "\"classFilterMode\":"
            "false,\"codeSet\":[],\"expressionType\":\"TAG\",\"subString\":\"*\",\"subVersion\":1,"
            "\"tagsSet\":[],"
            "\"topic\":\"%%RETRY%%GID_%ld\"}],\"unitMode\":false}],\"producerDataSet\":[]}",
            cid, group, group, group);
    return b;
}

/* A new client of group connects at t and sends its first heartbeat. */
static int join(struct gen *g, int64_t t, long group)
{
    if (RMQ_GROW(g->c, g->cc, g->nc + 1, 64) != 0)
        return RMQ_ENOMEM;
    struct gclient *c = &g->c[g->nc];
    char cid[64];
    uint64_t n = ++g->next_conn;
    snprintf(cid, sizeof cid, "10.%u.%u.%u@%llu#gen", (unsigned)(group % 250), (unsigned)(n / 250 % 250),
             (unsigned)(n % 250), (unsigned long long)(1000 + n));
    snprintf(c->peer, sizeof c->peer, "10.%u.%u.%u:%u", (unsigned)(group % 250), (unsigned)(n / 250 % 250),
             (unsigned)(n % 250), (unsigned)(40000 + n % 20000));
    c->conn = n;
    c->group = group;
    c->alive = true;
    if (!(c->body = heartbeat_json(group, cid)))
        return RMQ_ENOMEM;
    g->nc++;
    struct trace_event ev = {.kind = TRACE_CONNECT, .ts = t, .conn = c->conn, .peer = c->peer};
    int rc = emit(g, &ev);
    return rc ? rc : push(g, t + 5, G_HB, (long)(g->nc - 1));
}

static int heartbeat(struct gen *g, int64_t t, struct gclient *c, long index)
{
    struct trace_event ev = {.kind = TRACE_REQUEST,
                             .ts = t,
                             .conn = c->conn,
                             .peer = c->peer,
                             .code = RMQ_REQ_HEART_BEAT,
                             .language = 0,
                             .cmd_version = 409,
                             .body = (const uint8_t *)c->body,
                             .body_len = strlen(c->body)};
    int rc = emit(g, &ev);
    if (rc == 0 && !g->retry_routed[c->group]) {
        char topic[64];
        snprintf(topic, sizeof topic, "%%RETRY%%GID_%ld", c->group);
        g->retry_routed[c->group] = true;
        rc = emit_route(g, t, topic, 1);
    }
    int64_t j = g->o.jitter_ms;
    return rc ? rc : push(g, t + g->o.heartbeat_ms - j + rnd_range(g, 2 * j + 1), G_HB, index);
}

/* Time to the next churn: uniform around the mean gap (no libm needed, and
 * the rate over a trace is what matters). */
static int64_t churn_gap(struct gen *g)
{
    double mean = 60000.0 / g->o.churn_per_min;
    return 1 + (int64_t)(mean * (0.5 + rnd01(g)));
}

/* One churn: a random live client leaves, a replacement joins soon after. */
static int churn(struct gen *g, int64_t t)
{
    size_t alive = 0, pick;
    for (size_t i = 0; i < g->nc; i++)
        alive += g->c[i].alive;
    int rc = 0;
    if (alive) {
        pick = (size_t)rnd_range(g, (int64_t)alive);
        size_t i = 0;
        for (;; i++)
            if (g->c[i].alive && pick-- == 0)
                break;
        struct gclient *c = &g->c[i];
        c->alive = false;
        double r = rnd01(g);
        char group[64];
        snprintf(group, sizeof group, "GID_%ld", c->group);
        struct trace_kv kv[] = {{"clientID", "gen"}, {"consumerGroup", group}};
        struct trace_event un = {.kind = TRACE_REQUEST,
                                 .ts = t,
                                 .conn = c->conn,
                                 .peer = c->peer,
                                 .code = RMQ_REQ_UNREGISTER_CLIENT,
                                 .cmd_version = 409,
                                 .ext = kv,
                                 .next = 2};
        struct trace_event cl = {
            .kind = TRACE_CLOSE, .ts = t, .conn = c->conn, .peer = c->peer, .reason = "peer closed"};
        if (r >= g->o.crash_rate + g->o.freeze_rate)
            rc = emit(g, &un);
        if (rc == 0 && r >= g->o.freeze_rate)
            rc = emit(g, &cl);
        if (rc == 0)
            rc = push(g, t + 1000 + rnd_range(g, 4000), G_JOIN, c->group);
    }
    return rc ? rc : push(g, t + churn_gap(g), G_CHURN, 0);
}

static int run(struct gen *g)
{
    int64_t t0 = g->o.start_ms, end = g->o.duration_ms ? t0 + g->o.duration_ms : INT64_MAX;
    struct trace_event hdr = {.kind = TRACE_HEADER, .ts = t0};
    int rc = emit(g, &hdr);
    for (long i = 0; rc == 0 && i < g->o.groups; i++) {
        char topic[64];
        snprintf(topic, sizeof topic, "Topic_%ld", i);
        rc = emit_route(g, t0, topic, (int)g->o.queues);
    }
    for (long i = 0; rc == 0 && i < g->o.groups * g->o.clients; i++)
        rc = push(g, t0 + rnd_range(g, g->o.heartbeat_ms), G_JOIN, i % g->o.groups);
    if (rc == 0 && g->o.churn_per_min > 0)
        rc = push(g, t0 + churn_gap(g), G_CHURN, 0);
    while (rc == 0 && g->nh && g->h[0].at <= end) {
        struct gact a = pop(g);
        if (a.kind == G_JOIN)
            rc = join(g, a.at, a.arg);
        else if (a.kind == G_CHURN)
            rc = churn(g, a.at);
        else if (g->c[a.arg].alive)
            rc = heartbeat(g, a.at, &g->c[a.arg], a.arg);
    }
    return rc < 0 ? rc : 0;
}

static void usage(FILE *out)
{
    fputs("usage: rmqcoord trace-gen [options] > trace.jsonl\n"
          "\n"
          "Writes a synthetic heartbeat trace (docs/trace-format.md) to stdout: groups of\n"
          "Java-like consumers that connect, heartbeat, subscribe, crash, freeze and leave, as\n"
          "the daemon's --record would have recorded them, for `rmqcoord replay` and its\n"
          "benchmarks. The same options and seed give the same trace.\n"
          "\n"
          "  --groups N          consumer groups (default 4)\n"
          "  --clients M         clients per group (default 4)\n"
          "  --queues Q          queues of each group's topic, 1..1024 (default 8)\n"
          "  --duration-ms D     trace length, ms of trace time (default 600000)\n"
          "  --events N          stop after N lines instead (alone: no duration limit)\n"
          "  --churn-per-min R   joins + leaves per group per minute (default 2)\n"
          "  --crash-rate P      share of leaves that are crashes: no UNREGISTER (default 0.5)\n"
          "  --freeze-rate F     share of leaves that are freezes: silent, connected (default 0)\n",
          out);
    fprintf(out,
            "  --heartbeat-ms H    heartbeat period, ms (default %d)\n"
            "  --jitter-ms J       random shift of each heartbeat, ms (default 1000; 2J < H)\n"
            "  --seed S            random seed (default 1)\n"
            "  --start-ms T        wall-clock start of the trace, ms since 1970 (default 1700000000000)\n"
            "\n"
            "Exit status: 0, 1 when writing failed, 2 for bad options.\n",
            RMQ_DEFAULT_HEARTBEAT_MS);
}

static int parse(struct gen_opts *o, int argc, char **argv)
{
    static const struct option lo[] = {
        {"groups", 1, NULL, 'g'},        {"clients", 1, NULL, 'c'},    {"duration-ms", 1, NULL, 'd'},
        {"churn-per-min", 1, NULL, 'r'}, {"crash-rate", 1, NULL, 'p'}, {"freeze-rate", 1, NULL, 'f'},
        {"heartbeat-ms", 1, NULL, 'b'},  {"jitter-ms", 1, NULL, 'j'},  {"seed", 1, NULL, 's'},
        {"events", 1, NULL, 'n'},        {"queues", 1, NULL, 'q'},     {"start-ms", 1, NULL, 't'},
        {"help", 0, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    *o = (struct gen_opts){4,   4,   8, 600000, RMQ_DEFAULT_HEARTBEAT_MS, 1000, 1700000000000LL, 2.0,
                           0.5, 0.0, 1, 0};
    optind = 1;
    opterr = 0;
    int ch;
    bool dur_set = false;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        char *end = NULL;
        double v = optarg ? strtod(optarg, &end) : 0;
        if (ch == 'h' || ch == '?' || (optarg && (*end || v < 0)))
            return ch == 'h' ? 1 : RMQ_EINVAL;
        switch (ch) {
        case 'g': o->groups = (long)v; break;
        case 'c': o->clients = (long)v; break;
        case 'd': o->duration_ms = (int64_t)v, dur_set = true; break;
        case 'r': o->churn_per_min = v; break;
        case 'p': o->crash_rate = v; break;
        case 'f': o->freeze_rate = v; break;
        case 'b': o->heartbeat_ms = (int64_t)v; break;
        case 'j': o->jitter_ms = (int64_t)v; break;
        case 's': o->seed = (uint64_t)v; break;
        case 'n': o->events = (uint64_t)v; break;
        case 'q': o->queues = (long)v; break;
        case 't': o->start_ms = (int64_t)v; break;
        default: return RMQ_EINVAL;
        }
    }
    if (o->events && !dur_set)
        o->duration_ms = 0; /* --events alone: run until that many lines */
    bool ok = optind == argc && o->groups >= 1 && o->groups <= 100000 && o->clients >= 1 && o->queues >= 1 &&
              o->queues <= 1024 && o->heartbeat_ms > 0 && o->jitter_ms * 2 < o->heartbeat_ms &&
              o->crash_rate + o->freeze_rate <= 1.0 && (o->duration_ms > 0 || o->events > 0);
    return ok ? 0 : RMQ_EINVAL;
}

int cmd_trace_gen_main(int argc, char **argv)
{
    struct gen g;
    memset(&g, 0, sizeof g);
    int rc = parse(&g.o, argc, argv);
    if (rc != 0) {
        if (rc != 1)
            fputs("rmqcoord trace-gen: bad or unknown option; every value is a number >= 0, --clients and\n"
                  "--groups >= 1, --queues 1..1024, 2 x --jitter-ms < --heartbeat-ms, --crash-rate +\n"
                  "--freeze-rate <= 1, and --duration-ms or --events must be set\n\n",
                  stderr);
        usage(rc == 1 ? stdout : stderr);
        return rc == 1 ? 0 : 2;
    }
    g.rng = g.o.seed;
    buf_init(&g.out, 0);
    g.retry_routed = rmq_calloc((size_t)g.o.groups, sizeof *g.retry_routed);
    rc = g.retry_routed ? run(&g) : RMQ_ENOMEM;
    if (rc == 0 && buf_live(&g.out))
        fwrite(buf_head(&g.out), 1, buf_live(&g.out), stdout);
    if (fflush(stdout) != 0)
        rc = RMQ_EIO;
    if (rc != 0)
        fprintf(stderr, "rmqcoord trace-gen: %s\n", rmq_strerror(rc));
    for (size_t i = 0; i < g.nc; i++)
        rmq_free(g.c[i].body);
    rmq_free(g.c);
    rmq_free(g.h);
    rmq_free(g.retry_routed);
    buf_free(&g.out);
    return rc ? 1 : 0;
}
