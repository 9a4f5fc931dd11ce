/* api_dispatch.c — the admin API's router: matches a request against the
 * route table (api_routes.c), applies the rules every route shares (405,
 * the bearer token on mutating methods, name decoding and validation, query
 * parsing, body parsing), then either answers on the HTTP thread (history,
 * streams, static files, the OpenAPI document) or posts the route's op to
 * the loop through the server's api_host post, saying in an api_post how api_finish
 * should turn the loop's reply into the response (pagination, store
 * augmentation, metrics text).
 *
 * HTTP thread only.
 */
#include "api_dispatch.h"
#include "api_events.h"
#include "api_openapi.h"
#include "api_params.h"
#include "api_routes.h"
#include "api_static.h"
#include "api_stream.h"
#include "http_reply.h"
#include "mailbox.h"

#include "api_cluster.h"

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "store_read.h"

#include <assert.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#define CLOCK_ADVANCE_MAX_MS 31622400000LL /* 366 days */
#define DEFERRED_TIMEOUT_S 75u             /* deferred ops wait <= 60 s on the loop */
#define DEFERRED_WAIT_MAX_MS 60000

void api_post_clear(struct api_post *post)
{
    rmq_free(post->after);
    json_decref(post->extra);
    memset(post, 0, sizeof *post);
}

/* Decodes and validates one name segment (group or topic): 1..255 bytes.
 * On failure queues a 400 and returns NULL with *r set; else a new string. */
