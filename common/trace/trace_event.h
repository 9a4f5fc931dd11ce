/* trace_event.h — the types of the heartbeat-trace format (trace_fmt.h):
 * one decoded or to-be-encoded line, and the decoder's state. Types and
 * limits only. */
#ifndef RMQ_TRACE_EVENT_H
#define RMQ_TRACE_EVENT_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_FMT_VERSION 1
/* Longest line accepted: a 16 MiB frame body, escaped, with room to spare. */
#define TRACE_FMT_MAX_LINE ((size_t)48 << 20)
/* How errors name that limit. */
#define TRACE_FMT_LINE_LIMIT_TEXT "longer than 50331648 bytes (48 MiB, the longest line a trace may have)"
/* Deepest JSON nesting accepted inside a body. */
#define TRACE_FMT_MAX_DEPTH 64
/* Queues in one holdings event: the decoder refuses more, so the recorder
 * never writes more (what a client said beyond it is recorded as a reason). */
#define TRACE_FMT_MAX_QUEUES 65536

enum trace_kind {
    TRACE_HEADER = 0,
    TRACE_CONNECT,
    TRACE_REQUEST,
    TRACE_CLOSE,
    TRACE_NOTIFY,
    TRACE_ROUTE,
    TRACE_HOLDINGS,
};

struct trace_kv {
    const char *key; /* borrowed */
    const char *val; /* borrowed, never NULL */
};

/* One queue a client reported holding (holdings). */
struct trace_mq {
    const char *topic;       /* borrowed */
    const char *broker_name; /* borrowed */
    int32_t queue_id;
};

struct trace_broker {
    const char *broker_name; /* borrowed */
    int read_queue_nums, write_queue_nums, perm;
};

/* One decoded (or to-be-encoded) line. Every pointer is borrowed: from the
 * decoder (valid until its next decode) or from the caller (encode). Fields
 * a kind does not use are zero/NULL. */
struct trace_event {
    enum trace_kind kind;
    int64_t ts;          /* ms since the epoch */
    int version;         /* header: format version */
    uint64_t conn;       /* connect, request, close, notify */
    const char *peer;    /* "ip:port", may be NULL */
    const char *broker;  /* connect: broker view the connection belongs to, NULL = the coordinator */
    int32_t code;        /* request */
    int32_t language;    /* request: RMQ_LANG_* byte code (JAVA when absent) */
    int32_t cmd_version; /* request: client version (0 when absent) */
    int32_t flag;        /* request: header flag (0 when absent) */
    const struct trace_kv *ext;
    size_t next;
    const uint8_t *body; /* request: the body bytes, NULL when there is none */
    size_t body_len;
    const char *group;                  /* notify */
    const char *reason;                 /* close, may be NULL */
    const char *topic;                  /* route */
    const struct trace_broker *brokers; /* route; NULL with deleted */
    size_t nbrokers;
    bool deleted; /* route: "brokers":null, the topic was deleted */
    /* holdings: the client's answer to GET_CONSUMER_RUNNING_INFO for group;
     * queues NULL when it gave none (reason says why: "no answer", "code N",
     * "unreadable"). asked: when the daemon asked (ms since the epoch), which
     * names the sampling round: one ask per member of the group. */
    const char *client_id;
    int64_t asked;
    const struct trace_mq *queues;
    size_t nqueues;
    bool answered;
    /* Request lines the line cache keeps get a tag, unique in the process:
     * two events with the same nonzero tag were decoded from lines equal but
     * for "ts" (so, e.g., their bodies are equal without comparing them).
     * 0: no such promise. */
    uint64_t tag;
};

/* Request lines already decoded, kept per connection: clients re-send
 * byte-identical heartbeats, so most request lines equal an earlier line of
 * theirs but for the leading "ts". Such a line decodes to the earlier event
 * with the new ts, which costs one memcmp instead of the strict scan (see
 * trace_fmt.c for why that is exact). Bounded: TRACE_FMT_LINE_SLOTS lines
 * (sets of TRACE_FMT_LINE_WAYS picked by the bytes after ts, which name the
 * connection first), each at most TRACE_FMT_LINE_CACHE_MAX bytes,
 * TRACE_FMT_LINE_CACHE_BUDGET bytes in all. */
#define TRACE_FMT_LINE_SLOTS 8192
#define TRACE_FMT_LINE_WAYS 4
#define TRACE_FMT_LINE_CACHE_MAX ((size_t)16 << 10)
#define TRACE_FMT_LINE_CACHE_BUDGET ((size_t)32 << 20)
struct trace_line_ref;

struct trace_decoder {
    struct buf line;     /* private copy of the current line, unescaped in place */
    struct trace_kv *kv; /* owned */
    size_t nkv, kv_cap;
    struct trace_broker *brokers; /* owned */
    size_t nbrokers, brokers_cap;
    struct trace_mq *mqs; /* owned: a holdings line's queues */
    size_t nmqs, mqs_cap;
    uint8_t *body64; /* owned: decoded bodyBase64 */
    size_t body64_cap;
    struct trace_line_ref *lines; /* owned, TRACE_FMT_LINE_SLOTS of them, allocated at first use */
    unsigned line_evict;          /* round robin within a full set */
    size_t line_bytes;            /* allocated for cached lines */
    bool line_cache_off;          /* set after init: decode every line in full (tests, benchmarks) */
    uint64_t line_hits;           /* lines decoded from the cache */
    char error[256];              /* why the last decode failed: "line N: ..." */
};

#endif
