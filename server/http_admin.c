/* http_admin.c — the HTTP admin API (see http_admin.h).
 *
 * Design: one libmicrohttpd daemon with its own internal polling thread (the
 * "HTTP thread"; epoll when available, else poll). Every access-handler call,
 * router decision and store_read query happens on that thread. Requests for
 * live state or mutations become a mailbox message for the loop thread: the
 * handler suspends the MHD connection, posts, and returns; the loop runs the
 * op and calls pending_done(), which resumes the connection; MHD then calls
 * the handler again and we turn msg->status / msg->reply into the response.
 * The route table and URL decoding are in api_routes.c, /api/events in
 * api_events.c; they share this file's reply helpers via http_admin_api.h.
 *
 * Lifetime of a posted message (struct pending): two references, one for the
 * request (dropped when its response is built or the connection completes)
 * and one for the mailbox (dropped in pending_done, or at once when the post
 * fails). Whoever drops the last one frees it, so a client that goes away, or
 * a server stopped while the loop still holds the message, never leaves a
 * dangling pointer on either side. All pending state is guarded by the file's
 * one mutex. MHD forbids stopping a daemon with suspended connections, so
 * http_admin_stop resumes every one still waiting first.
 *
 * Lock order: pending_lock may be held while calling MHD only on the HTTP
 * thread (inside the access handler); other threads release it before they
 * call MHD_resume_connection, so MHD's internal locks never wait on ours.
 */
#include "http_admin.h"

#include "err.h"
#include "http_admin_api.h"
#include "mem.h"
#include "store_read.h"

#include <assert.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define HTTP_ADMIN_BODY_MAX (1024u * 1024u) /* design rule 6: 413 beyond */
#define HTTP_ADMIN_CONN_TIMEOUT_S 30u       /* idle connections; suspended ones never time out */

struct http_admin {
    struct MHD_Daemon *daemon;
    struct mailbox *mailbox;     /* borrowed */
    char *store_path;            /* owned; NULL = no events route */
    struct store_reader *reader; /* HTTP thread only; opened on first use */
    uint16_t port;               /* actually bound */
    struct pending *inflight;    /* suspended requests; pending_lock */
    bool stopping;               /* pending_lock: refuse new suspends */
    unsigned resumes_running;    /* pending_lock: loop-side resumes in progress */
    pthread_cond_t resumes_done; /* signalled when resumes_running drops to 0 */
};

/* One message in flight to the loop. Freed by whoever drops the last ref. */
struct pending {
    struct mailbox_msg msg;      /* msg.done_ctx points back here */
    struct http_admin *h;        /* valid while linked (conn != NULL) */
    struct MHD_Connection *conn; /* non-NULL while suspended and a resume is owed */
    struct pending *prev, *next; /* in h->inflight while conn != NULL */
    int refs;                    /* request side + mailbox side */
    bool completed;              /* done ran (or the post failed): msg.reply is ours */
    bool healthz;                /* merge the reply into {"status":"ok"} */
};

