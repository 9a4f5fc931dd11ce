/* cmd_inspect.c — `rmqcoord groups`, `rmqcoord describe GROUP` and
 * `rmqcoord events GROUP`: a terminal view of a running daemon, read from its
 * HTTP admin API (--http HOST:PORT, else $RMQCOORD_HTTP, else
 * 127.0.0.1:8080), in the style of `kafka-consumer-groups --describe`.
 * Read-only; one short GET per view, each bounded as a whole (connect, send
 * and the full reply within INSPECT_TIMEOUT_MS). Everything printed that
 * came from the server is escaped first (term_escape, print_json): the
 * daemon at --http need not be a friendly one. */
#include "cmd_inspect.h"

#include "clocks.h"
#include "http_fetch.h"
#include "mem.h"
#include "parse_int.h"
#include "utf8.h"

#include <assert.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One GET in all: connect, send and the whole reply. */
#define INSPECT_TIMEOUT_MS 5000
/* --follow polls this often (events are stored; a poll is one indexed query). */
#define INSPECT_FOLLOW_MS 1000

struct opts {
    const char *cmd, *http, *group, *topic;
    bool json, follow;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rmqcoord groups [--http HOST:PORT] [--json]\n"
            "       rmqcoord describe GROUP [--topic T] [--http HOST:PORT] [--json]\n"
            "       rmqcoord events GROUP [--follow] [--http HOST:PORT] [--json]\n"
            "\n"
            "A terminal view of a running daemon, read from its HTTP admin API.\n"
            "  groups     every consumer group: members, model, live or not\n"
            "  describe   one group: members (address, language, version, heartbeat age) and,\n"
            "             per queue of each subscribed topic, the expected owner (the strategy\n"
            "             the clients report), the holder the client reports, the committed\n"
            "             offset; OVERLAP / GAP marked\n"
            "  events     the group's membership history, oldest first; --follow keeps\n"
            "             printing new events (Ctrl-C ends it)\n"
            "\n"
            "  --http HOST:PORT   the daemon's admin API (default: $RMQCOORD_HTTP, else 127.0.0.1:8080)\n"
            "  --topic T          describe only topic T (default: every subscribed topic but %%RETRY%%)\n"
            "  --json             the combined JSON instead of a table\n"
            "Each request to the daemon is given 5 s in all (connect, send and the whole reply).\n"
            "Text from the daemon is printed with controls, bidirectional marks and bytes that\n"
            "are not UTF-8 escaped (\\xNN, \\u{NNNN}; \\uNNNN in --json).\n"
            "Exit status: 0, 1 when the daemon cannot be reached, answers an error, or its event\n"
            "pages do not advance, 2 for bad options.\n");
}

/* s for a terminal, into out (cap bytes, NUL-terminated, cut at a whole
 * escape). A server's string could carry ESC sequences, C1 controls (U+009B
 * is a CSI) or bidi overrides that rewrite the screen or make one name pass
 * for another: C0 controls, DEL and bytes that are not UTF-8 become \xNN,
 * C1 controls and bidi marks \u{NNNN}, and '\' itself "\\" so that the
 * printed form is unambiguous. */
static void term_escape(const char *s, char *out, size_t cap)
{
    size_t j = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        char piece[16];
        size_t k = utf8_seq_len(p);
        int n;
        if (k == 1 && *p == '\\') {
            n = snprintf(piece, sizeof piece, "\\\\");
        } else if (k <= 1 && (k == 0 || *p < 0x20 || *p == 0x7F)) {
            n = snprintf(piece, sizeof piece, "\\x%02X", *p);
            k = 1;
        } else if (utf8_has_controls((const char *)p, k)) {
            n = snprintf(piece, sizeof piece, "\\u{%04X}", utf8_decode(p, k));
        } else {
            memcpy(piece, p, k);
            n = (int)k;
        }
        if (j + (size_t)n >= cap)
            break;
        memcpy(out + j, piece, (size_t)n);
        j += (size_t)n;
        p += k;
    }
    out[j] = 0;
}

