/* cmd_replay.c — `rmqcoord replay FILE [options]`: offline replay of a
 * heartbeat trace through the replay engine (replay.h), or with --target a
 * live replay against a running daemon (replay_live.h).
 *
 * Offline, the file is read twice when the notify source is "auto": a
 * cheap first pass collects the connections the trace shows receiving a
 * NOTIFY and every client's recorded GET_CONSUMER_LIST_BY_GROUP rounds,
 * which the engine turns into each client's behaviour (replay_infer.c;
 * only lines mentioning "notify" or "code":38 are decoded), the second
 * feeds every event. A trace without notify lines is read once, with the same
 * result (run_offline says how). The report goes to stdout, byte-identical
 * for the same input and flags; the throughput measurement goes to stderr
 * because it is not.
 */
#include "cmd_replay.h"
#include "client_defaults.h"
#include "clocks.h"
#include "err.h"
#include "mem.h"
#include "parse_int.h"
#include "replay.h"
#include "replay_feed.h"
#include "replay_infer.h"
#include "replay_io.h"
#include "replay_live.h"
#include "request_codes.h"
#include "trace_fmt.h"
#include "trace_fmt_scan.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- options ---- */

struct cli {
    struct replay_options opt;
    const char *path, *target;
    double speed;
    long max_conns;
    const char *ignore[64];
    struct replay_client_override overrides[64];
    char override_ids[64][256];
    const char *idcs[64];
    char explain[512];
};

static void usage(FILE *f)
{
    fputs(
        "usage: rmqcoord replay FILE [options]\n"
        "\n"
        "Replays a heartbeat trace (recorded by `rmqcoord serve --record FILE`, or made by\n"
        "`rmqcoord trace-gen`; docs/trace-format.md) to explain a rebalance incident: which\n"
        "client held which queue when, where two held the same queue (overlap) or none did\n"
        "(stall), and why. Each client's NOTIFY behaviour and timer are inferred from the\n"
        "trace unless given below. With --target it sends the trace to a live daemon instead.\n"
        "\n"
        "  --strategy NAME            AVG (default), AVG_BY_CIRCLE, CONSISTENT_HASH, MACHINE_ROOM, "
        "MACHINE_ROOM_NEARBY\n"
        "  --virtual-nodes N          consistent-hash virtual nodes (10)\n"
        "  --idcs ROOM[,ROOM...]      MACHINE_ROOM consumer rooms\n"
        "  --client-rebalance-ms N    client rebalance timer (" RMQ_DEFAULT_STR(
            RMQ_DEFAULT_REBALANCE_MS) ")\n"
                                      "  --notify-delay-ms N        NOTIFY to rebalance delay (0)\n"
                                      "  --channel-expiry-ms N      channel expiry (" RMQ_DEFAULT_STR(
                                          RMQ_DEFAULT_CHANNEL_EXPIRY_MS) ")\n"
                                                                         "  --expiry-scan-ms N         "
                                                                         "expiry scan period (1000, the "
                                                                         "daemon's default; the broker's is "
                                                                         "10000)\n"
                                                                         "  --notify-on-expiry on|off  "
                                                                         "NOTIFY the group on expiry (on)\n"
                                                                         "  --notify-source auto|model|trace "
                                                                         " what makes clients rebalance on "
                                                                         "NOTIFY (auto)\n"
                                                                         "  --ignore-notify CLIENT     this "
                                                                         "client id rebalances only on its "
                                                                         "timer (repeatable)\n"
                                                                         "  --client "
                                                                         "ID:notify=on|off,rebalance-ms=N"
                                                                         "  one client's behaviour, "
                                                                         "replacing "
                                                                         "what was inferred and the flags "
                                                                         "above (repeatable)\n"
                                                                         "  --infer on|off             use "
                                                                         "each "
                                                                         "client's behaviour as its recorded "
                                                                         "consumer-list queries show it "
                                                                         "(on)\n"
                                                                         "  --from T --to T            "
                                                                         "report window: ms since the epoch, "
                                                                         "or +N ms after the trace start\n"
                                                                         "  --format text|json         "
                                                                         "output format (text)\n"
                                                                         "  --explain TOPIC:BROKER:QUEUE  "
                                                                         "ownership history of one queue\n"
                                                                         "  --target HOST:PORT [--speed X] "
                                                                         "[--max-conns N]  live replay "
                                                                         "against a running daemon\n",
        f);
    fputs("\nThe daemon's dialect, as `rmqcoord serve` was given it (a flag given with it overrides it):\n"
          "  --compat MODE              rmqcoord (default), broker (= broker-5), broker-5 or broker-4.9:\n"
          "                             NOTIFY as that broker does (4.9: broadcasting groups too), none\n"
          "                             on expiry, one on an UNREGISTER_CLIENT that removed nothing, and\n"
          "                             --expiry-scan-ms 10000\n"
          "  --notify-on-noop-unregister on|off  NOTIFY the group on an UNREGISTER_CLIENT that removed\n"
          "                             nothing (off; --compat: on)\n",
          f);
    fputs("\nExit status: 0; 1 when the trace cannot be read or the live replay fails; 2 for bad options.\n",
          f);
}

