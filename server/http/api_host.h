/* api_host.h — the types the router shares with the server that
 * runs it and with the event stream: how a loop reply becomes the response,
 * what the route handlers may use of the server. Types only. */
#ifndef RMQ_API_HOST_H
#define RMQ_API_HOST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;
struct store_reader;

/* How the HTTP thread turns a loop reply into the response. */
enum api_finish {
    API_FINISH_PLAIN,       /* status and reply as they are */
    API_FINISH_HEALTHZ,     /* merged into {"status":"ok"}, always 200 */
    API_FINISH_PAGE,        /* slice reply[page_key] by page_field (limit, after) */
    API_FINISH_LOOP_PAGE,   /* the loop sliced it: reply["_nextHex"] (last raw name, hex) -> "next" */
    API_FINISH_METRICS,     /* reply {"text"} + HTTP counters, served as text/plain */
    API_FINISH_CLIENT,      /* add the store's clients row; not live but stored = 200 */
    API_FINISH_CLIENTS,     /* page + firstSeenMs from the store */
    API_FINISH_DIAGNOSTICS, /* add the store's subscription churn */
    API_FINISH_AT,          /* reply is the allocation: nested into extra (the membership) */
    API_FINISH_CLUSTER,     /* ?group=G on a name server: each broker's members fetched (api_cluster.c) */
};

struct api_post {
    enum api_finish finish;
    const char *page_key, *page_field; /* static strings */
    char *after;                       /* owned: page cursor value, NULL = first page */
    int64_t limit;
    json_t *extra;      /* owned */
    unsigned timeout_s; /* MHD connection timeout once answered (0 = default) */
};
/* What the route files need of the server that runs them: http_admin.c
 * fills one table of these (it owns the lock, the suspended requests and
 * the parked streams), so the route files call it without depending on it.
 * HTTP thread, inside the MHD access handler or an SSE content reader. */
struct http_admin;
struct api_stream;
struct buf;
struct api_host {
    /* Suspends conn and posts op to the loop; arg, query, body and post's
     * contents are stolen. req is the access handler's per-request state. */
    int (*post)(struct http_admin *h, struct MHD_Connection *conn, void *req, int op, char *arg,
                json_t *query, json_t *body, struct api_post *post);
    /* Appends the HTTP request counters (route, method, status). */
    int (*metrics_append)(struct http_admin *h, struct buf *b);
    /* Reserves a stream slot; false when API_STREAM_MAX streams are open. */
    bool (*stream_acquire)(struct http_admin *h);
    void (*stream_release)(struct http_admin *h);
    /* Inside the content reader: suspends conn until the next poll tick
     * (~API_STREAM_POLL_MS) resumes it. */
    void (*stream_park)(struct http_admin *h, struct MHD_Connection *conn, struct api_stream *st);
    bool (*stopping)(struct http_admin *h);
};
#define API_STREAM_MAX 32
#define API_STREAM_POLL_MS 100

/* What the route handlers may use of the server (borrowed). */
struct api_env {
    const struct api_host *host; /* static table */
    struct http_admin *h;
    const char *store_path;       /* NULL: no store */
    struct store_reader **reader; /* the HTTP thread's reader, opened on first use */
    const char *token;            /* NULL: mutating routes are open */
    size_t token_len;
};

#endif
