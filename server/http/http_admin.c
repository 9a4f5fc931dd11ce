/* http_admin.c — the HTTP admin API (see http_admin.h).
 *
 * Design: one libmicrohttpd daemon with its own internal polling thread (the
 * "HTTP thread"; epoll when available, else poll). Every access-handler call,
 * router decision and store_read query happens on that thread. Requests for
 * live state or mutations become a mailbox message for the loop thread: the
 * handler suspends the MHD connection, posts, and returns; the loop runs the
 * op and calls pending_done(), which resumes the connection; MHD then calls
 * the handler again and we turn msg->status / msg->reply into the response.
 * The route table and URL decoding are in api_routes.c, the router in
 * api_dispatch.c, history in api_events.c, the event stream in api_stream.c,
 * the reply helpers in http_reply.c, the request counters' format in
 * http_counts.c. This file keeps what needs a lock or a thread: suspended
 * requests, parked event streams and their poll ticker, and the counters;
 * the route files reach it through the api_host table it fills.
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

#include "api_cluster.h"
#include "api_dispatch.h"
#include "api_params.h"
#include "api_routes.h"
#include "http_accept.h"
#include "http_counts.h"
#include "http_reply.h"

#include "array.h"
#include "clocks.h"
#include "err.h"
#include "error_json.h"
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
#include <time.h>

#define HTTP_ADMIN_BODY_MAX (1024u * 1024u) /* design rule 6: 413 beyond */
/* Connection budget (docs/admin-api.md, "Limits"). MHD's defaults (about
 * 1,020 connections, any number from one address, 30 s for an idle or
 * half-sent request) let one peer holding idle sockets lock out /healthz. */
#define HTTP_ADMIN_CONN_TIMEOUT_S 10u /* idle or partial requests; suspended ones never time out */
#define HTTP_ADMIN_CONN_LIMIT 512u    /* open HTTP connections in all */
#define HTTP_ADMIN_PER_IP_LIMIT 128u  /* from one address: 32 streams, a dashboard, 100 tool requests */
#define HTTP_ADMIN_QUERY_PARAMS_MAX 64u

struct http_admin {
    struct MHD_Daemon *daemon;
    struct http_accept *acceptor; /* owned: the listening socket and its thread */
    struct mailbox *mailbox;      /* borrowed */
    char *store_path;             /* owned; NULL = no events route */
    char *token;                  /* owned; NULL = mutating routes open */
    char *host;                   /* owned: the --http host, also accepted in Host headers */
    struct store_reader *reader;  /* HTTP thread only; opened on first use */
    uint16_t port;                /* actually bound */
    struct pending *inflight;     /* suspended requests; pending_lock */
    bool stopping;                /* pending_lock: refuse new suspends */
    unsigned resumes_running;     /* pending_lock: loop-side resumes in progress */
    pthread_cond_t resumes_done;  /* signalled when resumes_running drops to 0 */
    /* Event streams (pending_lock): how many are open, and the connections
     * parked until the ticker's next poll tick resumes them. */
    unsigned streams;
    struct MHD_Connection *parked[API_STREAM_MAX];
    size_t nparked;
    pthread_cond_t tick_wake; /* a stream was parked, or stopping */
    pthread_t ticker;
    bool ticker_started;
    struct http_counts counts;             /* requests answered (pending_lock) */
    const struct api_host *ops;            /* what the route files may call of us */
    struct api_cluster_pool *cluster_pool; /* owned; NULL: every cluster view answers 503 */
};

/* One message in flight to the loop. Freed by whoever drops the last ref. */
struct pending {
    struct mailbox_msg msg;      /* msg.done_ctx points back here */
    struct http_admin *h;        /* valid while linked (conn != NULL) */
    struct MHD_Connection *conn; /* non-NULL while suspended and a resume is owed */
    struct pending *prev, *next; /* in h->inflight while conn != NULL */
    int refs;                    /* request side + mailbox side */
    bool completed;              /* done ran (or the post failed): msg.reply is ours */
    struct api_post post;        /* how to build the response */
};

