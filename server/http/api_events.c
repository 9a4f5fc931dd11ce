/* api_events.c — membership history from the store: GET /api/events,
 * /api/groups/{group}/history, the membership part of /api/groups/{group}/at,
 * and the store facts added to loop replies (client first seen, subscription
 * churn).
 *
 * Runs on the HTTP thread and never touches loop state: it reads persisted
 * events through its own store_read connection (WAL lets it read while the
 * loop thread writes). Events are paged by id: the cursor names the last id
 * of the page ('e' cursors, see api_params.c); `since` (a bare id) still works.
 */
#include "api_events.h"
#include "api_params.h"
#include "api_routes.h"
#include "http_reply.h"

#include "clocks.h"
#include "err.h"
#include "mem.h"
#include "store_read.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Subscription changes within this window make a group "churning". */
#define CHURN_WINDOW_MS (10 * 60 * 1000)
#define CHURN_THRESHOLD 3
#define JOIN_SETTLE_MS 5000 /* a joining client's first heartbeats */

/* See api_events.h. */
int api_store_reader(struct MHD_Connection *conn, const char *store_path, struct store_reader **reader,
                     int *r)
{
    if (!store_path) {
        *r = http_admin_reply_error(conn, 503, "store unavailable",
                                    "the server was started without a store path");
        return -1;
    }
    char err[256] = "";
    if (!*reader && store_reader_open(store_path, reader, err, sizeof err) < 0) {
        *reader = NULL;
        *r = http_admin_reply_error(conn, 503, "store unavailable", "cannot open the event store: %s", err);
        return -1;
    }
    return 0;
}

/* Reads the event page position: cursor (an 'e' cursor) or since (an id);
 * 0, or -1 after a 400 (*r). */
static int event_position(struct MHD_Connection *conn, const json_t *query, int64_t *after, int64_t *limit,
                          int *r)
{
    const char *since_s = json_string_value(json_object_get(query, "since"));
    char *cur = NULL;
    const char *why = NULL;
    int rc = api_page_params(query, 'e', limit, &cur, &why);
    if (rc == RMQ_ENOMEM) {
        *r = http_admin_reply_json(conn, 500, NULL);
        return -1;
    }
    if (rc != 0) {
        *r = http_admin_reply_error(conn, 400, "bad parameter", "%s", why);
        return -1;
    }
    *after = 0;
    if (cur) {
        rc = api_routes_parse_uint(cur, INT64_MAX, after);
        rmq_free(cur);
        if (rc < 0) {
            *r = http_admin_reply_error(conn, 400, "bad parameter", "cursor does not name an event");
            return -1;
        }
    } else if (since_s && api_routes_parse_uint(since_s, INT64_MAX, after) < 0) {
        *r = http_admin_reply_error(conn, 400, "bad parameter",
                                    "since must be a non-negative integer event id");
        return -1;
    }
    assert(*after >= 0 && *limit > 0); /* the page parameters were validated */
    return 0;
}

/* Sets page["next"] to the cursor after lastId when the page is full (more
 * may follow), else null; 0 or RMQ_ENOMEM. */
static int set_event_next(json_t *page, const char *key, int64_t limit)
{
    json_t *events = json_object_get(page, key);
    assert(limit > 0 && (!events || json_is_array(events)));
    json_t *next = json_null();
    if ((int64_t)json_array_size(events) >= limit) {
        char id[24];
        snprintf(id, sizeof id, "%" PRId64, (int64_t)json_integer_value(json_object_get(page, "lastId")));
        char *c = api_cursor_encode('e', id);
        next = c ? json_string(c) : NULL;
        rmq_free(c);
    }
    return next && json_object_set_new(page, "next", next) == 0 ? 0 : RMQ_ENOMEM;
}

/* See api_events.h. Validates the parameters (400), opens the reader on
 * first use (503 when the store cannot be opened yet), and answers
 * {"events":[...],"next":cursor|null,"lastId":id} (500 if the read fails).
 * lastId is the id of the last event returned, or the position asked for:
 * a poller can pass it back as since. */
