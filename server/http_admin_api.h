/* http_admin_api.h — private interface between http_admin.c and the route
 * files (api_*.c). Not for the rest of the daemon: main.c uses http_admin.h.
 *
 * Everything here runs on the HTTP thread, inside the MHD access handler.
 * MHD types are only forward-declared so that microhttpd.h stays confined to
 * http_admin.c and api_*.c; the int results are MHD's enum MHD_Result values
 * (1 = MHD_YES, 0 = MHD_NO: close the connection), to be returned from the
 * access handler as they are.
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

#define HTTP_ADMIN_NAME_MAX 255u /* longest decoded group / topic name, in bytes */

/* Queues v (stolen; NULL = out of memory, answered 500) as a compact JSON
 * response with Content-Type application/json. */
int http_admin_reply_json(struct MHD_Connection *conn, unsigned status, json_t *v);

/* Queues {"error":code,"detail":<fmt ...>} with status. code is a short
 * message ("bad parameter"), detail says what was wrong and how to fix it. */
__attribute__((format(printf, 4, 5))) int http_admin_reply_error(struct MHD_Connection *conn, unsigned status,
                                                                 const char *code, const char *fmt, ...);

/* ---- api_routes.c: the route table and URL parsing (pure) ---- */

enum api_route {
    API_ROUTE_NONE, /* 404 */
    API_ROUTE_HEALTHZ,
    API_ROUTE_GROUPS,
    API_ROUTE_GROUP,            /* /api/groups/{group} */
    API_ROUTE_GROUP_ALLOCATION, /* /api/groups/{group}/allocation */
    API_ROUTE_TOPICS,
    API_ROUTE_TOPIC, /* /api/topics/{topic} */
    API_ROUTE_EVENTS,
};

/* Maps a still-encoded path to a route; for the {group}/{topic} routes
 * *name_seg / *name_len get the raw (undecoded) name segment, borrowed from url. */
enum api_route api_routes_match(const char *url, const char **name_seg, size_t *name_len);
/* The Allow header value for r (static string). */
const char *api_routes_allow(enum api_route r);
bool api_routes_method_allowed(enum api_route r, const char *method);
/* The loop op serving an allowed route + method (ADMIN_OP_STATS for healthz). */
enum admin_op api_routes_op(enum api_route r, const char *method);
/* Percent-decodes s[0..n) into a new NUL-terminated string (*out, owned by
 * the caller). plus_is_space: the query-string convention. Returns 0,
 * RMQ_EINVAL for a malformed escape or %00, RMQ_ENOMEM. */
int api_routes_pct_decode(const char *s, size_t n, bool plus_is_space, char **out);
/* Parses a non-negative decimal integer (digits only) <= max into *out.
 * Returns 0, or RMQ_EINVAL for anything else (empty, sign, overflow). */
int api_routes_parse_uint(const char *s, int64_t max, int64_t *out);

/* ---- api_events.c ---- */

/* api_events.c: GET /api/events?group=G&since=ID&limit=N, answered from the
 * read-only store. query is the decoded query object (borrowed). *reader is
 * the HTTP thread's store_read connection, opened from store_path on first
 * use (NULL until then, and after a failed open so the next request retries);
 * the caller closes it when the server stops. */
int api_events_get(struct MHD_Connection *conn, const json_t *query, const char *store_path,
                   struct store_reader **reader);

#endif