/* Per-connection state (MHD's *con_cls); freed in on_completed. */
struct request {
    char *body; /* accumulated upload, NUL-terminated; owned */
    size_t body_len, body_cap;
    bool body_too_big;       /* over HTTP_ADMIN_BODY_MAX: data discarded, answer 413 */
    bool body_oom;           /* growing the buffer failed: answer 500 */
    bool begun;              /* the first access-handler call (headers) was seen */
    unsigned query_params;   /* over HTTP_ADMIN_QUERY_PARAMS_MAX: the query was cut off, answer 400 */
    bool responded;          /* a response is already queued */
    struct pending *pending; /* posted message (one ref is ours), or NULL */
    enum api_route route;    /* for the request counters */
    unsigned method;         /* enum api_method bit */
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- requests answered by the loop -------------------------------------- */

static void pending_free(struct pending *p)
{
    assert(p->refs == 0 && !p->conn); /* the last reference, and no longer suspended or listed */
    api_post_clear(&p->post);
    rmq_free(p->msg.arg);
    json_decref(p->msg.query);
    json_decref(p->msg.body);
    json_decref(p->msg.reply);
    rmq_free(p);
}

/* pending_lock held. Removes p from its server's suspended list. */
static void pending_unlink(struct pending *p)
{
    assert(p->conn && (p->prev || p->h->inflight == p)); /* linked while conn is set */
    if (p->prev)
        p->prev->next = p->next;
    else
        p->h->inflight = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
    p->conn = NULL;
}

/* The end of a resume that http_admin_stop waits for (resumes_running). */
static void resume_done(struct http_admin *h)
{
    pthread_mutex_lock(&pending_lock);
    assert(h->resumes_running > 0);
    if (--h->resumes_running == 0)
        pthread_cond_broadcast(&h->resumes_done);
    pthread_mutex_unlock(&pending_lock);
}

/* Marks the reply ready and resumes the connection if it still waits. */
static void complete_pending(struct pending *p)
{
    struct http_admin *h = NULL;
    pthread_mutex_lock(&pending_lock);
    assert(!p->completed && p->refs > 0); /* done runs once, with the mailbox's reference */
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
        resume_done(h);
    }
    if (last)
        pending_free(p);
}

/* The cluster view asks every broker's own admin API (api_cluster.c, up to
 * a second each). That wait happens on a worker of the cluster pool, so a
 * slow broker never holds the one HTTP thread that serves every other
 * request; http_admin_stop cancels the pool and waits for it
 * (resumes_running). */
static void cluster_worker(void *arg, int cancel_fd)
{
    struct pending *p = arg;
    struct http_admin *h = p->h;
    p->msg.reply = api_cluster_augment_until(p->msg.reply, cancel_fd);
    p->post.finish = API_FINISH_PLAIN; /* augmented: nothing left for api_finish */
    complete_pending(p);
    resume_done(h);
}

/* Starts cluster_worker for p; false when it could not (p is untouched). */
static bool start_cluster_worker(struct pending *p)
{
    pthread_mutex_lock(&pending_lock);
    struct http_admin *h = p->conn ? p->h : NULL;
    if (h)
        h->resumes_running++;
    pthread_mutex_unlock(&pending_lock);
    if (!h)
        return false; /* nobody waits for the reply any more */
    if (api_cluster_pool_run(h->cluster_pool, cluster_worker, p))
        return true;
    resume_done(h);
    return false;
}

/* mailbox done callback (loop thread, or whoever runs mailbox_free). A
 * cluster view still to be completed from the brokers goes to a worker
 * thread first; when every worker is busy it is answered 503 at once (the
 * brokers are not asked from the HTTP thread). */