int api_events_get(struct MHD_Connection *conn, const json_t *query, const char *store_path,
                   struct store_reader **reader)
{
    const char *group = json_string_value(json_object_get(query, "group"));
    int64_t after = 0, limit = 0;
    int r = 0;
    if (event_position(conn, query, &after, &limit, &r) < 0)
        return r;
    if (group && !api_name_lookup_valid(group))
        return http_admin_reply_error(conn, 400, "bad parameter", "group must be 1 to %u bytes long",
                                      HTTP_ADMIN_NAME_MAX);
    if (api_store_reader(conn, store_path, reader, &r) < 0)
        return r;
    char err[256] = "";
    json_t *events = store_reader_events(*reader, group, after, (int)limit, err, sizeof err);
    if (!events)
        return http_admin_reply_error(conn, 500, "store error", "reading events failed: %s", err);
    /* store_reader_events calls the last id "next"; here next is the cursor */
    json_object_set(events, "lastId", json_object_get(events, "next"));
    if (set_event_next(events, "events", limit) != 0) {
        json_decref(events);
        return http_admin_reply_json(conn, 500, NULL);
    }
    return http_admin_reply_json(conn, 200, events);
}

/* Optional non-negative time parameter (epoch ms); -1 after a 400. */
static int time_param(struct MHD_Connection *conn, const json_t *query, const char *key, int64_t dflt,
                      int64_t *out, int *r)
{
    const char *v = json_string_value(json_object_get(query, key));
    *out = dflt;
    if (v && api_routes_parse_uint(v, INT64_MAX / 2, out) < 0) {
        *r = http_admin_reply_error(conn, 400, "bad parameter", "%s must be a time in epoch milliseconds",
                                    key);
        return -1;
    }
    return 0;
}

/* See api_events.h. Answers {"group","from","to","changes":[event...],
 * "membersAtFrom":[...],"next","lastId"}: the member list as it stood at
 * `from`, then each change with the list after it. Virtual-clock times are
 * as the daemon recorded them, so `to` defaults to "no limit". */
int api_group_history(struct MHD_Connection *conn, const char *group, const json_t *query,
                      const char *store_path, struct store_reader **reader)
{
    int64_t from, to, after = 0, limit = 0;
    int r = 0;
    if (time_param(conn, query, "from", 0, &from, &r) < 0 ||
        time_param(conn, query, "to", INT64_MAX / 2, &to, &r) < 0)
        return r;
    if (from > to)
        return http_admin_reply_error(conn, 400, "bad parameter", "from must not be after to");
    if (event_position(conn, query, &after, &limit, &r) < 0)
        return r;
    if (api_store_reader(conn, store_path, reader, &r) < 0)
        return r;
    char err[256] = "";
    json_t *page = store_reader_group_history(*reader, group, from, to, after, (int)limit, err, sizeof err);
    json_t *start = page && from > 0 ? store_reader_members_at(*reader, group, from - 1, err, sizeof err)
                                     : json_pack("{s:[]}", "members");
    if (!page || !start) {
        json_decref(page);
        json_decref(start);
        return http_admin_reply_error(conn, 500, "store error", "reading the history failed: %s", err);
    }
    json_t *out = json_pack("{s:s,s:I,s:O,s:O,s:O}", "group", group, "from", (json_int_t)from, "changes",
                            json_object_get(page, "events"), "membersAtFrom",
                            json_object_get(start, "members"), "lastId", json_object_get(page, "lastId"));
    if (out && to < INT64_MAX / 2)
        json_object_set_new(out, "to", json_integer(to));
    else if (out)
        json_object_set_new(out, "to", json_null());
    if (out && set_event_next(out, "changes", limit) != 0) {
        json_decref(out);
        out = NULL;
    }
    json_decref(page);
    json_decref(start);
    return http_admin_reply_json(conn, 200, out);
}

