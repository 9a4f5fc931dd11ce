/* api_routes.h — the route table and URL parsing (api_routes.c): one
 * table drives the router and /api/openapi.json. Pure: any thread. */
#ifndef RMQ_API_ROUTES_H
#define RMQ_API_ROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