/* Per-connection state (MHD's *con_cls); freed in on_completed. */
struct request {
    char *body; /* accumulated upload, NUL-terminated; owned */
    size_t body_len, body_cap;
    bool body_too_big;       /* over HTTP_ADMIN_BODY_MAX: data discarded, answer 413 */
    bool body_oom;           /* growing the buffer failed: answer 500 */
    bool responded;          /* a response is already queued */
    struct pending *pending; /* posted message (one ref is ours), or NULL */
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

/* Served when even the error reply cannot be built (out of memory). */
static char oom_body[] = "{\"error\":\"internal error\",\"detail\":\"out of memory\"}";

/* ---- responses ---------------------------------------------------------- */

/* Queues v (stolen; NULL = out of memory -> 500) as a compact JSON response
 * with optional Allow header. Returns MHD's verdict (MHD_NO closes). */
static enum MHD_Result queue_json(struct MHD_Connection *conn, unsigned status, json_t *v, const char *allow)
{
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    struct MHD_Response *resp;
    if (text) {
        json_free_t jfree;
        json_get_alloc_funcs(NULL, &jfree); /* json_dumps allocated through jansson's funcs */
        resp = MHD_create_response_from_buffer_with_free_callback(strlen(text), text, jfree);
        if (!resp)
            jfree(text);
    } else {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        allow = NULL;
        resp = MHD_create_response_from_buffer(sizeof oom_body - 1, oom_body, MHD_RESPMEM_PERSISTENT);
    }
    if (!resp)
        return MHD_NO;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") != MHD_YES ||
        (allow && MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES)) {
        MHD_destroy_response(resp);
        return MHD_NO;
    }
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* Queues {"error":code,"detail":<fmt, ap>} with the given status. */
__attribute__((format(printf, 4, 0))) static enum MHD_Result
reply_errorv(struct MHD_Connection *conn, unsigned status, const char *code, const char *fmt, va_list ap)
{
    char detail[512];
    vsnprintf(detail, sizeof detail, fmt, ap);
    return queue_json(conn, status, json_pack("{s:s,s:s}", "error", code, "detail", detail), NULL);
}

__attribute__((format(printf, 4, 5))) static enum MHD_Result
reply_error(struct MHD_Connection *conn, unsigned status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result r = reply_errorv(conn, status, code, fmt, ap);
    va_end(ap);
    return r;
}

/* See http_admin_api.h (the route files' view of the two helpers above). */
int http_admin_reply_json(struct MHD_Connection *conn, unsigned status, json_t *v)
{
    return queue_json(conn, status, v, NULL);
}

int http_admin_reply_error(struct MHD_Connection *conn, unsigned status, const char *code, const char *fmt,
                           ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result r = reply_errorv(conn, status, code, fmt, ap);
    va_end(ap);
    return r;
}

static enum MHD_Result reply_method_not_allowed(struct MHD_Connection *conn, const char *method,
                                                const char *allow)
{
    char detail[160];
    snprintf(detail, sizeof detail, "method %.32s is not allowed here; allowed: %s", method, allow);
    return queue_json(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                      json_pack("{s:s,s:s}", "error", "method not allowed", "detail", detail), allow);
}

/* ---- parsing helpers ---------------------------------------------------- */

/* Decodes and validates one name segment (group or topic): 1..255 bytes.
 * On failure queues a 400 and returns NULL with *r set; else a new string. */
static char *decode_name(struct MHD_Connection *conn, const char *seg, size_t n, const char *what,
                         enum MHD_Result *r)
{
    char *name = NULL;
    int rc = n > 3 * HTTP_ADMIN_NAME_MAX ? RMQ_E2BIG : api_routes_pct_decode(seg, n, false, &name);
    if (rc == RMQ_ENOMEM) {
        *r = queue_json(conn, 500, NULL, NULL);
        return NULL;
    }
    if (rc == RMQ_EINVAL) {
        *r = reply_error(
            conn, 400, "bad path",
            "the %s name has a malformed percent-escape (encode '%%' as %%25; %%00 is not allowed)", what);
        return NULL;
    }
    size_t len = name ? strlen(name) : n;
    if (len == 0 || len > HTTP_ADMIN_NAME_MAX) {
        rmq_free(name);
        *r = reply_error(conn, 400, "bad parameter", "the %s name must be 1 to %u bytes long (got %zu)", what,
                         HTTP_ADMIN_NAME_MAX, len);
        return NULL;
    }
    return name;
}

struct query_ctx {
    json_t *obj; /* borrowed */
    int rc;      /* first failure */
};

/* MHD_KeyValueIterator: decodes one query parameter into ctx->obj. */
static enum MHD_Result collect_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value)
{
    struct query_ctx *q = cls;
    char *k = NULL, *v = NULL;
    q->rc = api_routes_pct_decode(key, strlen(key), true, &k);
    if (q->rc == 0)
        q->rc = api_routes_pct_decode(value ? value : "", value ? strlen(value) : 0, true, &v);
    if (q->rc == 0) {
        json_t *s = json_string(v); /* NULL also for invalid UTF-8 */
        q->rc = s ? json_object_set_new(q->obj, k, s) : RMQ_EINVAL;
        if (q->rc == -1)
            q->rc = RMQ_EINVAL;
    }
    rmq_free(k);
    rmq_free(v);
    return q->rc == 0 ? MHD_YES : MHD_NO;
}

