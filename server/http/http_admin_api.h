/* http_admin_api.h — private interface between http_admin.c and the route
 * files (api_*.c). Not for the rest of the daemon: main.c uses http_admin.h.
 *
 * Everything here runs on the HTTP thread, inside the MHD access handler,
 * except the pure helpers (route table, cursors, name checks), which any
 * thread may call. MHD types are only forward-declared so that microhttpd.h
 * stays confined to http_admin.c and api_*.c; the int results are MHD's enum
 * MHD_Result values (1 = MHD_YES, 0 = MHD_NO: close the connection), to be
 * returned from the access handler as they are.
 */
#ifndef RMQ_HTTP_ADMIN_API_H
#define RMQ_HTTP_ADMIN_API_H

#include "mailbox.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;
struct store_reader;
struct http_admin;

#define HTTP_ADMIN_NAME_MAX 255u /* longest decoded group / topic / client id, in bytes */
#define API_TOPIC_NAME_MAX 127u  /* RocketMQ Validators.TOPIC_MAX_LENGTH (PUT creates only these) */
#define API_LIST_LIMIT_DEFAULT 100
#define API_LIST_LIMIT_MAX 1000

/* Queues v (stolen; NULL = out of memory, answered 500) as a compact JSON
 * response with Content-Type application/json. */
int http_admin_reply_json(struct MHD_Connection *conn, unsigned status, json_t *v);

/* Queues {"error":code,"detail":<fmt ...>} with status. code is a short
 * message ("bad parameter"), detail says what was wrong and how to fix it. */
__attribute__((format(printf, 4, 5))) int http_admin_reply_error(struct MHD_Connection *conn, unsigned status,
                                                                 const char *code, const char *fmt, ...);

/* 405 with an Allow header; 401 with WWW-Authenticate: Bearer. */
int http_admin_reply_method_not_allowed(struct MHD_Connection *conn, const char *method, const char *allow);
int http_admin_reply_unauthorized(struct MHD_Connection *conn, const char *detail);

/* Queues len bytes of data with content_type. copy: MHD copies the bytes
 * (else they must outlive the response: static data only). */
int http_admin_reply_bytes(struct MHD_Connection *conn, unsigned status, const char *content_type,
                           const void *data, size_t len, bool copy);

/* ---- api_routes.c: the route table and URL parsing (pure) ---- */

enum api_route {
    API_ROUTE_NONE, /* 404 */
    API_ROUTE_DASHBOARD,
    API_ROUTE_UI_ASSET, /* /ui/{asset} */
    API_ROUTE_HEALTHZ,
    API_ROUTE_METRICS,
    API_ROUTE_OPENAPI,
    API_ROUTE_GROUPS,
    API_ROUTE_GROUP,            /* /api/groups/{group} */
    API_ROUTE_GROUP_ALLOCATION, /* /api/groups/{group}/allocation */
    API_ROUTE_GROUP_HISTORY,
    API_ROUTE_GROUP_AT,
    API_ROUTE_GROUP_DIAGNOSTICS,
    API_ROUTE_GROUP_CONSISTENCY,
    API_ROUTE_GROUP_CONVERGED,
    API_ROUTE_GROUP_CLIENT,              /* DELETE /api/groups/{group}/clients/{clientId} */
    API_ROUTE_GROUP_CLIENT_RUNNING_INFO, /* .../clients/{clientId}/running-info */
    API_ROUTE_CLIENTS,
    API_ROUTE_CLIENT, /* /api/clients/{clientId} */
    API_ROUTE_TOPICS,
    API_ROUTE_TOPIC, /* /api/topics/{topic} */
    API_ROUTE_EVENTS,
    API_ROUTE_EVENTS_STREAM,
    API_ROUTE_RESET,
    API_ROUTE_CLOCK,
    API_ROUTE_CLOCK_ADVANCE,
    API_ROUTE_CLUSTER,             /* /api/cluster (docs/cluster.md) */
    API_ROUTE_GROUP_OFFSETS,       /* /api/groups/{group}/offsets */
    API_ROUTE_GROUP_OFFSETS_RESET, /* POST /api/groups/{group}/offsets/reset */
    API_ROUTE_GROUP_OFFSETS_CLONE, /* POST /api/groups/{group}/offsets/clone */
    API_ROUTE_COUNT
};

/* Method bits; HEAD is served wherever GET is. */
enum api_method { API_GET = 1u, API_PUT = 2u, API_DELETE = 4u, API_POST = 8u };

/* One route: its OpenAPI path template ("{name}" segments are parameters)
 * and what the OpenAPI document says about it. Static data. */
