/* http_reply.c — the admin API's response helpers (see http_reply.h):
 * JSON bodies and errors, raw bytes, and the 405/401 answers with their
 * extra header. HTTP thread, inside the access handler. */
#include "http_reply.h"

#include "error_json.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Served when even the error reply cannot be built (out of memory). */
static char oom_body[] = "{\"error\":\"internal error\",\"detail\":\"out of memory\"}";

/* ---- responses ---------------------------------------------------------- */

/* Queues v (stolen; NULL = out of memory -> 500) as a compact JSON response
 * with an optional extra header (hname: hvalue). Returns MHD's verdict
 * (MHD_NO closes). */
static enum MHD_Result queue_json_h(struct MHD_Connection *conn, unsigned status, json_t *v,
                                    const char *hname, const char *hvalue)
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
        hname = NULL;
        resp = MHD_create_response_from_buffer(sizeof oom_body - 1, oom_body, MHD_RESPMEM_PERSISTENT);
    }
    if (!resp)
        return MHD_NO;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") != MHD_YES ||
        (hname && MHD_add_response_header(resp, hname, hvalue) != MHD_YES)) {
        MHD_destroy_response(resp);
        return MHD_NO;
    }
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result queue_json(struct MHD_Connection *conn, unsigned status, json_t *v, const char *allow)
{
    return queue_json_h(conn, status, v, allow ? MHD_HTTP_HEADER_ALLOW : NULL, allow);
}

/* Queues {"error":code,"detail":<fmt, ap>} with the given status. */
__attribute__((format(printf, 4, 0))) static enum MHD_Result
reply_errorv(struct MHD_Connection *conn, unsigned status, const char *code, const char *fmt, va_list ap)
{
    char detail[512];
    vsnprintf(detail, sizeof detail, fmt, ap);
    return queue_json(conn, status, rmq_error_json(code, detail), NULL);
}

/* See http_reply.h (the route files' view of the two helpers above). */
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

int http_admin_reply_bytes(struct MHD_Connection *conn, unsigned status, const char *content_type,
                           const void *data, size_t len, bool copy)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)data, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) != MHD_YES) {
        MHD_destroy_response(resp);
        return MHD_NO;
    }
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* See http_reply.h; 405 and 401 answers need their extra header. */
int http_admin_reply_method_not_allowed(struct MHD_Connection *conn, const char *method, const char *allow)
{
    char detail[160];
    snprintf(detail, sizeof detail, "method %.32s is not allowed here; allowed: %s", method, allow);
    return queue_json(conn, MHD_HTTP_METHOD_NOT_ALLOWED, rmq_error_json("method not allowed", detail), allow);
}

int http_admin_reply_unauthorized(struct MHD_Connection *conn, const char *detail)
{
    return queue_json_h(conn, MHD_HTTP_UNAUTHORIZED, rmq_error_json("unauthorized", detail),
                        MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"rmqcoord\"");
}
