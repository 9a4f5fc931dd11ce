/* cmd_allocate.c — `rmqcoord allocate`: the allocation engine as a filter.
 *
 * Reads JSON Lines cases on stdin (the tests/data/allocation.jsonl format),
 * writes one JSON line per case on stdout: the allocation, or an error object
 * for a line that cannot be computed, then carries on. Lines have no fixed
 * length limit but are capped (64 MiB by default) so one bad line cannot
 * exhaust memory; an over-long line is skipped to its newline and answered
 * with an error. Single-threaded; the whole work is in allocate_json.c.
 */
#include "cmd_allocate.h"

#include "allocate_json.h"
#include "err.h"
#include "mem.h"
#include "parse_int.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD_ALLOCATE_DEFAULT_MAX_LINE ((size_t)64 << 20)

static void usage(FILE *out)
{
    fputs("usage: rmqcoord allocate [--max-line-bytes N] < cases.jsonl > allocations.jsonl\n"
          "\n"
          "Computes RocketMQ client-side queue allocations exactly as the Java client\n"
          "(4.9.x/5.x) does: both lists are sorted (queues by topic, brokerName, queueId;\n"
          "strings in Java UTF-16 order), then each consumer's strategy result is taken.\n"
          "\n"
          "Input: one JSON object per line (blank lines are skipped):\n"
          "  {\"strategy\": NAME,\n"
          "   \"queues\":    [{\"topic\": T, \"brokerName\": B, \"queueId\": N}, ...],\n"
          "   \"consumers\": [\"clientId\", ...],\n"
          "   \"options\":   {...}}          optional; other fields are ignored\n"
          "\n"
          "Strategies and their options:\n"
          "  AVG                  contiguous blocks; the first n%c consumers get one more\n"
          "  AVG_BY_CIRCLE        round robin over the sorted queues\n"
          "  CONFIG               \"config\": [queue, ...]  every consumer returns this list\n"
          "  MACHINE_ROOM         \"consumerIdcs\": [room, ...]  only brokers named room@name\n"
          "                       with room in the set, split averagely\n"
          "  MACHINE_ROOM_NEARBY  \"inner\": \"AVG\"|\"AVG_BY_CIRCLE\" (default AVG),\n"
          "                       \"brokerRooms\": {brokerName: room},\n"
          "                       \"consumerRooms\": {clientId: room}; without both maps the\n"
          "                       room is the text after the last '-' of each name;\n"
          "                       a missing room is an error\n"
          "  CONSISTENT_HASH      \"virtualNodes\": N >= 0 (default 10; 0 = nobody gets any)\n"
          "\n"
          "Output: one line per case, in input order:\n"
          "  {\"allocation\": {\"clientId\": [queue, ...], ...}}   consumers sorted, each list\n"
          "                                                   in the strategy's order\n"
          "  {\"error\": \"message\"}    bad JSON, unknown strategy, missing field, wrong type,\n"
          "                          or what the Java strategy would throw for\n"
          "\n"
          "Options:\n"
          "  --max-line-bytes N   longest accepted line, bytes (default 67108864)\n"
          "  -h, --help           this text\n"
          "\n"
          "Exit status: 0 when all input was read, 1 on a read or write error,\n"
          "2 on bad usage.\n",
          out);
}

/* Writes one compact JSON line, or a fixed error line when the value cannot
 * be built or dumped (out of memory, text jansson refuses). */
static void emit(json_t *v)
{
    if (!v || json_dumpf(v, stdout, JSON_COMPACT) < 0)
        fputs("{\"error\":\"could not encode the reply\"}", stdout);
    fputc('\n', stdout);
    fflush(stdout);
    json_decref(v);
}