static char *decode_name(struct MHD_Connection *conn, const char *seg, size_t n, const char *what, int *r)
{
    char *name = NULL;
    int rc = n > 3 * HTTP_ADMIN_NAME_MAX ? RMQ_E2BIG : api_routes_pct_decode(seg, n, false, &name);
    if (rc == RMQ_ENOMEM) {
        *r = http_admin_reply_json(conn, 500, NULL);
        return NULL;
    }
    if (rc == RMQ_EINVAL) {
        *r = http_admin_reply_error(
            conn, 400, "bad path",
            "the %s name has a malformed percent-escape (encode '%%' as %%25; %%00 is not allowed)", what);
        return NULL;
    }
    assert(rc == RMQ_E2BIG || name != NULL); /* decoded, or too long to try */
    size_t len = name ? strlen(name) : n;
    if (len == 0 || len > HTTP_ADMIN_NAME_MAX) {
        rmq_free(name);
        *r = http_admin_reply_error(conn, 400, "bad parameter",
                                    "the %s name must be 1 to %u bytes long (got %zu)", what,
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
static json_t *collect_query(struct MHD_Connection *conn, int *r)
{
    struct query_ctx q = {json_object(), 0};
    if (!q.obj) {
        *r = http_admin_reply_json(conn, 500, NULL);
        return NULL;
    }
    if (MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query_arg, &q) < 0 || q.rc != 0) {
        json_decref(q.obj);
        *r = q.rc == RMQ_ENOMEM ? http_admin_reply_json(conn, 500, NULL)
                                : http_admin_reply_error(conn, 400, "bad parameter",
                                                         "a query parameter has a malformed percent-escape, "
                                                         "a NUL byte or invalid UTF-8");
        return NULL;
    }
    return q.obj;
}

/* The request body as a JSON object, or NULL after queueing a 400 (*r).
 * optional: an empty body is {} rather than an error. */
static json_t *body_object(struct MHD_Connection *conn, const char *text, size_t len, bool optional, int *r)
{
    if (optional && len == 0)
        return json_object();
    json_error_t jerr;
    json_t *body = json_loadb(text ? text : "", len, 0, &jerr);
    if (!body) {
        *r = http_admin_reply_error(conn, 400, "bad json",
                                    "the request body is not valid JSON: %s (line %d, column %d)", jerr.text,
                                    jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        *r = http_admin_reply_error(conn, 400, "bad json", "the request body must be a JSON object");
        return NULL;
    }
    return body;
}

/* 401 unless the request carries "Authorization: Bearer <token>". */
static bool authorized(const struct api_env *env, struct MHD_Connection *conn)
{
    if (!env->token)
        return true;
    const char *hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    size_t n = 0;
    const char *tok = api_bearer_token(hdr, &n);
    /* Compare even without a token so a missing header costs the same time. */
    bool ok = api_token_equal(tok ? tok : "", tok ? n : 0, env->token, env->token_len);
    return ok && tok;
}

static const char *qstr(const json_t *query, const char *key)
{
    return json_string_value(json_object_get(query, key));
}

/* Checks an optional timeout_ms of the deferred routes; 400 when bad. */
static bool wait_param_ok(struct MHD_Connection *conn, const json_t *query, int *r)
{
    const char *t = qstr(query, "timeout_ms");
    int64_t v;
    if (t && api_routes_parse_uint(t, DEFERRED_WAIT_MAX_MS, &v) < 0) {
        *r = http_admin_reply_error(conn, 400, "bad parameter", "timeout_ms must be an integer from 0 to %d",
                                    DEFERRED_WAIT_MAX_MS);
        return false;
    }
    return true;
}

/* The parts of a request every handler below needs (all owned here). */
struct call {
    const struct api_env *env;
    struct MHD_Connection *conn;
    void *req;
    enum api_route route;
    const char *method;
    char *name[API_MAX_PARAMS]; /* decoded path parameters */
    json_t *query;
    const char *body;
    size_t body_len;
};

static void call_clear(struct call *c)
{
    for (int i = 0; i < API_MAX_PARAMS; i++)
        rmq_free(c->name[i]);
    json_decref(c->query);
}

/* Posts op with arg = name[0] (taken), the query (taken), body (stolen). */
static int post(struct call *c, int op, json_t *body, struct api_post *p)
{
    char *arg = c->name[0];
    json_t *q = c->query;
    assert(q != NULL); /* collected before any route runs */
    c->name[0] = NULL;
    c->query = NULL;
    return c->env->host->post(c->env->h, c->conn, c->req, op, arg, q, body, p);
}

/* A paginated loop list: limit/cursor checked here, sliced in api_finish. */
static int post_page(struct call *c, int op, enum api_finish fin, const char *key, const char *field)
{
    struct api_post p = {fin, key, field, NULL, 0, NULL, 0};
    const char *why = NULL;
    int rc = api_page_params(c->query, 'n', &p.limit, &p.after, &why);
    if (rc == RMQ_EINVAL)
        return http_admin_reply_error(c->conn, 400, "bad parameter", "%s", why);
    if (rc != 0)
        return http_admin_reply_json(c->conn, 500, NULL);
    assert(p.limit >= 1 && p.limit <= API_LIST_LIMIT_MAX);
    return post(c, op, NULL, &p);
}

/* A list the loop pages itself (O(limit) there): arg = the cursor's raw
 * name, body {"limit":N}; the reply carries the next position. */
static int post_loop_page(struct call *c, int op)
{
    struct api_post p = {API_FINISH_LOOP_PAGE, NULL, NULL, NULL, 0, NULL, 0};
    char *after = NULL;
    int64_t limit = 0;
    const char *why = NULL;
    int rc = api_page_params(c->query, 'n', &limit, &after, &why);
    if (rc == RMQ_EINVAL)
        return http_admin_reply_error(c->conn, 400, "bad parameter", "%s", why);
    json_t *body = rc == 0 ? json_pack("{s:I}", "limit", (json_int_t)limit) : NULL;
    if (!body) {
        rmq_free(after);
        return http_admin_reply_json(c->conn, 500, NULL);
    }
    rmq_free(c->name[0]); /* no path parameter on a list route: NULL */
    c->name[0] = after;
    return post(c, op, body, &p);
}

static int topic_put(struct call *c)
{
    if (!api_name_topic_valid(c->name[0]))
        return http_admin_reply_error(c->conn, 400, "bad topic name",
                                      "a topic name is 1 to %u characters of a-z A-Z 0-9 %% | _ - "
                                      "(RocketMQ's rule: ^[%%|a-zA-Z0-9_-]+$)",
                                      API_TOPIC_NAME_MAX);
    int r = 0;
    json_t *body = body_object(c->conn, c->body, c->body_len, false, &r);
    if (!body)
        return r;
    struct api_post p = {API_FINISH_PLAIN, NULL, NULL, NULL, 0, NULL, 0};
    return post(c, ADMIN_OP_TOPIC_PUT, body, &p);
}

static int clock_advance(struct call *c)
{
    int r = 0;
    json_t *body = body_object(c->conn, c->body, c->body_len, false, &r);
    if (!body)
        return r;
    json_t *ms = json_object_get(body, "ms");
    if (!json_is_integer(ms) || json_integer_value(ms) < 0 || json_integer_value(ms) > CLOCK_ADVANCE_MAX_MS) {
        json_decref(body);
        return http_admin_reply_error(c->conn, 400, "bad body",
                                      "expected {\"ms\": N} with N an integer from 0 to %lld",
                                      (long long)CLOCK_ADVANCE_MAX_MS);
    }
    struct api_post p = {API_FINISH_PLAIN, NULL, NULL, NULL, 0, NULL, 0};
    return post(c, ADMIN_OP_CLOCK_ADVANCE, body, &p);
}

/* GET /api/groups/{group}/at: membership from the store here; with a topic
 * the loop computes the allocation those members implied. */
static int group_at(struct call *c)
{
    const struct api_env *e = c->env;
    json_t *at = NULL;
    int r = 0;
    if (api_group_at(c->conn, c->name[0], c->query, e->store_path, e->reader, &at, &r) < 0)
        return r;
    if (!qstr(c->query, "topic")) {
        json_object_set_new(at, "allocation", json_null());
        return http_admin_reply_json(c->conn, 200, at);
    }
    json_t *body = json_pack("{s:O}", "members", json_object_get(at, "members"));
    if (!body) {
        json_decref(at);
        return http_admin_reply_json(c->conn, 500, NULL);
    }
    struct api_post p = {API_FINISH_AT, NULL, NULL, NULL, 0, at, 0};
    return post(c, ADMIN_OP_ALLOCATE_MEMBERS, body, &p);
}

/* Routes a matched, authorised request with decoded parameters. */
static int route_call(struct call *c)
{
    const struct api_env *e = c->env;
    struct MHD_Connection *conn = c->conn;
    struct api_post plain = {API_FINISH_PLAIN, NULL, NULL, NULL, 0, NULL, 0};
    int r = 0;
    switch (c->route) {
    case API_ROUTE_DASHBOARD: return api_static_get(conn, NULL);
    case API_ROUTE_UI_ASSET: return api_static_get(conn, c->name[0]);
    case API_ROUTE_OPENAPI: return http_admin_reply_json(conn, 200, api_openapi_document());
    case API_ROUTE_EVENTS: return api_events_get(conn, c->query, e->store_path, e->reader);
    case API_ROUTE_EVENTS_STREAM:
        return api_stream_start(e->host, e->h, conn, c->query,
                                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID"),
                                e->store_path, e->reader);
    case API_ROUTE_GROUP_HISTORY:
        return api_group_history(conn, c->name[0], c->query, e->store_path, e->reader);
    case API_ROUTE_GROUP_AT: return group_at(c);
    case API_ROUTE_HEALTHZ: plain.finish = API_FINISH_HEALTHZ; return post(c, ADMIN_OP_STATS, NULL, &plain);
    case API_ROUTE_METRICS: plain.finish = API_FINISH_METRICS; return post(c, ADMIN_OP_METRICS, NULL, &plain);
    case API_ROUTE_GROUPS: return post_loop_page(c, ADMIN_OP_GROUPS_LIST);
    case API_ROUTE_TOPICS: return post_page(c, ADMIN_OP_TOPICS_LIST, API_FINISH_PAGE, "topics", "topic");
    case API_ROUTE_CLIENTS:
        return post_page(c, ADMIN_OP_CLIENTS_LIST, API_FINISH_CLIENTS, "clients", "clientId");
    case API_ROUTE_CLIENT:
        plain.finish = API_FINISH_CLIENT;
        plain.extra = json_string(c->name[0]); /* to look the id up in the store if not live */
        return post(c, ADMIN_OP_CLIENT_GET, NULL, &plain);
    case API_ROUTE_GROUP_DIAGNOSTICS:
        plain.finish = API_FINISH_DIAGNOSTICS;
        return post(c, ADMIN_OP_GROUP_DIAGNOSTICS, NULL, &plain);
    case API_ROUTE_GROUP_CLIENT:
    case API_ROUTE_GROUP_CLIENT_RUNNING_INFO:
        /* arg = group; the decoded client id travels in the query */
        if (json_object_set_new(c->query, "clientId", json_string(c->name[1])) != 0)
            return http_admin_reply_error(conn, 400, "bad parameter", "the client id is not valid UTF-8");
        if (c->route == API_ROUTE_GROUP_CLIENT)
            return post(c, ADMIN_OP_GROUP_EVICT, NULL, &plain);
        if (!wait_param_ok(conn, c->query, &r))
            return r;
        plain.timeout_s = DEFERRED_TIMEOUT_S;
        return post(c, ADMIN_OP_CLIENT_RUNNING_INFO, NULL, &plain);
    case API_ROUTE_GROUP_CONSISTENCY:
    case API_ROUTE_GROUP_CONVERGED:
        if (!wait_param_ok(conn, c->query, &r))
            return r;
        plain.timeout_s = DEFERRED_TIMEOUT_S; /* the loop may defer up to timeout_ms */
        return post(c, api_routes_op(c->route, c->method), NULL, &plain);
    case API_ROUTE_TOPIC:
        if (api_routes_method_bit(c->method) == API_PUT)
            return topic_put(c);
        return post(c, api_routes_op(c->route, c->method), NULL, &plain);
    case API_ROUTE_RESET: {
        json_t *body = body_object(conn, c->body, c->body_len, true, &r);
        if (!body)
            return r;
        json_decref(body); /* no options today; validated so typos fail loudly */
        return post(c, ADMIN_OP_RESET, NULL, &plain);
    }
    case API_ROUTE_CLOCK_ADVANCE: return clock_advance(c);
    case API_ROUTE_GROUP_OFFSETS_RESET:
    case API_ROUTE_GROUP_OFFSETS_CLONE: { /* the body's fields are checked on the loop */
        json_t *body = body_object(conn, c->body, c->body_len, false, &r);
        return body ? post(c, api_routes_op(c->route, c->method), body, &plain) : r;
    }
    case API_ROUTE_CLUSTER: plain.finish = API_FINISH_CLUSTER; return post(c, ADMIN_OP_CLUSTER, NULL, &plain);
    case API_ROUTE_GROUP:
    case API_ROUTE_GROUP_ALLOCATION:
    case API_ROUTE_GROUP_OFFSETS:
    case API_ROUTE_CLOCK: return post(c, api_routes_op(c->route, c->method), NULL, &plain);
    case API_ROUTE_NONE:
    case API_ROUTE_COUNT:
    default: return http_admin_reply_error(conn, 404, "not found", "no such route");
    }
}

/* See api_dispatch.h. */
int api_dispatch(const struct api_env *env, struct MHD_Connection *conn, void *req, const char *url,
                 const char *method, const char *body, size_t body_len, enum api_route *route_out)
{
    struct api_match m;
    enum api_route route = api_routes_match(url, &m);
    *route_out = route;
    if (route == API_ROUTE_NONE)
        return http_admin_reply_error(conn, 404, "not found", "no route for %.200s (see /api/openapi.json)",
                                      url);
    if (!api_routes_method_allowed(route, method))
        return http_admin_reply_method_not_allowed(conn, method, m.def->allow);
    if (api_routes_mutating(method) && !authorized(env, conn))
        return http_admin_reply_unauthorized(conn,
                                             "this route changes state: send Authorization: Bearer <token> "
                                             "(the daemon's --admin-token)");
    /* Without a token, what keeps a web page of another origin from
     * mutating is that it cannot send this header without a CORS preflight
     * (never granted here); a form or a simple fetch POST can be sent. */
    if (api_routes_mutating(method) && !env->token &&
        !api_content_type_json(
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE)))
        return http_admin_reply_error(conn, 415, "unsupported media type",
                                      "a %s needs Content-Type: application/json (even with an empty "
                                      "body), so that a web page of another origin cannot send it",
                                      method);
    struct call c = {env, conn, req, route, method, {NULL, NULL}, NULL, body, body_len};
    int r = 0;
    assert(m.nparams >= 0 && m.nparams <= API_MAX_PARAMS && m.def && m.def->id == route);
    for (int i = 0; i < m.nparams; i++) {
        if (!(c.name[i] = decode_name(conn, m.param[i], m.param_len[i], m.param_name[i], &r))) {
            call_clear(&c);
            return r;
        }
        if (!api_name_lookup_valid(c.name[i])) {
            call_clear(&c);
            return http_admin_reply_error(conn, 400, "bad parameter",
                                          "the %s must not contain control characters", m.param_name[i]);
        }
    }
    if (!(c.query = collect_query(conn, &r))) {
        call_clear(&c);
        return r;
    }
    r = route_call(&c);
    call_clear(&c);
    return r;
}

/* ---- turning loop replies into responses -------------------------------- */

/* The HTTP thread's reader, opened quietly (augmentation is best effort). */
static struct store_reader *reader_quiet(const struct api_env *env)
{
    char err[256];
    if (!*env->reader && env->store_path &&
        store_reader_open(env->store_path, env->reader, err, sizeof err) < 0)
        *env->reader = NULL;
    return *env->reader;
}

/* /metrics: the loop's text, then this thread's counters. */
static int finish_metrics(struct MHD_Connection *conn, const struct api_env *env, json_t *reply)
{
    json_t *text = json_object_get(reply, "text");
    struct buf b;
    /* The loop's text grows with the groups; this bound only stops a runaway. */
    buf_init(&b, 64u * 1024u * 1024u);
    int rc =
        json_is_string(text) ? buf_append(&b, json_string_value(text), json_string_length(text)) : RMQ_EINVAL;
    if (rc == 0)
        rc = env->host->metrics_append(env->h, &b);
    json_decref(reply);
    int r = rc == 0 ? http_admin_reply_bytes(conn, 200, "text/plain; version=0.0.4; charset=utf-8",
                                             buf_head(&b), buf_live(&b), true)
                    : http_admin_reply_error(conn, 500, "internal error", "building the metrics text failed");
    buf_free(&b);
    return r;
}

/* See api_dispatch.h. */
int api_finish(const struct api_env *env, struct MHD_Connection *conn, int status, json_t *reply,
               struct api_post *post)
{
    enum api_finish fin = post->finish;
    int r;
    if (fin == API_FINISH_HEALTHZ) {
        /* /healthz answers ok on its own; live stats are a bonus. */
        json_t *ok = json_pack("{s:s}", "status", "ok");
        if (ok && json_is_object(reply) && status >= 200 && status < 300 &&
            json_object_update(ok, reply) < 0) {
            json_decref(ok);
            ok = NULL;
        }
        json_decref(reply);
        api_post_clear(post);
        return http_admin_reply_json(conn, 200, ok);
    }
    if (!reply) {
        api_post_clear(post);
        return http_admin_reply_error(conn, 500, "internal error",
                                      "the request handler produced no reply (status %d)", status);
    }
    if (status < 100 || status > 599) {
        json_decref(reply);
        api_post_clear(post);
        return http_admin_reply_error(conn, 500, "internal error",
                                      "the request handler returned HTTP status %d", status);
    }
    if (status == 404 && fin == API_FINISH_CLIENT) {
        /* Not live: the store may still know it (offline client). */
        json_t *stored = NULL;
        struct store_reader *rd = reader_quiet(env);
        char err[256];
        if (rd && json_is_string(post->extra))
            stored = store_reader_client(rd, json_string_value(post->extra), err, sizeof err);
        if (json_is_object(stored)) {
            json_decref(reply);
            json_object_set_new(stored, "clientId", json_copy(post->extra));
            json_object_set_new(stored, "live", json_false());
            json_object_set_new(stored, "groups", json_array());
            json_object_set_new(stored, "channels", json_array());
            api_post_clear(post);
            return http_admin_reply_json(conn, 200, stored);
        }
        json_decref(stored);
    }
    if (status < 200 || status > 299 || fin == API_FINISH_PLAIN) {
        api_post_clear(post);
        return http_admin_reply_json(conn, (unsigned)status, reply);
    }
    assert(reply && status >= 200 && status <= 299); /* only a success is finished further */
    switch (fin) {
    case API_FINISH_METRICS: api_post_clear(post); return finish_metrics(conn, env, reply);
    case API_FINISH_LOOP_PAGE:
        if (api_page_next_from_hex(reply) != 0) {
            json_decref(reply);
            reply = NULL; /* 500 */
        }
        break;
    case API_FINISH_PAGE:
    case API_FINISH_CLIENTS:
        assert(post->page_key && post->page_field && post->limit >= 1); /* post_page's */
        r = api_page_slice(reply, post->page_key, post->page_field, post->after, post->limit);
        if (r == RMQ_ENOMEM) {
            json_decref(reply);
            reply = NULL;                                 /* 500 */
        } else if (r == 0 && fin == API_FINISH_CLIENTS) { /* EINVAL: not a list reply, pass it on */
            struct store_reader *rd = reader_quiet(env);
            json_t *list = json_object_get(reply, "clients");
            for (size_t i = 0; rd && i < json_array_size(list); i++)
                api_augment_client(rd, json_array_get(list, i));
        }
        break;
    case API_FINISH_CLIENT: {
        struct store_reader *rd = reader_quiet(env);
        if (rd)
            api_augment_client(rd, reply);
        break;
    }
    case API_FINISH_DIAGNOSTICS: {
        struct store_reader *rd = reader_quiet(env);
        if (rd)
            api_augment_diagnostics(rd, reply, json_integer_value(json_object_get(reply, "nowMs")));
        break;
    }
    case API_FINISH_AT: {
        json_t *at = post->extra;
        post->extra = NULL;
        if (json_object_set_new(at, "allocation", reply) != 0) {
            json_decref(at);
            at = NULL;
        }
        reply = at;
        break;
    }
    case API_FINISH_CLUSTER: /* never here: a worker gathers it and finishes it PLAIN (http_admin.c) */
    case API_FINISH_PLAIN:
    case API_FINISH_HEALTHZ:
    default: break;
    }
    api_post_clear(post);
    assert(!post->after && !post->extra); /* nothing of the post outlives the answer */
    r = http_admin_reply_json(conn, 200, reply);
    return r;
}
