/* api_routes.c — the admin API's route table and URL parsing.
 *
 * Pure string work, no I/O and no state, so any thread may call it (in
 * practice the HTTP thread). Paths arrive still percent-encoded (http_admin.c
 * turns MHD's own unescaping off): they are split on '/' first and each name
 * segment is decoded afterwards, so "%2F" stays inside a name and
 * "%25RETRY%25G1" becomes the group "%RETRY%G1".
 *
 * The table below is the single list of routes: the router matches against
 * it and api_openapi.c describes it, so the OpenAPI document cannot miss a
 * served route nor describe one that is not served.
 */
#include "api_routes.h"
#include "mailbox.h"

#include "err.h"
#include "mem.h"
#include "parse_int.h"

#include <assert.h>
#include <microhttpd.h>
#include <string.h>

/* See api_routes.h. Strict: a '%' not followed by two hex digits is an
 * error rather than a literal, so every accepted name has one spelling. */
int api_routes_pct_decode(const char *s, size_t n, bool plus_is_space, char **out)
{
    char *d = rmq_malloc(n + 1);
    if (!d)
        return RMQ_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            /* i + 2 < n: both hex digits are inside the input */
            int hi = i + 2 < n ? rmq_hex_digit(s[i + 1]) : -1;
            int lo = i + 2 < n ? rmq_hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                rmq_free(d);
                return RMQ_EINVAL;
            }
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        }
        d[j++] = c;
    }
    assert(j <= n); /* an escape only shortens */
    d[j] = 0;
    *out = d;
    return 0;
}