static void emit_error(const char *msg)
{
    emit(allocate_json_error_new(msg));
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* Handles one complete line (without its newline). */
static void process_line(char *line, size_t n, size_t lineno)
{
    if (n && line[n - 1] == '\r')
        n--;
    if (is_blank(line, n))
        return;
    json_error_t jerr;
    json_t *c = json_loadb(line, n, 0, &jerr);
    if (!c) {
        char msg[300];
        snprintf(msg, sizeof msg, "line %zu: invalid JSON at column %d: %s", lineno, jerr.column, jerr.text);
        json_t *e = allocate_json_error_new(msg);
        emit(e ? e : allocate_json_error_new("invalid JSON"));
        return;
    }
    json_t *reply = NULL;
    if (allocate_json_run(c, &reply))
        emit(NULL);
    else
        emit(reply);
    json_decref(c);
}

/* Growable line buffer with a hard cap. */
struct line_buf {
    char *p;
    size_t len, cap, max;
    int too_long; /* the current line went over max: skip to its newline */
};

/* Appends n bytes; on a cap overflow or allocation failure marks the line
 * as dropped (the error is reported when its newline arrives). */
static void line_append(struct line_buf *b, const char *s, size_t n, int *nomem)
{
    if (!n || b->too_long || *nomem)
        return; /* n == 0 may come with a NULL buffer: keep memcpy away */
    if (n > b->max - b->len) {
        b->too_long = 1;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap = cap > b->max / 2 ? b->max : cap * 2;
        char *p = rmq_realloc(b->p, cap);
        if (!p) {
            *nomem = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    assert(b->len <= b->cap && b->len <= b->max); /* the cap bounds what a line may hold */
}

/* Finishes the current line: computes it or reports why it was dropped. */
static void line_end(struct line_buf *b, size_t lineno, int *nomem)
{
    char msg[128];
    if (b->too_long) {
        snprintf(msg, sizeof msg, "line %zu: longer than %zu bytes", lineno, b->max);
        emit_error(msg);
    } else if (*nomem) {
        snprintf(msg, sizeof msg, "line %zu: out of memory", lineno);
        emit_error(msg);
    } else {
        process_line(b->p, b->len, lineno);
    }
    b->len = 0;
    b->too_long = 0;
    *nomem = 0;
}

static int run(size_t max_line)
{
    static char chunk[65536];
    struct line_buf b = {NULL, 0, 0, max_line, 0};
    size_t lineno = 0;
    int nomem = 0, rc = 0;
    for (;;) {
        size_t n = fread(chunk, 1, sizeof chunk, stdin);
        if (!n)
            break;
        for (size_t off = 0; off < n;) {
            char *nl = memchr(chunk + off, '\n', n - off);
            size_t take = nl ? (size_t)(nl - (chunk + off)) : n - off;
            line_append(&b, chunk + off, take, &nomem);
            off += take;
            assert(off <= n);
            if (nl) {
                off++;
                line_end(&b, ++lineno, &nomem);
            }
        }
    }
    if (ferror(stdin)) {
        fprintf(stderr, "rmqcoord allocate: read error: %s\n", strerror(errno));
        rc = 1;
    } else if (b.len || b.too_long || nomem) {
        line_end(&b, ++lineno, &nomem); /* last line without newline */
    }
    rmq_free(b.p);
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "rmqcoord allocate: write error\n");
        rc = 1;
    }
    return rc;
}

int cmd_allocate_main(int argc, char **argv)
{
    size_t max_line = CMD_ALLOCATE_DEFAULT_MAX_LINE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        /* Both spellings, as getopt_long takes them elsewhere: --max-line-bytes=N and --max-line-bytes N. */
        const char *val = !strncmp(a, "--max-line-bytes=", 17)             ? a + 17
                          : !strcmp(a, "--max-line-bytes") && i + 1 < argc ? argv[++i]
                                                                           : NULL;
        if (val) {
            int64_t v;
            if (rmq_parse_i64_range(val, 1, (int64_t)(SIZE_MAX / 2), &v) != 0) {
                fprintf(stderr,
                        "rmqcoord allocate: --max-line-bytes takes a whole number of bytes >= 1, not '%s'\n",
                        val);
                return 2;
            }
            max_line = (size_t)v;
            continue;
        }
        if (!strcmp(a, "--max-line-bytes")) {
            fputs("rmqcoord allocate: --max-line-bytes needs a value\n", stderr);
            return 2;
        }
        fprintf(stderr, "rmqcoord allocate: unknown argument '%s' (see --help)\n", a);
        return 2;
    }
    rmq_mem_install_jansson();
    return run(max_line);
}