static void pending_done(struct mailbox_msg *msg)
{
    struct pending *p = msg->done_ctx;
    if (p->post.finish == API_FINISH_CLUSTER && msg->status >= 200 && msg->status <= 299) {
        if (start_cluster_worker(p))
            return;
        char detail[160];
        snprintf(
            detail, sizeof detail,
            "%u cluster views are being gathered from the brokers already (the limit); try again shortly",
            (unsigned)API_CLUSTER_WORKERS);
        json_decref(msg->reply);
        msg->status = 503;
        msg->reply = rmq_error_json("busy", detail);
        p->post.finish = API_FINISH_PLAIN;
    }
    complete_pending(p);
}

/* api_host.post. The response is built in finish_pending once the
 * connection resumes. */
static int post_to_loop(struct http_admin *h, struct MHD_Connection *conn, void *req_cls, int op, char *arg,
                        json_t *query, json_t *body, struct api_post *post)
{
    struct request *req = req_cls;
    assert(!req->pending); /* one message in flight per request */
    struct pending *p = rmq_calloc(1, sizeof *p);
    if (!p) {
        rmq_free(arg);
        json_decref(query);
        json_decref(body);
        api_post_clear(post);
        return http_admin_reply_json(conn, 500, NULL);
    }
    p->msg.op = (enum admin_op)op;
    p->msg.arg = arg;
    p->msg.query = query;
    p->msg.body = body;
    p->msg.status = 200; /* a handler that sets only reply means success */
    p->msg.done = pending_done;
    p->msg.done_ctx = p;
    p->post = *post;
    memset(post, 0, sizeof *post);
    if (p->post.timeout_s)
        MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, p->post.timeout_s);

    pthread_mutex_lock(&pending_lock);
    if (h->stopping) {
        pthread_mutex_unlock(&pending_lock);
        pending_free(p);
        return http_admin_reply_error(conn, 503, "shutting down", "the server is stopping");
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
        p->msg.reply = rmq_error_json("shutting down", "the server is stopping");
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
static enum MHD_Result finish_pending(struct http_admin *h, struct MHD_Connection *conn, struct request *req)
{
    struct pending *p = req->pending;
    req->pending = NULL;
    pthread_mutex_lock(&pending_lock);
    assert(p->refs > 0); /* the request's own reference */
    bool completed = p->completed;
    if (p->conn) /* not reachable today (whoever resumes unlinks); keeps the list honest */
        pending_unlink(p);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&pending_lock);

    if (!completed) {
        /* Resumed by http_admin_stop: the loop still owns the message. */
        if (last)
            pending_free(p);
        return http_admin_reply_error(conn, 503, "shutting down",
                                      "the server stopped before the request was handled");
    }
    /* completed: the mailbox's ref is gone, so the message is ours alone. */
    json_t *reply = p->msg.reply;
    int status = p->msg.status;
    struct api_post post = p->post;
    memset(&p->post, 0, sizeof p->post);
    p->msg.reply = NULL;
    assert(last); /* completed means the mailbox side already let go */
    (void)last;
    pending_free(p);
    struct api_env env = {h->ops, h, h->store_path, &h->reader, h->token, h->token ? strlen(h->token) : 0};
    return api_finish(&env, conn, status, reply, &post);
}

/* ---- the router --------------------------------------------------------- */

/* Final call of a request that is not waiting on the loop: route it. */
static enum MHD_Result dispatch(struct http_admin *h, struct MHD_Connection *conn, struct request *req,
                                const char *url, const char *method)
{
    req->method = api_routes_method_bit(method);
    if (req->body_too_big)
        return http_admin_reply_error(conn, 413, "payload too large",
                                      "request bodies are limited to %u bytes", HTTP_ADMIN_BODY_MAX);
    if (req->body_oom)
        return http_admin_reply_json(conn, 500, NULL);
    struct api_env env = {h->ops, h, h->store_path, &h->reader, h->token, h->token ? strlen(h->token) : 0};
    return (enum MHD_Result)api_dispatch(&env, conn, req, url, method, req->body, req->body_len, &req->route);
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
    if (RMQ_GROW(req->body, req->body_cap, req->body_len + n + 1, 4096) != 0) {
        req->body_oom = true;
        return;
    }
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    req->body[req->body_len] = 0;
    assert(req->body_len <= HTTP_ADMIN_BODY_MAX && req->body_len < req->body_cap);
}