/* term_escape(s) in one of a few static buffers, so that one printf may
 * take several (single-threaded CLI; no caller uses more than the ring). */
static const char *esc(const char *s)
{
    static char ring[8][1024];
    static unsigned next;
    char *out = ring[next++ % 8];
    term_escape(s, out, sizeof ring[0]);
    return out;
}

/* String member k of o as sent, for matching and paths; "-" when absent. */
static const char *raw(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "-";
}

/* String member k of o, escaped for the terminal; "-" when absent. */
static const char *str(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? esc(v) : "-";
}

/* Prints j as JSON (flags as json_dumps) with the code points that
 * term_escape guards against written as \uNNNN. jansson already escapes C0
 * controls inside strings (outside them it writes only the indent's
 * whitespace); what is left can only sit inside a JSON string, so the output
 * stays valid JSON with the same meaning. */
static void print_json(const json_t *j, size_t flags)
{
    char *text = json_dumps(j, flags);
    if (!text) {
        fputs("null", stdout);
        return;
    }
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        size_t k = utf8_seq_len(p);
        if (k == 0) {
            printf("\\u%04x", *p); /* jansson emits valid UTF-8; kept valid JSON regardless */
            k = 1;
        } else if ((k == 1 && *p == 0x7F) || (k > 1 && utf8_has_controls((const char *)p, k))) {
            printf("\\u%04x", utf8_decode(p, k));
        } else {
            fwrite(p, 1, k, stdout);
        }
        p += k;
    }
    free(text);
}

/* GET path from the daemon; new reference or NULL (reason printed). */
static json_t *get(const struct opts *o, const char *path, bool quiet_404)
{
    int status = 0;
    const char *err = NULL;
    struct http_fetch_limits lim = {rmq_mono_ms() + INSPECT_TIMEOUT_MS, -1, false};
    json_t *j = http_fetch_json(o->http, path, &lim, &status, &err);
    if (!j) {
        fprintf(stderr, "rmqcoord %s: %s%s: %s\n", o->cmd, o->http, path, err);
        return NULL;
    }
    if (status != 200) {
        if (!(quiet_404 && status == 404))
            fprintf(stderr, "rmqcoord %s: %s answered %d: %s\n", o->cmd, path, status, str(j, "detail"));
        json_decref(j);
        return NULL;
    }
    return j;
}

static int cmd_groups(const struct opts *o)
{
    json_t *j = get(o, "/api/groups?limit=1000", false);
    if (!j)
        return 1;
    if (o->json) {
        print_json(j, JSON_INDENT(2));
        putchar('\n');
    } else {
        printf("%-40s %8s %-12s %s\n", "GROUP", "MEMBERS", "MODEL", "LIVE");
        size_t i;
        const json_t *g;
        json_array_foreach(json_object_get(j, "groups"), i, g)
            printf("%-40s %8lld %-12s %s\n", str(g, "group"),
                   (long long)json_integer_value(json_object_get(g, "members")), str(g, "messageModel"),
                   json_is_true(json_object_get(g, "live")) ? "yes" : "no");
    }
    json_decref(j);
    return 0;
}

/* "broker:queueId" of a queue object, for matching the three views. */
static void queue_key(const json_t *q, char *out, size_t cap)
{
    snprintf(out, cap, "%s:%lld", raw(q, "brokerName"),
             (long long)json_integer_value(json_object_get(q, "queueId")));
}

/* The clients of a consistency reply that report holding queue key (joined
 * with ','), into out. Returns how many. */