struct api_route_def {
    enum api_route id;
    const char *path;
    unsigned methods; /* enum api_method bits */
    const char *allow;
    const char *summary[4]; /* per method, in GET, PUT, DELETE, POST order */
    /* Query parameters, "name:type:description" joined by '|' (type integer,
     * string or boolean); limit/cursor are added for paginated routes. */
    const char *query;
    const char *body; /* request body description, or NULL */
    const char *produces;
    bool paginated;
};

#define API_MAX_PARAMS 2
struct api_match {
    const struct api_route_def *def;
    const char *param[API_MAX_PARAMS]; /* raw (still encoded) segments, borrowed from the url */
    size_t param_len[API_MAX_PARAMS];
    char param_name[API_MAX_PARAMS][16];
    int nparams;
};

/* Maps a still-encoded path to a route and its raw parameter segments. */
enum api_route api_routes_match(const char *url, struct api_match *m);
/* The whole table (n entries, in OpenAPI order) and one entry. */
const struct api_route_def *api_routes_table(size_t *n);
const struct api_route_def *api_routes_def(enum api_route r);
/* enum api_method bit of an HTTP method (HEAD counts as GET); 0 if unknown. */
unsigned api_routes_method_bit(const char *method);
bool api_routes_method_allowed(enum api_route r, const char *method);
/* PUT, DELETE and POST change state (and need the admin token when set). */
bool api_routes_mutating(const char *method);
/* The loop op serving route + method, or 0 when the HTTP thread answers it. */
int api_routes_op(enum api_route r, const char *method);
/* Percent-decodes s[0..n) into a new NUL-terminated string (*out, owned by
 * the caller). plus_is_space: the query-string convention. Returns 0,
 * RMQ_EINVAL for a malformed escape or %00, RMQ_ENOMEM. */
int api_routes_pct_decode(const char *s, size_t n, bool plus_is_space, char **out);
/* Parses a non-negative decimal integer (digits only) <= max into *out.
 * Returns 0, or RMQ_EINVAL for anything else (empty, sign, overflow). */
int api_routes_parse_uint(const char *s, int64_t max, int64_t *out);

/* ---- http_admin.c <-> api_dispatch.c ---- */

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
void api_post_clear(struct api_post *post);

/* What the route handlers may use of the server (borrowed). */
struct api_env {
    struct http_admin *h;
    const char *store_path;       /* NULL: no store */
    struct store_reader **reader; /* the HTTP thread's reader, opened on first use */
    const char *token;            /* NULL: mutating routes are open */
    size_t token_len;
};

/* http_admin.c: suspends conn and posts op to the loop; arg, query, body and
 * post's contents are stolen. req is the access handler's per-request state. */
int http_admin_post(struct http_admin *h, struct MHD_Connection *conn, void *req, int op, char *arg,
                    json_t *query, json_t *body, struct api_post *post);
struct buf;
/* http_admin.c: appends the HTTP request counters (route, method, status). */
int http_admin_metrics_append(struct http_admin *h, struct buf *b);

/* api_dispatch.c: answers one complete request (body may be NULL); sets
 * *route_out to the matched route (API_ROUTE_NONE for a 404). */
int api_dispatch(const struct api_env *env, struct MHD_Connection *conn, void *req, const char *url,
                 const char *method, const char *body, size_t body_len, enum api_route *route_out);
/* api_dispatch.c: turns the loop's answer (reply stolen) into the response. */
int api_finish(const struct api_env *env, struct MHD_Connection *conn, int status, json_t *reply,
               struct api_post *post);

/* ---- api_util.c: cursors, pagination, names, tokens (pure) ---- */

/* New opaque cursor (rmq_free) naming the position after value in a list of
 * kind ('n' name-sorted lists, 'e' events). NULL on OOM. */
char *api_cursor_encode(char kind, const char *value);
/* Decodes a cursor of kind into a new *value (rmq_free). 0, RMQ_EINVAL for
 * a cursor that is not ours or of another list, RMQ_ENOMEM. */
int api_cursor_decode(const char *cursor, char kind, char **value);
/* Reads limit (default API_LIST_LIMIT_DEFAULT, 1..API_LIST_LIMIT_MAX) and
 * cursor (of kind, decoded into *after, NULL when absent) from query.
 * Returns 0, RMQ_EINVAL with why set to a static message, or RMQ_ENOMEM. */
int api_page_params(const json_t *query, char kind, int64_t *limit, char **after, const char **why);
/* Keeps, in reply[key] (an array of objects sorted by their string field),
 * the first limit entries whose field sorts after `after` (NULL: from the
 * start), and sets reply["next"] to the cursor past the last kept entry when
 * more follow, else null. 0, RMQ_EINVAL (no such array), RMQ_ENOMEM. */