static int parse_time(const char *s, bool *rel, int64_t *out)
{
    *rel = s[0] == '+';
    return rmq_parse_i64_range(s + *rel, 0, INT64_MAX, out);
}

static int split_list(char *s, const char **v, size_t max, size_t *n)
{
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == max)
            return RMQ_E2BIG;
        v[(*n)++] = tok;
    }
    return *n ? RMQ_OK : RMQ_EINVAL;
}

/* TOPIC:BROKER:QUEUE, split from the right (topics may hold ':' in theory, queue ids never). */
static int parse_explain(struct cli *c, const char *arg)
{
    snprintf(c->explain, sizeof c->explain, "%s", arg);
    char *q = strrchr(c->explain, ':');
    char *b = q ? (*q = '\0', strrchr(c->explain, ':')) : NULL;
    int64_t qid;
    if (!b || b == c->explain || !b[1] || rmq_parse_i64_range(q + 1, 0, INT32_MAX, &qid) != 0)
        return RMQ_EINVAL;
    *b = '\0';
    c->opt.explain_topic = c->explain;
    c->opt.explain_broker = b + 1;
    c->opt.explain_qid = (int32_t)qid;
    return RMQ_OK;
}

/* --client ID:notify=on|off,rebalance-ms=N (either or both; the client id
 * may hold ':', so it is split at the last one). */
static int parse_client(struct cli *c, const char *arg)
{
    struct replay_options *r = &c->opt;
    if (r->n_overrides == 64)
        return RMQ_E2BIG;
    char *id = c->override_ids[r->n_overrides];
    snprintf(id, sizeof c->override_ids[0], "%s", arg);
    char *colon = strrchr(id, ':');
    if (!colon || colon == id || !colon[1] || strlen(arg) >= sizeof c->override_ids[0])
        return RMQ_EINVAL;
    *colon = '\0';
    struct replay_client_override *o = &c->overrides[r->n_overrides];
    *o = (struct replay_client_override){.client_id = id, .notify = -1, .rebalance_ms = 0};
    char *save = NULL;
    for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        if (!strcmp(kv, "notify=on") || !strcmp(kv, "notify=off"))
            o->notify = !strcmp(kv, "notify=on");
        else if (strncmp(kv, "rebalance-ms=", 13) ||
                 rmq_parse_i64_range(kv + 13, 1, INT64_MAX, &o->rebalance_ms))
            return RMQ_EINVAL;
    }
    r->n_overrides++;
    return 0;
}

enum {
    O_STRATEGY = 256,
    O_VNODES,
    O_IDCS,
    O_REBALANCE,
    O_DELAY,
    O_EXPIRY,
    O_SCAN,
    O_ON_EXPIRY,
    O_SOURCE,
    O_IGNORE,
    O_FROM,
    O_TO,
    O_FORMAT,
    O_EXPLAIN,
    O_TARGET,
    O_SPEED,
    O_MAX_CONNS,
    O_CLIENT,
    O_INFER,
    O_COMPAT,
    O_NOOP_UNREGISTER,
    O_HELP,
};