static int holders(const json_t *cons, const char *topic, const char *key, char *out, size_t cap)
{
    int n = 0;
    out[0] = 0;
    size_t i, k;
    const json_t *c, *q;
    json_array_foreach(json_object_get(cons, "clients"), i, c)
        json_array_foreach(json_object_get(c, "queues"), k, q)
    {
        char qk[300];
        queue_key(q, qk, sizeof qk);
        if (strcmp(qk, key) || strcmp(raw(q, "topic"), topic))
            continue;
        size_t len = strlen(out);
        assert(len < cap); /* snprintf keeps the NUL inside cap */
        snprintf(out + len, cap - len, "%s%s", n ? "," : "", str(c, "clientId"));
        n++;
    }
    return n;
}

static void describe_topic(const struct opts *o, const char *topic, json_t *all)
{
    char enc_g[600], enc_t[600], path[1400];
    http_fetch_pct_encode(o->group, enc_g, sizeof enc_g);
    http_fetch_pct_encode(topic, enc_t, sizeof enc_t);
    snprintf(path, sizeof path, "/api/groups/%s/consistency?topic=%s&timeout_ms=3000", enc_g, enc_t);
    json_t *cons = get(o, path, false);
    snprintf(path, sizeof path, "/api/groups/%s/offsets?topic=%s", enc_g, enc_t);
    json_t *offs = get(o, path, true);
    if (o->json) {
        json_t *t = json_object();
        json_object_set(t, "consistency", cons ? cons : json_null());
        json_object_set(t, "offsets", offs ? offs : json_null());
        json_object_set_new(all, topic, t);
    } else if (cons) {
        printf("\nTOPIC %s (strategy %s, consistent: %s)\n", esc(topic), str(cons, "strategy"),
               json_is_true(json_object_get(cons, "consistent"))    ? "yes"
               : json_is_false(json_object_get(cons, "consistent")) ? "NO"
                                                                    : "unknown");
        printf("%-24s %6s  %-36s %-36s %10s\n", "BROKER", "QUEUE", "EXPECTED OWNER", "REPORTED HOLDER",
               "OFFSET");
        /* Rows: every queue some client is expected to hold. */
        size_t i, k;
        const json_t *c, *q;
        json_array_foreach(json_object_get(cons, "clients"), i, c)
            json_array_foreach(json_object_get(c, "expected"), k, q)
        {
            char key[300], held[1024], off[32] = "-";
            queue_key(q, key, sizeof key);
            int n = holders(cons, topic, key, held, sizeof held);
            size_t m;
            const json_t *row;
            /* Offsets are kept per (group, topic, queueId), as the broker keys them. */
            json_array_foreach(json_object_get(offs, "queues"), m, row)
            {
                if (json_integer_value(json_object_get(row, "queueId")) ==
                        json_integer_value(json_object_get(q, "queueId")) &&
                    json_is_integer(json_object_get(row, "committedOffset")))
                    snprintf(off, sizeof off, "%lld",
                             (long long)json_integer_value(json_object_get(row, "committedOffset")));
            }
            printf("%-24s %6lld  %-36s %-36s %10s%s\n", str(q, "brokerName"),
                   (long long)json_integer_value(json_object_get(q, "queueId")), str(c, "clientId"),
                   n ? held : "-", off,
                   n > 1    ? "  OVERLAP"
                   : n == 0 ? "  GAP"
                            : "");
        }
    }
    json_decref(cons);
    json_decref(offs);
}