/* First call for a request (headers complete): refuse what the URI log
 * callback flagged, a Host that is not ours, and an announced body over the
 * cap, before reading any of the body. */
static enum MHD_Result request_begin(struct http_admin *h, struct MHD_Connection *conn, struct request *req)
{
    req->begun = true;
    if (req->query_params) {
        req->responded = true;
        return http_admin_reply_error(conn, 400, "too many query parameters",
                                      "a request may carry at most %u query parameters (got about %u)",
                                      HTTP_ADMIN_QUERY_PARAMS_MAX, req->query_params);
    }
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (host && !api_host_allowed(host, h->host)) {
        req->responded = true;
        return http_admin_reply_error(
            conn, 421, "misdirected request",
            "the Host header must name this server (localhost, a loopback address or "
            "the --http host %.100s); a page reached through another name is refused "
            "(DNS rebinding)",
            h->host);
    }
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    int64_t len;
    if (cl && (api_routes_parse_uint(cl, INT64_MAX, &len) < 0 || len > (int64_t)HTTP_ADMIN_BODY_MAX)) {
        req->responded = true;
        return http_admin_reply_error(conn, 413, "payload too large",
                                      "request bodies are limited to %u bytes", HTTP_ADMIN_BODY_MAX);
    }
    return MHD_YES;
}

/* MHD_OPTION_URI_LOG_CALLBACK: sees the request line before MHD parses the
 * query into its connection memory pool. A query of a thousand parameters
 * exhausts that pool and MHD 0.9.x then never answers (the connection hangs
 * until the timeout), so a query over the cap is cut off here, in MHD's own
 * buffer, and the request is answered 400 in request_begin. Returns the
 * request's state (*con_cls of the access handler), NULL when out of memory
 * (request_begin's caller allocates it then). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    struct request *req = rmq_calloc(1, sizeof *req);
    char *q = strchr(uri, '?');
    if (!q)
        return req;
    unsigned n = 1;
    for (const char *p = q + 1; *p; p++)
        n += *p == '&' || *p == ';';
    if (n <= HTTP_ADMIN_QUERY_PARAMS_MAX)
        return req;
    if (req)
        req->query_params = n;
    /* MHD found the '?' before calling us and parses what follows it once
     * we return: an empty string there leaves no argument to parse (the
     * handler sees the bare path). The buffer is MHD's own, writable. */
    q[1] = 0;
    return req;
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
    if (!req) {
        if (!(req = rmq_calloc(1, sizeof *req)))
            return MHD_NO; /* closes the connection: nothing else we can do */
        *con_cls = req;
    }
    if (!req->begun)
        return request_begin(h, conn, req);
    if (*upload_data_size) {
        body_append(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->responded)
        return MHD_YES;
    if (req->pending) {
        req->responded = true;
        return finish_pending(h, conn, req);
    }
    enum MHD_Result r = dispatch(h, conn, req, url, method);
    if (!req->pending)
        req->responded = true;
    return r;
}

/* Counts one answered request under its route, method and status. */
static void count_request(struct http_admin *h, struct MHD_Connection *conn, const struct request *req)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
    unsigned status = ci ? ci->http_status : 0;
    unsigned route = req->route < API_ROUTE_COUNT ? (unsigned)req->route : API_ROUTE_NONE;
    pthread_mutex_lock(&pending_lock);
    http_counts_add(&h->counts, route, req->method, status);
    pthread_mutex_unlock(&pending_lock);
}

/* Copies the counters under the lock, then formats them. */
static int metrics_append(struct http_admin *h, struct buf *b)
{
    static struct http_counts snap; /* HTTP thread only */
    pthread_mutex_lock(&pending_lock);
    snap = h->counts;
    unsigned streams = h->streams;
    pthread_mutex_unlock(&pending_lock);
    return http_counts_append(&snap, streams, b);
}