static const struct option long_opts[] = {
    {"strategy", required_argument, NULL, O_STRATEGY},
    {"virtual-nodes", required_argument, NULL, O_VNODES},
    {"idcs", required_argument, NULL, O_IDCS},
    {"client-rebalance-ms", required_argument, NULL, O_REBALANCE},
    {"notify-delay-ms", required_argument, NULL, O_DELAY},
    {"channel-expiry-ms", required_argument, NULL, O_EXPIRY},
    {"expiry-scan-ms", required_argument, NULL, O_SCAN},
    {"notify-on-expiry", required_argument, NULL, O_ON_EXPIRY},
    {"notify-source", required_argument, NULL, O_SOURCE},
    {"ignore-notify", required_argument, NULL, O_IGNORE},
    {"from", required_argument, NULL, O_FROM},
    {"to", required_argument, NULL, O_TO},
    {"format", required_argument, NULL, O_FORMAT},
    {"explain", required_argument, NULL, O_EXPLAIN},
    {"target", required_argument, NULL, O_TARGET},
    {"speed", required_argument, NULL, O_SPEED},
    {"max-conns", required_argument, NULL, O_MAX_CONNS},
    {"client", required_argument, NULL, O_CLIENT},
    {"infer", required_argument, NULL, O_INFER},
    {"compat", required_argument, NULL, O_COMPAT},
    {"notify-on-noop-unregister", required_argument, NULL, O_NOOP_UNREGISTER},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

/* One option into c; RMQ_EINVAL names nothing, the caller prints the flag. */
static int apply_opt(struct cli *c, int o, char *arg)
{
    struct replay_options *r = &c->opt;
    int64_t v = 0;
    switch (o) {
    case O_STRATEGY: return allocate_strategy_parse(arg, &r->alloc.strategy);
    case O_VNODES:
        return rmq_parse_i64_range(arg, 0, INT64_MAX, &v) ? RMQ_EINVAL
                                                          : (r->alloc.virtual_nodes = (long)v, 0);
    case O_IDCS: return split_list(arg, c->idcs, 64, &r->alloc.n_idcs);
    case O_REBALANCE:
        r->rebalance_explicit = true;
        return rmq_parse_i64_range(arg, 1, INT64_MAX, &r->rebalance_ms);
    case O_CLIENT: return parse_client(c, arg);
    case O_INFER:
        r->infer = !strcmp(arg, "on");
        return strcmp(arg, "on") && strcmp(arg, "off") ? RMQ_EINVAL : 0;
    case O_DELAY: return rmq_parse_i64_range(arg, 0, INT64_MAX, &r->notify_delay_ms);
    case O_EXPIRY: return rmq_parse_i64_range(arg, 0, INT64_MAX, &r->expiry_ms);
    case O_SCAN: return rmq_parse_i64_range(arg, 1, INT64_MAX, &r->scan_ms);
    case O_ON_EXPIRY:
        r->dialect.notify_on_expiry = !strcmp(arg, "on");
        return strcmp(arg, "on") && strcmp(arg, "off") ? RMQ_EINVAL : 0;
    case O_COMPAT: return 0; /* applied before the other options (parse_args) */
    case O_NOOP_UNREGISTER:
        r->dialect.notify_noop_unregister = !strcmp(arg, "on");
        return strcmp(arg, "on") && strcmp(arg, "off") ? RMQ_EINVAL : 0;
    case O_SOURCE:
        r->notify_source = !strcmp(arg, "model")   ? REPLAY_NOTIFY_MODEL
                           : !strcmp(arg, "trace") ? REPLAY_NOTIFY_TRACE
                                                   : REPLAY_NOTIFY_AUTO;
        return strcmp(arg, "auto") && strcmp(arg, "model") && strcmp(arg, "trace") ? RMQ_EINVAL : 0;
    case O_IGNORE:
        if (r->n_ignore == 64)
            return RMQ_E2BIG;
        c->ignore[r->n_ignore++] = arg;
        return 0;
    case O_FROM: r->has_from = true; return parse_time(arg, &r->from_rel, &r->from_ms);
    case O_TO: r->has_to = true; return parse_time(arg, &r->to_rel, &r->to_ms);
    case O_FORMAT:
        r->format = !strcmp(arg, "json") ? REPLAY_JSON : REPLAY_TEXT;
        return strcmp(arg, "json") && strcmp(arg, "text") ? RMQ_EINVAL : 0;
    case O_EXPLAIN: return parse_explain(c, arg);
    case O_TARGET: c->target = arg; return 0;
    case O_SPEED: c->speed = strtod(arg, NULL); return c->speed > 0 ? 0 : RMQ_EINVAL;
    case O_MAX_CONNS:
        return rmq_parse_i64_range(arg, 1, INT64_MAX, &v) ? RMQ_EINVAL : (c->max_conns = (long)v, 0);
    default: return RMQ_EINVAL;
    }
}

/* --compat MODE / --compat=MODE (the last one wins), as `serve` takes it: the
 * daemon's dialect, and its expiry scan (serve --compat scans every 10 s),
 * before the other options so they override it. 0 or RMQ_EINVAL (printed). */
static int apply_compat(struct replay_options *r, int argc, char **argv)
{
    const char *arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--compat") && i + 1 < argc)
            arg = argv[++i];
        else if (!strncmp(argv[i], "--compat=", 9))
            arg = argv[i] + 9;
    }
    enum dialect_mode mode;
    if (!arg)
        return 0;
    if (dialect_mode_parse(arg, &mode) != 0) {
        fprintf(stderr, "rmqcoord replay: --compat takes " DIALECT_MODE_VALUES ", got '%s'\n", arg);
        return RMQ_EINVAL;
    }
    dialect_init(&r->dialect, mode);
    if (mode != DIALECT_RMQCOORD)
        r->scan_ms = 10000;
    return 0;
}