/* See api_events.h. */
int api_group_at(struct MHD_Connection *conn, const char *group, const json_t *query, const char *store_path,
                 struct store_reader **reader, json_t **out, int *r)
{
    int64_t t;
    if (!json_object_get(query, "t")) {
        *r = http_admin_reply_error(conn, 400, "missing parameter", "t (epoch milliseconds) is required");
        return -1;
    }
    if (time_param(conn, query, "t", 0, &t, r) < 0 || api_store_reader(conn, store_path, reader, r) < 0)
        return -1;
    char err[256] = "";
    json_t *at = store_reader_members_at(*reader, group, t, err, sizeof err);
    if (!at) {
        *r = http_admin_reply_error(conn, 500, "store error", "reading the membership failed: %s", err);
        return -1;
    }
    if (json_object_set_new(at, "group", json_string(group)) != 0 ||
        json_object_set_new(at, "t", json_integer(t)) != 0) {
        json_decref(at);
        *r = http_admin_reply_json(conn, 500, NULL);
        return -1;
    }
    *out = at;
    return 0;
}

/* See api_events.h. */
void api_augment_client(struct store_reader *reader, json_t *client)
{
    const char *id = json_string_value(json_object_get(client, "clientId"));
    char err[256];
    json_t *row = id ? store_reader_client(reader, id, err, sizeof err) : NULL;
    json_object_set(client, "firstSeenMs",
                    json_is_object(row) ? json_object_get(row, "firstSeenMs") : json_null());
    json_decref(row);
}

/* Subscription events of the window that a join does not explain: a new
 * client's first heartbeats settle the table once (ali-ons joins with one
 * heartbeat and subscribes its retry topic in the next: one "subscription"
 * event right after every join), so the first subscription event within
 * JOIN_SETTLE_MS after each join is not counted. Members that really
 * subscribe differently flip the table at every heartbeat, joins or not.
 * -1 when the store cannot say. */
static int64_t unexplained_subscription_events(struct store_reader *reader, const char *group,
                                               int64_t from_ms, int64_t to_ms)
{
    char err[256];
    json_t *h = store_reader_group_history(reader, group, from_ms, to_ms, 0, 1000, err, sizeof err);
    json_t *events = json_object_get(h, "events");
    if (!json_is_array(events)) {
        json_decref(h);
        return -1;
    }
    int64_t n = 0, join_ts = INT64_MIN;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const char *kind = json_string_value(json_object_get(e, "kind"));
        int64_t ts = json_integer_value(json_object_get(e, "ts"));
        if (kind && !strcmp(kind, "join")) {
            join_ts = ts;
        } else if (kind && !strcmp(kind, "subscription")) {
            if (join_ts != INT64_MIN && ts - join_ts <= JOIN_SETTLE_MS)
                join_ts = INT64_MIN; /* this join's settling: excused once */
            else
                n++;
        }
    }
    json_decref(h);
    return n;
}

/* See api_events.h. The broker keeps one subscription table per group,
 * replaced by every heartbeat: members that subscribe differently make it
 * flip back and forth, which the event store records as repeated
 * "subscription" events. */
void api_augment_diagnostics(struct store_reader *reader, json_t *diag, int64_t now_ms)
{
    const char *group = json_string_value(json_object_get(diag, "group"));
    if (!group)
        return;
    if (now_ms <= 0)
        now_ms = rmq_wall_ms();
    int64_t n = 0;
    char err[256];
    if (store_reader_count_events(reader, group, "subscription", now_ms - CHURN_WINDOW_MS, &n, err,
                                  sizeof err) != 0)
        return;
    json_object_set_new(diag, "subscriptionChangesLast10Min", json_integer(n));
    json_t *issues = json_object_get(diag, "issues");
    if (n < CHURN_THRESHOLD || json_integer_value(json_object_get(diag, "members")) <= 1 ||
        !json_is_array(issues))
        return;
    int64_t flips = unexplained_subscription_events(reader, group, now_ms - CHURN_WINDOW_MS, now_ms);
    if (flips >= CHURN_THRESHOLD)
        json_array_append_new(issues,
                              json_pack("{s:s,s:s}", "kind", "subscriptionsDisagree", "detail",
                                        "the group's subscription table changed repeatedly in the last 10 "
                                        "minutes: its members most likely subscribe to different topics, and "
                                        "each heartbeat replaces the others' (one table per group)"));
}
