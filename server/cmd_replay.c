/* cmd_replay.c — `rmqcoord replay FILE [options]`: offline replay of a
 * heartbeat trace through the replay engine (replay.h), or with --target a
 * live replay against a running daemon (replay_live.h).
 *
 * Offline, the file is read twice when the notify source is "auto": a
 * cheap first pass collects the connections the trace shows receiving a
 * NOTIFY (only lines mentioning "notify" are decoded), the second feeds
 * every event. The report goes to stdout, byte-identical for the same input
 * and flags; the throughput measurement goes to stderr because it is not.
 */
#include "commands.h"
#include "err.h"
#include "mem.h"
#include "replay.h"
#include "replay_live.h"
#include "trace_fmt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READ_CHUNK ((size_t)1 << 20)

/* ---- line reader: big chunks, lines handed out in place ---- */

struct line_reader {
    FILE *f;
    char *buf;
    size_t cap, start, end;
    bool eof;
    size_t lineno;
};

static int reader_open(struct line_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->f = fopen(path, "rb");
    if (!r->f)
        return RMQ_EIO;
    r->cap = READ_CHUNK * 2;
    r->buf = rmq_malloc(r->cap);
    return r->buf ? RMQ_OK : RMQ_ENOMEM;
}

static void reader_close(struct line_reader *r)
{
    if (r->f)
        fclose(r->f);
    rmq_free(r->buf);
    memset(r, 0, sizeof *r);
}

/* Next line (without its newline) in *line/*len; *complete false for a last
 * line the file ends in without a newline. 1 = a line, 0 = end, <0 error. */
static int reader_next(struct line_reader *r, const char **line, size_t *len, bool *complete)
{
    for (;;) {
        char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
        if (nl || (r->eof && r->end > r->start)) {
            *line = r->buf + r->start;
            *len = nl ? (size_t)(nl - *line) : r->end - r->start;
            *complete = nl != NULL;
            r->start = nl ? (size_t)(nl - r->buf) + 1 : r->end;
            r->lineno++;
            return 1;
        }
        if (r->eof)
            return 0;
        if (r->end - r->start > TRACE_FMT_MAX_LINE)
            return RMQ_E2BIG;
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
        if (r->cap - r->end < READ_CHUNK) {
            char *p = rmq_realloc(r->buf, r->cap * 2);
            if (!p)
                return RMQ_ENOMEM;
            r->buf = p;
            r->cap *= 2;
        }
        size_t n = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
        r->end += n;
        if (n == 0)
            r->eof = true;
        if (n == 0 && ferror(r->f))
            return RMQ_EIO;
    }
}

/* ---- options ---- */

struct cli {
    struct replay_options opt;
    const char *path, *target;
    double speed;
    long max_conns;
    const char *ignore[64];
    const char *idcs[64];
    char explain[512];
};

static void usage(FILE *f)
{
    fputs("usage: rmqcoord replay FILE [options]\n"
          "  --strategy NAME            AVG (default), AVG_BY_CIRCLE, CONSISTENT_HASH, MACHINE_ROOM, MACHINE_ROOM_NEARBY\n"
          "  --virtual-nodes N          consistent-hash virtual nodes (10)\n"
          "  --idcs ROOM[,ROOM...]      MACHINE_ROOM consumer rooms\n"
          "  --client-rebalance-ms N    client rebalance timer (20000)\n"
          "  --notify-delay-ms N        NOTIFY to rebalance delay (0)\n"
          "  --channel-expiry-ms N      channel expiry (120000)\n"
          "  --expiry-scan-ms N         expiry scan period (1000, the daemon's default; the broker's is 10000)\n"
          "  --notify-on-expiry on|off  NOTIFY the group on expiry (on)\n"
          "  --notify-source auto|model|trace  what makes clients rebalance on NOTIFY (auto)\n"
          "  --ignore-notify CLIENT     this client id rebalances only on its timer (repeatable)\n"
          "  --from T --to T            report window: ms since the epoch, or +N ms after the trace start\n"
          "  --format text|json         output format (text)\n"
          "  --explain TOPIC:BROKER:QUEUE  ownership history of one queue\n"
          "  --target HOST:PORT [--speed X] [--max-conns N]  live replay against a running daemon\n",
          f);
}

static int parse_i64(const char *s, int64_t lo, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo)
        return RMQ_EINVAL;
    *out = v;
    return RMQ_OK;
}

static int parse_time(const char *s, bool *rel, int64_t *out)
{
    *rel = s[0] == '+';
    return parse_i64(s + *rel, 0, out);
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
    if (!b || b == c->explain || !b[1] || parse_i64(q + 1, 0, &qid) != 0 || qid > INT32_MAX)
        return RMQ_EINVAL;
    *b = '\0';
    c->opt.explain_topic = c->explain;
    c->opt.explain_broker = b + 1;
    c->opt.explain_qid = (int32_t)qid;
    return RMQ_OK;
}

#include "cmd_replay_opts.inc"