static int parse_args(struct cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    replay_options_init(&c->opt);
    c->opt.ignore_notify = c->ignore;
    c->opt.overrides = c->overrides;
    c->opt.alloc.idcs = c->idcs;
    c->speed = 1.0;
    c->max_conns = 4096;
    if (apply_compat(&c->opt, argc, argv) != 0)
        return RMQ_EINVAL;
    optind = 1;
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (o == O_HELP || o == 'h') {
            usage(stdout);
            return 1;
        }
        if (o == '?' || apply_opt(c, o, optarg) != 0) {
            fprintf(stderr,
                    "rmqcoord replay: bad or unknown option %s (see rmqcoord replay --help for each option's "
                    "valid values; strategies: AVG, AVG_BY_CIRCLE, CONSISTENT_HASH, MACHINE_ROOM, "
                    "MACHINE_ROOM_NEARBY)\n",
                    argv[optind - 1]);
            return RMQ_EINVAL;
        }
    }
    if (optind != argc - 1) {
        fputs("rmqcoord replay: exactly one trace FILE is needed\n", stderr);
        return RMQ_EINVAL;
    }
    c->path = argv[optind];
    return 0;
}

static double now_s(void)
{
    return (double)rmq_mono_us() / 1e6;
}

static int write_out(struct replay *rp)
{
    struct buf *o = replay_output(rp);
    size_t n = buf_live(o);
    int rc = n && fwrite(buf_head(o), 1, n, stdout) != n ? RMQ_EIO : RMQ_OK;
    buf_reset(o);
    return rc;
}

/* How a pass reads the file. */
enum pass_mode {
    PASS_NOTIFY,       /* the pre-pass: lines that mention "notify" into rp's deaf-client notion */
    PASS_NOTIFY_QUIET, /* the same, printing nothing */
    PASS_FEED,         /* every event into rp, output written as it grows */
    PASS_SPECULATE,    /* PASS_FEED as if the pre-pass had found nothing; see run_offline */
};

struct pass_state {
    struct buf held;   /* PASS_SPECULATE: output not written yet */
    bool notify_seen;  /* a line the pre-pass would record (PASS_NOTIFY*, PASS_SPECULATE) */
    bool held_checked; /* PASS_SPECULATE: a quiet pre-pass found nothing; write as PASS_FEED does */
    bool early;        /* stopped at --to, before the end of the file */
    char note[600];    /* a message PASS_SPECULATE did not print */
};

/* Output held while speculating; past it, the speculation is checked. */
#define HOLD_MAX ((size_t)64 << 20)

static int pass(struct cli *c, struct replay *rp, enum pass_mode mode, struct pass_state *ps);

/* What PASS_FEED does with output at this point: written; while speculating
 * unchecked, held (past HOLD_MAX: checked first, then written). */
static int flush_out(struct cli *c, struct replay *rp, enum pass_mode mode, struct pass_state *ps)
{
    if (mode != PASS_SPECULATE || ps->held_checked)
        return write_out(rp);
    struct buf *o = replay_output(rp);
    if (buf_append(&ps->held, buf_head(o), buf_live(o)) != 0)
        return RMQ_ENOMEM;
    buf_reset(o);
    if (buf_live(&ps->held) <= HOLD_MAX)
        return RMQ_OK;
    struct pass_state check = {.notify_seen = false};
    if (pass(c, rp, PASS_NOTIFY_QUIET, &check) != 0 || check.notify_seen) {
        ps->notify_seen = true; /* the speculation is off */
        return RMQ_OK;
    }
    size_t n = buf_live(&ps->held);
    int rc = fwrite(buf_head(&ps->held), 1, n, stdout) != n ? RMQ_EIO : RMQ_OK;
    buf_free(&ps->held);
    ps->held_checked = true;
    return rc;
}