/* See api_routes.h. */
int api_routes_parse_uint(const char *s, int64_t max, int64_t *out)
{
    if (!*s || strlen(s) > 19)
        return RMQ_EINVAL;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return RMQ_EINVAL;
        int64_t d = *p - '0';
        /* v * 10 + d would pass max (tested without overflowing; note that
         * (max - d) / 10 rounds toward zero, so it misses max < d) */
        if (v > max / 10 || v * 10 > max - d)
            return RMQ_EINVAL;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

#define LIMIT_DESC "page size, 1 to 1000 (default 100)"

/* clang-format off */
static const struct api_route_def routes[] = {
    {API_ROUTE_DASHBOARD, "/", API_GET, "GET, HEAD",
     {"The dashboard (HTML page)"}, NULL, NULL, "text/html", false},
    {API_ROUTE_UI_ASSET, "/ui/{asset}", API_GET, "GET, HEAD",
     {"A dashboard asset: app.js or app.css"}, NULL, NULL, "text/plain", false},
    {API_ROUTE_HEALTHZ, "/healthz", API_GET, "GET, HEAD",
     {"Liveness and a few counters"}, NULL, NULL, "application/json", false},
    {API_ROUTE_METRICS, "/metrics", API_GET, "GET, HEAD",
     {"Prometheus metrics (text exposition format 0.0.4)"}, NULL, NULL, "text/plain", false},
    {API_ROUTE_OPENAPI, "/api/openapi.json", API_GET, "GET, HEAD",
     {"This OpenAPI document"}, NULL, NULL, "application/json", false},
    {API_ROUTE_GROUPS, "/api/groups", API_GET, "GET, HEAD",
     {"Every known consumer group with its live member count"}, NULL, NULL, "application/json", true},
    {API_ROUTE_GROUP, "/api/groups/{group}", API_GET, "GET, HEAD",
     {"One group: members, subscriptions, consume settings"}, NULL, NULL, "application/json", false},
    {API_ROUTE_GROUP_ALLOCATION, "/api/groups/{group}/allocation", API_GET, "GET, HEAD",
     {"Queue allocation of the live members under a strategy"},
     "topic:string:topic (required)|strategy:string:AVG, AVG_BY_CIRCLE, CONFIG, MACHINE_ROOM, "
     "MACHINE_ROOM_NEARBY or CONSISTENT_HASH|virtualNodes:integer:CONSISTENT_HASH ring size|"
     "consumerIdcs:string:MACHINE_ROOM rooms, comma-separated|inner:string:NEARBY inner strategy|"
     "brokerRooms:string:broker:room,...|consumerRooms:string:clientId:room,...|"
     "config:string:CONFIG list brokerName:queueId,...", NULL, "application/json", false},
    {API_ROUTE_GROUP_HISTORY, "/api/groups/{group}/history", API_GET, "GET, HEAD",
     {"Membership changes of the group over time, from the event store"},
     "from:integer:start time, epoch ms (default 0)|to:integer:end time, epoch ms (default now)",
     NULL, "application/json", true},
    {API_ROUTE_GROUP_AT, "/api/groups/{group}/at", API_GET, "GET, HEAD",
     {"Membership at time t from the event store, and the allocation it implied"},
     "t:integer:time, epoch ms (required)|topic:string:also compute the allocation for this topic|"
     "strategy:string:AVG, AVG_BY_CIRCLE, MACHINE_ROOM_NEARBY or CONSISTENT_HASH|"
     "virtualNodes:integer:CONSISTENT_HASH ring size|inner:string:NEARBY inner strategy",
     NULL, "application/json", false},
    {API_ROUTE_GROUP_DIAGNOSTICS, "/api/groups/{group}/diagnostics", API_GET, "GET, HEAD",
     {"Problems rmqcoord can see in a group (duplicate ids, subscription churn, ...)"}, NULL, NULL,
     "application/json", false},
    {API_ROUTE_GROUP_CONSISTENCY, "/api/groups/{group}/consistency", API_GET, "GET, HEAD",
     {"Queues each client reports holding (running info) against the expected allocation"},
     "topic:string:topic|strategy:string:strategy|timeout_ms:integer:how long to wait for clients (<= 60000)",
     NULL, "application/json", false},
    {API_ROUTE_GROUP_CONVERGED, "/api/groups/{group}/converged", API_GET, "GET, HEAD",
     {"Waits until the clients' holdings match the expected allocation"},
     "topic:string:topic|strategy:string:strategy|timeout_ms:integer:how long to wait (<= 60000)",
     NULL, "application/json", false},
    {API_ROUTE_GROUP_OFFSETS, "/api/groups/{group}/offsets", API_GET, "GET, HEAD",
     {"Committed offsets per queue: last commit time, expected owner, reported holder"},
     "topic:string:only this topic|strategy:string:allocation strategy of the expected owners (default AVG)",
     NULL, "application/json", false},
    {API_ROUTE_GROUP_OFFSETS_RESET, "/api/groups/{group}/offsets/reset", API_POST, "POST",
     {NULL, NULL, NULL, "Reset the group's offsets of a topic as INVOKE_BROKER_TO_RESET_OFFSET does (dryRun: "
      "only show them)"},
     NULL, "{\"topic\":\"T\",\"timestamp\":-1,\"queueId\":0,\"offset\":0,\"force\":true,\"dryRun\":true}",
     "application/json", false},
    {API_ROUTE_GROUP_OFFSETS_CLONE, "/api/groups/{group}/offsets/clone", API_POST, "POST",
     {NULL, NULL, NULL, "Copy another group's committed offsets to this group (dryRun: only show them)"},
     NULL, "{\"from\":\"G0\",\"topic\":\"T\",\"dryRun\":true}", "application/json", false},
    {API_ROUTE_GROUP_CLIENT, "/api/groups/{group}/clients/{clientId}", API_DELETE, "DELETE",
     {NULL, NULL, "Evict a client from the group: closes its channel(s), the group is notified"},
     NULL, NULL, "application/json", false},
    {API_ROUTE_GROUP_CLIENT_RUNNING_INFO, "/api/groups/{group}/clients/{clientId}/running-info", API_GET,
     "GET, HEAD", {"Asks the client for its running info (GET_CONSUMER_RUNNING_INFO)"},
     "timeout_ms:integer:how long to wait for the client (<= 60000)", NULL, "application/json", false},
    {API_ROUTE_CLIENTS, "/api/clients", API_GET, "GET, HEAD",
     {"Live clients (one entry per client id) with their groups and channels"}, NULL, NULL,
     "application/json", true},
    {API_ROUTE_CLIENT, "/api/clients/{clientId}", API_GET, "GET, HEAD",
     {"One client: groups, channels, remote addresses, language, version, first seen, last heartbeat"},
     NULL, NULL, "application/json", false},
    {API_ROUTE_TOPICS, "/api/topics", API_GET, "GET, HEAD",
     {"Every topic with its brokers"}, NULL, NULL, "application/json", true},
    {API_ROUTE_TOPIC, "/api/topics/{topic}", API_GET | API_PUT | API_DELETE, "GET, HEAD, PUT, DELETE",
     {"One topic and its route as clients see it", "Create or redefine a topic", "Delete a topic"},
     NULL, "{\"readQueueNums\":8,\"writeQueueNums\":8} or {\"brokers\":[{\"brokerName\",\"readQueueNums\","
     "\"writeQueueNums\",\"perm\"}]}", "application/json", false},
    {API_ROUTE_EVENTS, "/api/events", API_GET, "GET, HEAD",
     {"Membership events, oldest first"},
     "group:string:only this group|since:integer:events after this id", NULL, "application/json", true},
    {API_ROUTE_EVENTS_STREAM, "/api/events/stream", API_GET, "GET, HEAD",
     {"Membership events as they happen (Server-Sent Events)"},
     "group:string:only this group|since:integer:replay events after this id first (default: only new "
     "ones; the Last-Event-ID header also works)|heartbeatMs:integer:keep-alive comment period "
     "(100..60000, default 15000)", NULL, "text/event-stream", false},
    {API_ROUTE_RESET, "/api/reset", API_POST, "POST",
     {NULL, NULL, NULL, "Forget everything: close every channel, wipe live state and the store"},
     NULL, NULL, "application/json", false},
    {API_ROUTE_CLOCK, "/api/clock", API_GET, "GET, HEAD",
     {"The daemon's clock: virtual or real, and now"}, NULL, NULL, "application/json", false},
    {API_ROUTE_CLOCK_ADVANCE, "/api/clock/advance", API_POST, "POST",
     {NULL, NULL, NULL, "Move the virtual clock forward (serve --clock virtual); runs what is due"},
     NULL, "{\"ms\":120000}", "application/json", false},
    {API_ROUTE_CLUSTER, "/api/cluster", API_GET, "GET, HEAD",
     {"Cluster mode: a name server's live brokers, or a broker's registration per name server"},
     "group:string:on a name server, also each live broker's members of this group and the differences",
     NULL, "application/json", false},
};
/* clang-format on */
#define NROUTES (sizeof routes / sizeof routes[0])

const struct api_route_def *api_routes_table(size_t *n)
{
    *n = NROUTES;
    return routes;
}

const struct api_route_def *api_routes_def(enum api_route r)
{
    for (size_t i = 0; i < NROUTES; i++)
        if (routes[i].id == r)
            return &routes[i];
    return NULL;
}

/* Matches the url's segments against one template; fills m's parameters. */
static bool match_template(const char *tpl, const char *url, struct api_match *m)
{
    m->nparams = 0;
    if (*tpl != '/' || *url != '/')
        return false;
    const char *t = tpl + 1, *u = url + 1;
    if (!*t) /* "/" matches only "/" */
        return !*u;
    for (;;) {
        const char *te = strchr(t, '/'), *ue = strchr(u, '/');
        size_t tl = te ? (size_t)(te - t) : strlen(t), ul = ue ? (size_t)(ue - u) : strlen(u);
        if (tl > 2 && t[0] == '{' && t[tl - 1] == '}') {
            if (m->nparams == API_MAX_PARAMS || tl - 2 >= sizeof m->param_name[0])
                return false;
            memcpy(m->param_name[m->nparams], t + 1, tl - 2);
            m->param_name[m->nparams][tl - 2] = 0;
            m->param[m->nparams] = u;
            m->param_len[m->nparams] = ul;
            m->nparams++;
            assert(m->nparams <= API_MAX_PARAMS);
        } else if (tl != ul || memcmp(t, u, tl) != 0) {
            return false;
        }
        if (!te || !ue)
            return !te && !ue;
        t = te + 1;
        u = ue + 1;
    }
}

/* See api_routes.h. A trailing slash yields an empty parameter, which
 * the caller rejects with 400 rather than 404, since the route is clear. */
enum api_route api_routes_match(const char *url, struct api_match *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < NROUTES; i++) {
        if (match_template(routes[i].path, url, m)) {
            assert(routes[i].id > API_ROUTE_NONE && routes[i].id < API_ROUTE_COUNT);
            m->def = &routes[i];
            return routes[i].id;
        }
    }
    memset(m, 0, sizeof *m);
    return API_ROUTE_NONE;
}

