/* api_events.c — GET /api/events: membership history from the store.
 *
 * Runs on the HTTP thread and never touches loop state: it reads persisted
 * events through its own store_read connection (WAL lets it read while the
 * loop thread writes). Query: group (optional, one group), since (event id,
 * default 0: from the start), limit (default 100, at most 10000 so one
 * request cannot pull the whole table into memory).
 */
#include "http_admin_api.h"

#include "store_read.h"

#include <string.h>

#define API_EVENTS_LIMIT_DEFAULT 100
#define API_EVENTS_LIMIT_MAX 10000

/* See http_admin_api.h. Validates the parameters (400), opens the reader on
 * first use (503 when the store cannot be opened yet), and answers the
 * store's {"events":[...],"next":id} object as is (500 if the read fails). */
int api_events_get(struct MHD_Connection *conn, const json_t *query, const char *store_path,
                   struct store_reader **reader)
{
    const char *group = json_string_value(json_object_get(query, "group"));
    const char *since_s = json_string_value(json_object_get(query, "since"));
    const char *limit_s = json_string_value(json_object_get(query, "limit"));
    int64_t since = 0, limit = API_EVENTS_LIMIT_DEFAULT;
    if (since_s && api_routes_parse_uint(since_s, INT64_MAX, &since) < 0)
        return http_admin_reply_error(conn, 400, "bad parameter",
                                      "since must be a non-negative integer event id");
    if (limit_s && api_routes_parse_uint(limit_s, API_EVENTS_LIMIT_MAX, &limit) < 0)
        return http_admin_reply_error(conn, 400, "bad parameter", "limit must be an integer from 0 to %d",
                                      API_EVENTS_LIMIT_MAX);
    if (group && (!*group || strlen(group) > HTTP_ADMIN_NAME_MAX))
        return http_admin_reply_error(conn, 400, "bad parameter", "group must be 1 to %u bytes long",
                                      HTTP_ADMIN_NAME_MAX);
    if (!store_path)
        return http_admin_reply_error(conn, 503, "store unavailable",
                                      "the server was started without a store path");
    char err[256] = "";
    if (!*reader && store_reader_open(store_path, reader, err, sizeof err) < 0) {
        *reader = NULL;
        return http_admin_reply_error(conn, 503, "store unavailable", "cannot open the event store: %s", err);
    }
    json_t *events = store_reader_events(*reader, group, since, (int)limit, err, sizeof err);
    if (!events)
        return http_admin_reply_error(conn, 500, "store error", "reading events failed: %s", err);
    return http_admin_reply_json(conn, 200, events);
}