/* ---- event streams: slots, parking and the poll ticker ------------------- */

static bool stream_acquire(struct http_admin *h)
{
    pthread_mutex_lock(&pending_lock);
    bool ok = !h->stopping && h->streams < API_STREAM_MAX;
    if (ok)
        h->streams++;
    assert(h->streams <= API_STREAM_MAX);
    pthread_mutex_unlock(&pending_lock);
    return ok;
}

static void stream_release(struct http_admin *h)
{
    pthread_mutex_lock(&pending_lock);
    assert(h->streams > 0); /* released once per acquired slot */
    h->streams--;
    pthread_mutex_unlock(&pending_lock);
}

static bool stopping(struct http_admin *h)
{
    pthread_mutex_lock(&pending_lock);
    bool s = h->stopping;
    pthread_mutex_unlock(&pending_lock);
    return s;
}

/* api_host.stream_park. Suspends under the lock (we are on the HTTP thread,
 * inside MHD's callback) so the ticker can only resume it afterwards. The
 * array cannot overflow: at most one parked entry per open stream. */
static void stream_park(struct http_admin *h, struct MHD_Connection *conn, struct api_stream *st)
{
    (void)st;
    pthread_mutex_lock(&pending_lock);
    if (h->stopping || h->nparked == API_STREAM_MAX) {
        pthread_mutex_unlock(&pending_lock);
        return; /* not parked: MHD calls the reader again, which sees stopping */
    }
    MHD_suspend_connection(conn);
    h->parked[h->nparked++] = conn;
    assert(h->nparked <= h->streams); /* at most one parked entry per open stream */
    pthread_cond_signal(&h->tick_wake);
    pthread_mutex_unlock(&pending_lock);
}

/* Resumes every parked stream; the caller holds pending_lock, which is
 * dropped around the MHD calls (lock order, see the file comment). */
static void resume_parked_locked(struct http_admin *h)
{
    struct MHD_Connection *batch[API_STREAM_MAX];
    size_t n = h->nparked;
    memcpy(batch, h->parked, n * sizeof *batch);
    h->nparked = 0;
    h->resumes_running++;
    pthread_mutex_unlock(&pending_lock);
    for (size_t i = 0; i < n; i++)
        MHD_resume_connection(batch[i]); /* still suspended: only we resume a parked one */
    pthread_mutex_lock(&pending_lock);
    if (--h->resumes_running == 0)
        pthread_cond_broadcast(&h->resumes_done);
}

/* The ticker thread: while streams are parked, resumes them every
 * API_STREAM_POLL_MS so each polls the store again; sleeps otherwise. */
static void *ticker_main(void *arg)
{
    struct http_admin *h = arg;
    pthread_mutex_lock(&pending_lock);
    while (!h->stopping) {
        if (h->nparked == 0) {
            pthread_cond_wait(&h->tick_wake, &pending_lock);
            continue;
        }
        struct timespec ts = rmq_clock_after_ms(CLOCK_REALTIME, API_STREAM_POLL_MS);
        /* Wake-ups from further parks are ignored until the tick is due. */
        while (!h->stopping && pthread_cond_timedwait(&h->tick_wake, &pending_lock, &ts) == 0)
            ;
        if (!h->stopping)
            resume_parked_locked(h);
    }
    pthread_mutex_unlock(&pending_lock);
    return NULL;
}