/* New object of the decoded query parameters, or NULL after queueing a
 * 400/500 (*r). */
static json_t *collect_query(struct MHD_Connection *conn, enum MHD_Result *r)
{
    struct query_ctx q = {json_object(), 0};
    if (!q.obj) {
        *r = queue_json(conn, 500, NULL, NULL);
        return NULL;
    }
    if (MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query_arg, &q) < 0 || q.rc != 0) {
        json_decref(q.obj);
        *r = q.rc == RMQ_ENOMEM ? queue_json(conn, 500, NULL, NULL)
                                : reply_error(conn, 400, "bad parameter",
                                              "a query parameter has a malformed percent-escape, "
                                              "a NUL byte or invalid UTF-8");
        return NULL;
    }
    return q.obj;
}

/* ---- requests answered by the loop -------------------------------------- */

static void pending_free(struct pending *p)
{
    rmq_free(p->msg.arg);
    json_decref(p->msg.query);
    json_decref(p->msg.body);
    json_decref(p->msg.reply);
    rmq_free(p);
}

/* pending_lock held. Removes p from its server's suspended list. */
static void pending_unlink(struct pending *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        p->h->inflight = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
    p->conn = NULL;
}

/* mailbox done callback (loop thread, or whoever runs mailbox_free): marks
 * the reply ready and resumes the connection if it still waits. */
static void pending_done(struct mailbox_msg *msg)
{
    struct pending *p = msg->done_ctx;
    struct http_admin *h = NULL;
    pthread_mutex_lock(&pending_lock);
    p->completed = true;
    struct MHD_Connection *resume = p->conn;
    if (resume) {
        h = p->h;
        pending_unlink(p);
        h->resumes_running++; /* http_admin_stop waits for us before freeing h */
    }
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&pending_lock);
    if (resume) {
        /* Still suspended until this call, so MHD cannot have freed it. */
        MHD_resume_connection(resume);
        pthread_mutex_lock(&pending_lock);
        if (--h->resumes_running == 0)
            pthread_cond_broadcast(&h->resumes_done);
        pthread_mutex_unlock(&pending_lock);
    }
    if (last)
        pending_free(p);
}

/* Suspends conn and posts op to the loop. arg, query and body are stolen.
 * The response is built in finish_pending once the connection resumes. */
static enum MHD_Result start_loop_op(struct http_admin *h, struct MHD_Connection *conn, struct request *req,
                                     enum admin_op op, char *arg, json_t *query, json_t *body)
{
    struct pending *p = rmq_calloc(1, sizeof *p);
    if (!p) {
        rmq_free(arg);
        json_decref(query);
        json_decref(body);
        return queue_json(conn, 500, NULL, NULL);
    }
    p->msg.op = op;
    p->msg.arg = arg;
    p->msg.query = query;
    p->msg.body = body;
    p->msg.status = 200; /* a handler that sets only reply means success */
    p->msg.done = pending_done;
    p->msg.done_ctx = p;
    p->healthz = op == ADMIN_OP_STATS;

    pthread_mutex_lock(&pending_lock);
    if (h->stopping) {
        pthread_mutex_unlock(&pending_lock);
        pending_free(p);
        return reply_error(conn, 503, "shutting down", "the server is stopping");
    }
    p->h = h;
    p->conn = conn;
    p->refs = 2;
    p->next = h->inflight;
    if (h->inflight)
        h->inflight->prev = p;
    h->inflight = p;
    /* Suspend before posting so the loop's resume always follows it. */
    MHD_suspend_connection(conn);
    pthread_mutex_unlock(&pending_lock);
    req->pending = p;