unsigned api_routes_method_bit(const char *method)
{
    if (!strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD))
        return API_GET;
    if (!strcmp(method, MHD_HTTP_METHOD_PUT))
        return API_PUT;
    if (!strcmp(method, MHD_HTTP_METHOD_DELETE))
        return API_DELETE;
    if (!strcmp(method, MHD_HTTP_METHOD_POST))
        return API_POST;
    return 0;
}

bool api_routes_method_allowed(enum api_route r, const char *method)
{
    const struct api_route_def *d = api_routes_def(r);
    unsigned bit = api_routes_method_bit(method);
    return d && bit && (d->methods & bit);
}

bool api_routes_mutating(const char *method)
{
    unsigned bit = api_routes_method_bit(method);
    return bit == API_PUT || bit == API_DELETE || bit == API_POST;
}

/* See api_routes.h. */
int api_routes_op(enum api_route r, const char *method)
{
    unsigned bit = api_routes_method_bit(method);
    switch (r) {
    case API_ROUTE_HEALTHZ: return ADMIN_OP_STATS;
    case API_ROUTE_METRICS: return ADMIN_OP_METRICS;
    case API_ROUTE_GROUPS: return ADMIN_OP_GROUPS_LIST;
    case API_ROUTE_GROUP: return ADMIN_OP_GROUP_GET;
    case API_ROUTE_GROUP_ALLOCATION: return ADMIN_OP_GROUP_ALLOCATION;
    case API_ROUTE_GROUP_DIAGNOSTICS: return ADMIN_OP_GROUP_DIAGNOSTICS;
    case API_ROUTE_GROUP_OFFSETS: return ADMIN_OP_GROUP_OFFSETS;
    case API_ROUTE_GROUP_OFFSETS_RESET: return ADMIN_OP_GROUP_OFFSETS_RESET;
    case API_ROUTE_GROUP_OFFSETS_CLONE: return ADMIN_OP_GROUP_OFFSETS_CLONE;
    case API_ROUTE_GROUP_CONSISTENCY: return ADMIN_OP_GROUP_CONSISTENCY;
    case API_ROUTE_GROUP_CONVERGED: return ADMIN_OP_GROUP_CONVERGED;
    case API_ROUTE_GROUP_CLIENT: return ADMIN_OP_GROUP_EVICT;
    case API_ROUTE_GROUP_CLIENT_RUNNING_INFO: return ADMIN_OP_CLIENT_RUNNING_INFO;
    case API_ROUTE_CLIENTS: return ADMIN_OP_CLIENTS_LIST;
    case API_ROUTE_CLIENT: return ADMIN_OP_CLIENT_GET;
    case API_ROUTE_TOPICS: return ADMIN_OP_TOPICS_LIST;
    case API_ROUTE_TOPIC:
        return bit == API_PUT      ? ADMIN_OP_TOPIC_PUT
               : bit == API_DELETE ? ADMIN_OP_TOPIC_DELETE
                                   : ADMIN_OP_TOPIC_GET;
    case API_ROUTE_RESET: return ADMIN_OP_RESET;
    case API_ROUTE_CLOCK: return ADMIN_OP_CLOCK_GET;
    case API_ROUTE_CLOCK_ADVANCE: return ADMIN_OP_CLOCK_ADVANCE;
    case API_ROUTE_CLUSTER: return ADMIN_OP_CLUSTER;
    case API_ROUTE_NONE:
    case API_ROUTE_DASHBOARD:
    case API_ROUTE_UI_ASSET:
    case API_ROUTE_OPENAPI:
    case API_ROUTE_GROUP_HISTORY:
    case API_ROUTE_GROUP_AT:
    case API_ROUTE_EVENTS:
    case API_ROUTE_EVENTS_STREAM:
    case API_ROUTE_COUNT:
    default: return 0; /* answered on the HTTP thread */
    }
}