/* MHD_RequestCompletedCallback: every request ends here, answered or not
 * (client gone, timeout, daemon shutdown). Drops the request's ref. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_admin *h = cls;
    struct request *req = *con_cls;
    *con_cls = NULL;
    if (!req)
        return;
    if (req->responded && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        count_request(h, conn, req);
    struct pending *p = req->pending;
    if (p) {
        pthread_mutex_lock(&pending_lock);
        assert(p->refs > 0);
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

static const struct api_host host_ops = {
    post_to_loop, metrics_append, stream_acquire, stream_release, stream_park, stopping,
};

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
    h->ops = &host_ops;
    h->cluster_pool = api_cluster_pool_new();
    if (opt->store_path && !(h->store_path = rmq_strdup(opt->store_path)))
        goto fail_h;
    if (opt->admin_token && *opt->admin_token && !(h->token = rmq_strdup(opt->admin_token)))
        goto fail_path;
    if (!(h->host = rmq_strdup(opt->host ? opt->host : "127.0.0.1")))
        goto fail_path;
    if (pthread_cond_init(&h->resumes_done, NULL) != 0)
        goto fail_path;
    if (pthread_cond_init(&h->tick_wake, NULL) != 0) {
        pthread_cond_destroy(&h->resumes_done);
        goto fail_path;
    }

    json_object_seed(0); /* before a second thread can create objects */
    /* We accept (http_accept.c) so that running out of descriptors pauses
     * accept instead of spinning MHD's thread. */
    uint16_t port = 0;
    rc = http_accept_bind(&ss, &h->acceptor, &port, err, errlen);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the HTTP server on %s:%u (address in use or not local?)",
                 opt->host ? opt->host : "127.0.0.1", (unsigned)opt->port);
        rc = rc == RMQ_ENOMEM ? rc : RMQ_EIO;
        goto fail_cond;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     MHD_USE_NO_LISTEN_SOCKET | poll_flag();
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, http_accept_mhd_log, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_CONNECTION_TIMEOUT, HTTP_ADMIN_CONN_TIMEOUT_S,
        MHD_OPTION_CONNECTION_LIMIT, HTTP_ADMIN_CONN_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        HTTP_ADMIN_PER_IP_LIMIT, MHD_OPTION_END);
    rc = RMQ_EIO;
    if (!h->daemon) {
        snprintf(err, errlen, "cannot start the HTTP server on %s:%u", opt->host ? opt->host : "127.0.0.1",
                 (unsigned)opt->port);
        goto fail_acceptor;
    }
    h->port = port;
    if (http_accept_run(h->acceptor, h->daemon) != 0) {
        snprintf(err, errlen, "cannot start the HTTP accept thread");
        MHD_stop_daemon(h->daemon);
        goto fail_acceptor;
    }
    if (pthread_create(&h->ticker, NULL, ticker_main, h) != 0) {
        snprintf(err, errlen, "cannot start the event-stream ticker thread");
        http_accept_stop(h->acceptor);
        MHD_stop_daemon(h->daemon);
        goto fail_cond;
    }
    h->ticker_started = true;
    *out = h;
    return 0;

fail_acceptor:
    http_accept_stop(h->acceptor);
fail_cond:
    pthread_cond_destroy(&h->resumes_done);
    pthread_cond_destroy(&h->tick_wake);
fail_path:
    api_cluster_pool_free(h->cluster_pool);
    rmq_free(h->host);
    rmq_free(h->token);
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
    http_accept_stop(h->acceptor); /* no new connection from here on */
    pthread_mutex_lock(&pending_lock);
    h->stopping = true;
    pthread_cond_broadcast(&h->tick_wake);
    pthread_mutex_unlock(&pending_lock);
    api_cluster_pool_cancel(h->cluster_pool); /* their fetches end now, not at the broker's pace */
    if (h->ticker_started)
        pthread_join(h->ticker, NULL);
    pthread_mutex_lock(&pending_lock);
    if (h->nparked)
        resume_parked_locked(h); /* their readers see stopping and end the stream */
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
    assert(!h->inflight && h->nparked == 0); /* nothing suspended is left for MHD to panic over */
    pthread_mutex_unlock(&pending_lock);

    MHD_stop_daemon(h->daemon);
    api_cluster_pool_free(h->cluster_pool);
    if (h->reader)
        store_reader_close(h->reader);
    pthread_cond_destroy(&h->resumes_done);
    pthread_cond_destroy(&h->tick_wake);
    rmq_free(h->host);
    rmq_free(h->token);
    rmq_free(h->store_path);
    rmq_free(h);
}