    if (mailbox_post(h->mailbox, &p->msg) < 0) {
        /* The mailbox never took it: drop its ref and answer 503 ourselves. */
        pthread_mutex_lock(&pending_lock);
        p->refs--;
        p->completed = true;
        p->msg.status = 503;
        p->msg.reply = json_pack("{s:s,s:s}", "error", "shutting down", "detail", "the server is stopping");
        if (p->conn) {
            pending_unlink(p);
            MHD_resume_connection(conn); /* HTTP thread: safe under our lock */
        }
        pthread_mutex_unlock(&pending_lock);
    }
    return MHD_YES;
}

/* Called when a suspended connection resumes: turns the loop's reply into
 * the response and drops the request's reference. */
static enum MHD_Result finish_pending(struct MHD_Connection *conn, struct request *req)
{
    struct pending *p = req->pending;
    req->pending = NULL;
    pthread_mutex_lock(&pending_lock);
    bool completed = p->completed;
    if (p->conn) /* not reachable today (whoever resumes unlinks); keeps the list honest */
        pending_unlink(p);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&pending_lock);

    if (!completed) {
        /* Resumed by http_admin_stop: the loop still owns the message. */
        if (last)
            pending_free(p);
        return reply_error(conn, 503, "shutting down", "the server stopped before the request was handled");
    }
    /* completed: the mailbox's ref is gone, so the message is ours alone. */
    json_t *reply = p->msg.reply;
    int status = p->msg.status;
    bool healthz = p->healthz;
    p->msg.reply = NULL;
    assert(last); /* completed means the mailbox side already let go */
    (void)last;
    pending_free(p);

    if (healthz) {
        /* /healthz answers ok on its own; live stats are a bonus. */
        json_t *ok = json_pack("{s:s}", "status", "ok");
        if (ok && json_is_object(reply) && status >= 200 && status < 300 &&
            json_object_update(ok, reply) < 0) {
            json_decref(ok);
            ok = NULL;
        }
        json_decref(reply);
        return queue_json(conn, 200, ok, NULL);
    }
    if (!reply) {
        return reply_error(conn, 500, "internal error", "the request handler produced no reply (status %d)",
                           status);
    }
    if (status < 100 || status > 599) {
        json_decref(reply);
        return reply_error(conn, 500, "internal error", "the request handler returned HTTP status %d",
                           status);
    }
    return queue_json(conn, (unsigned)status, reply, NULL);
}

/* ---- the router --------------------------------------------------------- */

/* PUT /api/topics/{topic}: the body must be a JSON object. Returns a new
 * object, or NULL after queueing a 400 (*r). */