/* The consumerGroup extField of a recorded GET_CONSUMER_LIST_BY_GROUP (the last one wins). */
static const char *query_group(const struct trace_event *ev)
{
    const char *g = NULL;
    for (size_t i = 0; i < ev->next; i++)
        if (!strcmp(ev->ext[i].key, "consumerGroup"))
            g = ev->ext[i].val;
    return g;
}

/* Reads every line of path as mode says. 0, or 1 after an error (printed
 * unless the mode is quiet: PASS_NOTIFY_QUIET, PASS_SPECULATE). */
static int pass(struct cli *c, struct replay *rp, enum pass_mode mode, struct pass_state *ps)
{
    bool notify_only = mode == PASS_NOTIFY || mode == PASS_NOTIFY_QUIET;
    /* Speculating quietly until a check confirms it; from then on it is PASS_FEED. */
#define QUIET (mode == PASS_NOTIFY_QUIET || (mode == PASS_SPECULATE && !ps->held_checked))
    struct replay_reader r;
    struct trace_decoder d;
    trace_decoder_init(&d);
    int rc = replay_reader_open(&r, c->path), n = 0;
    if (rc == RMQ_EIO) {
        if (!QUIET)
            fprintf(stderr, "rmqcoord replay: %s: %s\n", c->path, strerror(errno));
        rc = RMQ_EPROTO; /* reported */
    }
    const char *line;
    size_t len;
    bool complete;
    while (rc == 0 && (n = replay_reader_next(&r, &line, &len, &complete)) == 1) {
        if (notify_only && !trace_find(line, len, "\"notify\"", 8) &&
            (mode != PASS_NOTIFY || !trace_find(line, len, "\"code\":38", 9)))
            continue;
        struct trace_event ev;
        rc = trace_decode_line(&d, line, len, r.lineno, &ev);
        if (rc != 0 && !complete) {
            if (!notify_only && QUIET) /* printed if the speculation stands */
                snprintf(ps->note, sizeof ps->note,
                         "rmqcoord replay: %s: %s (a truncated last line: ignored)\n", c->path, d.error);
            else if (!notify_only)
                fprintf(stderr, "rmqcoord replay: %s: %s (a truncated last line: ignored)\n", c->path,
                        d.error);
            rc = 0;
            break;
        }
        if (rc != 0) {
            if (!QUIET)
                fprintf(stderr, "rmqcoord replay: %s: %s\n", c->path, d.error);
            rc = RMQ_EPROTO; /* reported (the error names the line) */
        } else if (notify_only) {
            ps->notify_seen = ps->notify_seen || ev.kind == TRACE_NOTIFY;
            if (ev.kind == TRACE_NOTIFY)
                rc = mode == PASS_NOTIFY ? replay_note_notify(rp, ev.conn, ev.group, ev.ts)
                                         : replay_note_recorded_notify(rp, ev.conn);
            else if (mode == PASS_NOTIFY && ev.kind == TRACE_REQUEST &&
                     ev.code == RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP)
                rc = replay_note_query(rp, ev.conn, query_group(&ev), ev.ts);
        } else if (mode == PASS_SPECULATE && ev.kind == TRACE_NOTIFY && !ps->held_checked &&
                   trace_find(line, len, "\"notify\"", 8)) {
            ps->notify_seen = true; /* the pre-pass would have recorded this one */
        } else if ((rc = replay_feed(rp, &ev)) == 1) {
            rc = 0, n = 0; /* past --to */
            ps->early = true;
        }
        if (rc == 0 && !notify_only && buf_live(replay_output(rp)) > REPLAY_IO_CHUNK)
            rc = flush_out(c, rp, mode, ps);
        if (n == 0 || (mode == PASS_SPECULATE && ps->notify_seen))
            break;
    }
    if (rc == 0 && n == RMQ_E2BIG) {
        /* The reader gave up looking for the newline of the next line. */
        if (!QUIET)
            fprintf(stderr, "rmqcoord replay: %s: line %llu: " TRACE_FMT_LINE_LIMIT_TEXT "\n", c->path,
                    (unsigned long long)r.lineno + 1);
        rc = RMQ_EPROTO; /* reported */
    } else if (rc == 0 && n < 0) {
        rc = n;
    }
    if (rc != 0 && rc != RMQ_EPROTO && !QUIET)
        fprintf(stderr, "rmqcoord replay: %s: %s\n", c->path, rmq_strerror(rc));
#undef QUIET
    replay_reader_close(&r);
    trace_decoder_free(&d);
    return rc ? 1 : 0;
}