static int cmd_describe(const struct opts *o)
{
    char enc[600], path[700];
    http_fetch_pct_encode(o->group, enc, sizeof enc);
    snprintf(path, sizeof path, "/api/groups/%s", enc);
    json_t *g = get(o, path, false);
    if (!g)
        return 1;
    json_t *all = json_object();
    json_object_set(all, "group", g);
    json_t *topics = json_object();
    if (!o->json) {
        printf("GROUP %s  (%s, %s)\n", esc(o->group), str(g, "messageModel"), str(g, "consumeType"));
        printf("%-40s %-22s %-8s %8s %14s\n", "MEMBER", "ADDRESS", "LANGUAGE", "VERSION", "HEARTBEAT AGO");
    }
    int64_t now = rmq_wall_ms();
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(g, "consumers"), i, m) if (!o->json)
        printf("%-40s %-22s %-8s %8lld %12.1f s\n", str(m, "clientId"), str(m, "remoteAddr"),
               str(m, "language"), (long long)json_integer_value(json_object_get(m, "version")),
               (double)(now - json_integer_value(json_object_get(m, "lastHeartbeatMs"))) / 1000.0);
    const json_t *sub;
    json_array_foreach(json_object_get(g, "subscriptions"), i, sub)
    {
        const char *t = raw(sub, "topic");
        if ((o->topic && strcmp(t, o->topic)) || (!o->topic && !strncmp(t, "%RETRY%", 7)))
            continue;
        describe_topic(o, t, topics);
    }
    if (o->json) {
        json_object_set_new(all, "topics", topics);
        print_json(all, JSON_INDENT(2));
        putchar('\n');
    } else {
        json_decref(topics);
    }
    json_decref(all);
    json_decref(g);
    return 0;
}

static int cmd_events(const struct opts *o)
{
    char enc[600], path[900];
    http_fetch_pct_encode(o->group, enc, sizeof enc);
    int64_t last = 0;
    for (;;) {
        snprintf(path, sizeof path, "/api/events?group=%s&since=%lld&limit=500", enc, (long long)last);
        json_t *j = get(o, path, false);
        if (!j)
            return 1;
        size_t i;
        const json_t *e;
        json_array_foreach(json_object_get(j, "events"), i, e)
        {
            /* Ids only grow: a page that repeats or goes back would make
             * this loop (or --follow) print the same events for ever. */
            int64_t id = json_integer_value(json_object_get(e, "id"));
            if (id <= last) {
                fflush(stdout);
                fprintf(stderr,
                        "rmqcoord %s: the daemon sent event %lld after event %lld: its pages do not "
                        "advance\n",
                        o->cmd, (long long)id, (long long)last);
                json_decref(j);
                return 1;
            }
            last = id;
            if (o->json) {
                print_json(e, JSON_COMPACT);
                putchar('\n');
                continue;
            }
            printf("%8lld %-14lld %-12s %-40s -> ", (long long)last,
                   (long long)json_integer_value(json_object_get(e, "ts")), str(e, "kind"),
                   str(e, "clientId"));
            print_json(json_object_get(e, "after"), JSON_COMPACT);
            putchar('\n');
        }
        fflush(stdout);
        bool more = json_array_size(json_object_get(j, "events")) == 500;
        json_decref(j);
        if (!more && !o->follow)
            return 0;
        if (!more)
            usleep(INSPECT_FOLLOW_MS * 1000);
    }
}

int cmd_inspect_main(int argc, char **argv)
{
    struct opts o = {.cmd = argv[0], .http = getenv("RMQCOORD_HTTP")};
    if (!o.http || !*o.http)
        o.http = "127.0.0.1:8080";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strcmp(a, "--follow") && !strcmp(o.cmd, "events")) {
            o.follow = true;
        } else if ((!strcmp(a, "--http") || !strcmp(a, "--topic")) && i + 1 < argc) {
            *(a[2] == 'h' ? &o.http : &o.topic) = argv[++i];
        } else if (a[0] != '-' && !o.group && strcmp(o.cmd, "groups")) {
            o.group = a;
        } else {
            fprintf(stderr, "rmqcoord %s: unexpected argument '%s' (see rmqcoord %s --help)\n", o.cmd, a,
                    o.cmd);
            return 2;
        }
    }
    if (strcmp(o.cmd, "groups") && !o.group) {
        fprintf(stderr, "rmqcoord %s: which group? (see rmqcoord %s --help)\n", o.cmd, o.cmd);
        return 2;
    }
    rmq_mem_install_jansson();
    if (!strcmp(o.cmd, "groups"))
        return cmd_groups(&o);
    if (!strcmp(o.cmd, "describe"))
        return cmd_describe(&o);
    return cmd_events(&o);
}