static json_t *parse_body_object(struct MHD_Connection *conn, const struct request *req, enum MHD_Result *r)
{
    json_error_t jerr;
    json_t *body = json_loadb(req->body ? req->body : "", req->body_len, 0, &jerr);
    if (!body) {
        *r = reply_error(conn, 400, "bad json", "the request body is not valid JSON: %s (line %d, column %d)",
                         jerr.text, jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        *r = reply_error(conn, 400, "bad json", "the request body must be a JSON object");
        return NULL;
    }
    return body;
}

/* Final call of a request that is not waiting on the loop: route it. */
static enum MHD_Result dispatch(struct http_admin *h, struct MHD_Connection *conn, struct request *req,
                                const char *url, const char *method)
{
    enum MHD_Result r = MHD_NO;
    if (req->body_too_big)
        return reply_error(conn, 413, "payload too large", "request bodies are limited to %u bytes",
                           HTTP_ADMIN_BODY_MAX);
    if (req->body_oom)
        return queue_json(conn, 500, NULL, NULL);
    const char *name_seg = NULL;
    size_t name_len = 0;
    enum api_route route = api_routes_match(url, &name_seg, &name_len);
    if (route == API_ROUTE_NONE)
        return reply_error(conn, 404, "not found", "no route for %.200s", url);
    if (!api_routes_method_allowed(route, method))
        return reply_method_not_allowed(conn, method, api_routes_allow(route));

    char *name = NULL;
    if (name_seg &&
        !(name = decode_name(conn, name_seg, name_len, route == API_ROUTE_TOPIC ? "topic" : "group", &r)))
        return r;
    json_t *query = collect_query(conn, &r);
    if (!query) {
        rmq_free(name);
        return r;
    }
    if (route == API_ROUTE_EVENTS) {
        r = api_events_get(conn, query, h->store_path, &h->reader);
        json_decref(query);
        return r;
    }
    enum admin_op op = api_routes_op(route, method);
    json_t *body = NULL;
    if (op == ADMIN_OP_TOPIC_PUT && !(body = parse_body_object(conn, req, &r))) {
        rmq_free(name);
        json_decref(query);
        return r;
    }
    return start_loop_op(h, conn, req, op, name, query, body);
}

/* Appends upload data, keeping at most HTTP_ADMIN_BODY_MAX bytes. */
static void body_append(struct request *req, const char *data, size_t n)
{
    if (req->body_too_big || req->body_oom)
        return;
    if (n > HTTP_ADMIN_BODY_MAX - req->body_len) {
        req->body_too_big = true;
        rmq_free(req->body);
        req->body = NULL;
        req->body_len = req->body_cap = 0;
        return;
    }
    if (req->body_len + n + 1 > req->body_cap) {
        size_t cap = req->body_cap ? req->body_cap : 4096;
        while (cap < req->body_len + n + 1)
            cap *= 2;
        char *b = rmq_realloc(req->body, cap);
        if (!b) {
            req->body_oom = true;
            return;
        }
        req->body = b;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    req->body[req->body_len] = 0;
}

/* First call for a request: allocate its state and refuse an announced body
 * over the cap before reading any of it. */
static enum MHD_Result request_begin(struct MHD_Connection *conn, void **con_cls)
{
    struct request *req = rmq_calloc(1, sizeof *req);
    if (!req)
        return MHD_NO; /* closes the connection: nothing else we can do */
    *con_cls = req;
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    int64_t len;
    if (cl && (api_routes_parse_uint(cl, INT64_MAX, &len) < 0 || len > (int64_t)HTTP_ADMIN_BODY_MAX)) {
        req->responded = true;
        return reply_error(conn, 413, "payload too large", "request bodies are limited to %u bytes",
                           HTTP_ADMIN_BODY_MAX);
    }
    return MHD_YES;
}

/* MHD_AccessHandlerCallback: called first with the headers, then with each
 * piece of the body, then once more (upload_data_size 0) to answer, and once
 * again after a resume. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct http_admin *h = cls;
    struct request *req = *con_cls;
    if (!req)
        return request_begin(conn, con_cls);
    if (*upload_data_size) {
        body_append(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->responded)
        return MHD_YES;
    if (req->pending) {
        req->responded = true;
        return finish_pending(conn, req);
    }
    enum MHD_Result r = dispatch(h, conn, req, url, method);
    if (!req->pending)
        req->responded = true;
    return r;
}

/* MHD_RequestCompletedCallback: every request ends here, answered or not
 * (client gone, timeout, daemon shutdown). Drops the request's ref. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct request *req = *con_cls;
    *con_cls = NULL;
    if (!req)
        return;
    struct pending *p = req->pending;
    if (p) {
        pthread_mutex_lock(&pending_lock);
        if (p->conn)
            pending_unlink(p);
        bool last = --p->refs == 0;
        pthread_mutex_unlock(&pending_lock);
        if (last)
            pending_free(p);
    }
    rmq_free(req->body);
    rmq_free(req);
}

/* MHD_UnescapeCallback that leaves the URL alone: we split the path first
 * and decode each segment, so an encoded '/' stays inside its name. */
static size_t keep_escaped(void *cls, struct MHD_Connection *conn, char *s)
{
    return strlen(s);
}

/* ---- lifecycle ---------------------------------------------------------- */

/* Resolves host:port into *ss. Returns 0 or -1 with err filled. */
static int resolve_listen(const char *host, uint16_t port, struct sockaddr_storage *ss, char *err,
                          size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", (unsigned)port);
    int rc = getaddrinfo(host, portstr, &hints, &ai);
    if (rc != 0 || !ai) {
        snprintf(err, errlen, "cannot resolve listen address '%s': %s", host ? host : "(any)",
                 rc ? gai_strerror(rc) : "no address");
        return -1;
    }
    memset(ss, 0, sizeof *ss);
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

static unsigned poll_flag(void)
{
    if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
        return MHD_USE_EPOLL;
    if (MHD_is_feature_supported(MHD_FEATURE_POLL) == MHD_YES)
        return MHD_USE_POLL;
    return 0; /* select() */
}

/* Starts the daemon and its thread. *out is new, owned by the caller
 * (http_admin_stop). Returns 0, RMQ_EINVAL, RMQ_ENOMEM or RMQ_EIO (bind or
 * thread failure), with err describing it. */
int http_admin_start(const struct http_admin_options *opt, struct http_admin **out, char *err, size_t errlen)
{
    if (!opt || !opt->mailbox || !out) {
        snprintf(err, errlen, "http_admin_start: options and mailbox are required");
        return RMQ_EINVAL;
    }
    struct sockaddr_storage ss;
    if (resolve_listen(opt->host ? opt->host : "127.0.0.1", opt->port, &ss, err, errlen) < 0)
        return RMQ_EINVAL;
    struct http_admin *h = rmq_calloc(1, sizeof *h);
    int rc = RMQ_ENOMEM;
    if (!h)
        goto fail;
    h->mailbox = opt->mailbox;
    if (opt->store_path && !(h->store_path = rmq_strdup(opt->store_path)))
        goto fail_h;
    if (pthread_cond_init(&h->resumes_done, NULL) != 0)
        goto fail_path;

    json_object_seed(0); /* before a second thread can create objects */
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | poll_flag();
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->daemon = MHD_start_daemon(flags, opt->port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                 MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, HTTP_ADMIN_CONN_TIMEOUT_S, MHD_OPTION_END);
    rc = RMQ_EIO;
    if (!h->daemon) {
        snprintf(err, errlen, "cannot start the HTTP server on %s:%u (address in use or not local?)",
                 opt->host ? opt->host : "127.0.0.1", (unsigned)opt->port);
        goto fail_cond;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || info->port == 0) {
        snprintf(err, errlen, "cannot read the HTTP server's bound port");
        MHD_stop_daemon(h->daemon);
        goto fail_cond;
    }
    h->port = info->port;
    *out = h;
    return 0;

fail_cond:
    pthread_cond_destroy(&h->resumes_done);
fail_path:
    rmq_free(h->store_path);
fail_h:
    rmq_free(h);
fail:
    if (rc == RMQ_ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

uint16_t http_admin_port(const struct http_admin *h)
{
    return h->port;
}

/* Resumes every request still waiting on the loop (MHD panics when stopped
 * with suspended connections), waits for resumes the loop thread is in the
 * middle of, then stops the daemon. Messages the loop still holds are freed
 * by their done() later; they no longer point at h. */
void http_admin_stop(struct http_admin *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&pending_lock);
    h->stopping = true;
    while (h->inflight) {
        struct pending *p = h->inflight;
        struct MHD_Connection *conn = p->conn;
        pending_unlink(p);
        pthread_mutex_unlock(&pending_lock);
        MHD_resume_connection(conn); /* still suspended: nobody else resumes an unlinked one */
        pthread_mutex_lock(&pending_lock);
    }
    while (h->resumes_running)
        pthread_cond_wait(&h->resumes_done, &pending_lock);
    pthread_mutex_unlock(&pending_lock);

    MHD_stop_daemon(h->daemon);
    if (h->reader)
        store_reader_close(h->reader);
    pthread_cond_destroy(&h->resumes_done);
    rmq_free(h->store_path);
    rmq_free(h);
}