/* With --notify-source auto the file is read twice: the pre-pass finds the
 * connections the trace shows receiving a NOTIFY, then every event is fed.
 * Most traces without notify lines (generated or hand-written ones) would
 * pay a whole pass for nothing, so replay first feeds every event as if the
 * pre-pass had found nothing, holding the output back and printing nothing.
 * That run stands when the assumption held: it fed the whole file without
 * meeting a line the pre-pass would record (one that mentions "notify" and
 * decodes as a notify event), or a quiet pre-pass confirms it (stopped
 * early by --to, or too much output to hold). Then the state, output and
 * messages are those of the two-pass run: the pre-pass recorded nothing and
 * hit no error (a line it decodes is decoded by the feed too, and any feed
 * error sends replay back to the two-pass run). Otherwise everything is
 * dropped and the file is read the usual way, from the start. */
static int run_offline(struct cli *c)
{
    char err[256];
    struct replay *rp;
    if (replay_new(&c->opt, &rp, err, sizeof err) != 0) {
        fprintf(stderr, "rmqcoord replay: %s\n", err);
        return 2;
    }
    double t0 = now_s(), t_pre = 0;
    int rc = 1;
    struct pass_state ps = {.notify_seen = false};
    buf_init(&ps.held, 0);
    /* RMQCOORD_REPLAY_TWO_PASS=1 keeps to the two-pass run (tests compare both ways). */
    const char *two = getenv("RMQCOORD_REPLAY_TWO_PASS");
    bool speculate = !(two && !strcmp(two, "1"));
    if (c->opt.notify_source == REPLAY_NOTIFY_AUTO && !speculate) {
        double t = now_s();
        rc = pass(c, rp, PASS_NOTIFY, &ps);
        t_pre = now_s() - t;
        if (rc == 0)
            rc = pass(c, rp, PASS_FEED, &ps);
    } else if (c->opt.notify_source == REPLAY_NOTIFY_AUTO) {
        rc = pass(c, rp, PASS_SPECULATE, &ps);
        if (!ps.held_checked && rc == 0 && !ps.notify_seen && ps.early) {
            double t = now_s();
            struct pass_state check = {.notify_seen = false};
            rc = pass(c, rp, PASS_NOTIFY_QUIET, &check);
            ps.notify_seen = check.notify_seen;
            t_pre = now_s() - t;
        }
        if (ps.held_checked) {
            /* checked and written out mid-way: from there on it was the two-pass run's feed */
        } else if (rc == 0 && !ps.notify_seen) {
            size_t n = buf_live(&ps.held);
            fputs(ps.note, stderr);
            if (n && fwrite(buf_head(&ps.held), 1, n, stdout) != n)
                rc = 1;
        } else {
            replay_free(rp); /* back to the two-pass run */
            rp = NULL;
            if (replay_new(&c->opt, &rp, err, sizeof err) != 0) {
                fprintf(stderr, "rmqcoord replay: %s\n", err);
                buf_free(&ps.held);
                return 2;
            }
            double t = now_s();
            struct pass_state pre = {.notify_seen = false};
            rc = pass(c, rp, PASS_NOTIFY, &pre);
            t_pre = now_s() - t;
            struct pass_state feed = {.notify_seen = false};
            if (rc == 0)
                rc = pass(c, rp, PASS_FEED, &feed);
        }
    } else {
        rc = pass(c, rp, PASS_FEED, &ps);
    }
    buf_free(&ps.held);
    if (rc == 0 && (replay_finish(rp) != 0 || write_out(rp) != 0))
        rc = 1;
    double t2 = now_s();
    uint64_t events = replay_get_stats(rp)->events;
    fflush(stdout);
    if (rc == 0)
        fprintf(stderr, "rmqcoord replay: %llu events in %.3f s (%.0f events/s; notify pre-pass %.3f s)\n",
                (unsigned long long)events, t2 - t0, (t2 - t0) > 0 ? (double)events / (t2 - t0) : 0.0, t_pre);
    replay_free(rp);
    return rc;
}

int cmd_replay_main(int argc, char **argv)
{
    struct cli c;
    int rc = parse_args(&c, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (c.target)
        return replay_live_run(c.path, c.target, c.speed, (size_t)c.max_conns, stdout) == 0 ? 0 : 1;
    return run_offline(&c);
}