int api_page_slice(json_t *reply, const char *key, const char *field, const char *after, int64_t limit);
/* For a page the loop built: replaces reply["_nextHex"] (hex of the last
 * name's raw bytes, or null on the last page) with reply["next"], the
 * cursor past it. 0, RMQ_EINVAL (malformed), RMQ_ENOMEM. */
int api_page_next_from_hex(json_t *reply);
/* Whether name is a topic RocketMQ accepts: ^[%|a-zA-Z0-9_-]+$, at most
 * API_TOPIC_NAME_MAX bytes (%RETRY%G and %DLQ%G pass). */
bool api_name_topic_valid(const char *name);
/* A name looked up (not created): 1..255 bytes, no control characters. */
bool api_name_lookup_valid(const char *name);
/* Constant-time comparison of a presented token with the expected one: the
 * time taken depends only on the expected token's length. */
bool api_token_equal(const char *given, size_t given_len, const char *want, size_t want_len);
/* The token of an "Authorization: Bearer TOKEN" header value (borrowed
 * pointer into header, length in *len), or NULL if it is not that form. */
const char *api_bearer_token(const char *header, size_t *len);

/* Whether a Host header value names this server: localhost (or a name
 * under .localhost), a loopback address (127.0.0.0/8, ::1), or cfg_host
 * (the --http host; a wildcard 0.0.0.0 / :: accepts any Host). The port is
 * not checked (a tunnel may forward another one). Stops DNS rebinding: a
 * page of evil.example whose name now resolves to 127.0.0.1 still sends
 * Host: evil.example. */
bool api_host_allowed(const char *host, const char *cfg_host);
/* Whether a Content-Type value is application/json (parameters such as
 * charset allowed, case-insensitive). A browser sends it cross-site only
 * after a CORS preflight, which this server never grants. */
bool api_content_type_json(const char *ct);

/* ---- api_events.c: history from the read-only store ---- */

/* Opens *reader from store_path on first use. 0, or answers 503 itself and
 * returns -1 with *r set. */
int api_store_reader(struct MHD_Connection *conn, const char *store_path, struct store_reader **reader,
                     int *r);

/* GET /api/events?group=G&since=ID&cursor=C&limit=N. query is the decoded
 * query object (borrowed). *reader is the HTTP thread's store_read
 * connection, opened from store_path on first use (NULL until then, and after
 * a failed open so the next request retries); the caller closes it. */
int api_events_get(struct MHD_Connection *conn, const json_t *query, const char *store_path,
                   struct store_reader **reader);
/* GET /api/groups/{group}/history?from=&to=&limit=&cursor=. */
int api_group_history(struct MHD_Connection *conn, const char *group, const json_t *query,
                      const char *store_path, struct store_reader **reader);
/* GET /api/groups/{group}/at?t=: the membership part. Returns 0 with *out a
 * new {"group","t","members","eventId","eventTs"} object, or -1 after
 * answering an error (*r set). */
int api_group_at(struct MHD_Connection *conn, const char *group, const json_t *query, const char *store_path,
                 struct store_reader **reader, json_t **out, int *r);
/* Adds what the store knows to a loop reply (reply borrowed, changed in
 * place): firstSeenMs for clients, subscription churn for diagnostics.
 * Errors are ignored: the live answer stands on its own. */
void api_augment_client(struct store_reader *reader, json_t *client);
void api_augment_diagnostics(struct store_reader *reader, json_t *diag, int64_t now_ms);

/* ---- api_stream.c: GET /api/events/stream (Server-Sent Events) ---- */

struct api_stream;
/* Starts a stream answer on conn (query borrowed). Returns the MHD result. */
int api_stream_start(struct http_admin *h, struct MHD_Connection *conn, const json_t *query,
                     const char *last_event_id, const char *store_path, struct store_reader **reader);
/* http_admin.c side of the stream machinery (pthread lives there). */
/* Reserves a stream slot; false when API_STREAM_MAX streams are open. */
bool http_admin_stream_acquire(struct http_admin *h);
void http_admin_stream_release(struct http_admin *h);
/* HTTP thread, inside the content reader: suspends conn until the next
 * poll tick (~100 ms) resumes it. */
void http_admin_stream_park(struct http_admin *h, struct MHD_Connection *conn, struct api_stream *st);
bool http_admin_stopping(struct http_admin *h);
#define API_STREAM_MAX 32
#define API_STREAM_POLL_MS 100

/* ---- api_openapi.c ---- */

/* New OpenAPI 3.0 document describing every route of the table. */
json_t *api_openapi_document(void);

/* ---- api_static.c: the dashboard ---- */

/* Answers GET / (asset NULL) or GET /ui/{asset}. */
int api_static_get(struct MHD_Connection *conn, const char *asset);

#endif
