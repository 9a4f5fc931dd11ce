/* api_openapi.c — GET /api/openapi.json, generated from the route table in
 * api_routes.c, so every served route is described and nothing else is.
 * Pure (builds JSON from static data); any thread.
 */
#include "api_openapi.h"
#include "api_routes.h"

#include <stdio.h>
#include <string.h>

static const char *const method_keys[4] = {"get", "put", "delete", "post"};
static const unsigned method_bits[4] = {API_GET, API_PUT, API_DELETE, API_POST};

static json_t *param(const char *name, const char *in, const char *type, const char *desc, bool required)
{
    return json_pack("{s:s,s:s,s:b,s:s,s:{s:s}}", "name", name, "in", in, "required", required, "description",
                     desc, "schema", "type", type);
}

/* Appends the query parameters of spec ("name:type:description|..."). */
static void add_query(json_t *params, const char *spec)
{
    while (spec && *spec) {
        const char *end = strchr(spec, '|');
        size_t n = end ? (size_t)(end - spec) : strlen(spec);
        char item[512];
        snprintf(item, sizeof item, "%.*s", (int)n, spec);
        char *c1 = strchr(item, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c1 && c2) {
            *c1 = *c2 = 0;
            json_array_append_new(params,
                                  param(item, "query", c1 + 1, c2 + 1, strstr(c2 + 1, "(required)") != NULL));
        }
        spec = end ? end + 1 : NULL;
    }
}

/* The {name} segments of a path template as path parameters. */
static void add_path_params(json_t *params, const char *path)
{
    for (const char *p = strchr(path, '{'); p; p = strchr(p + 1, '{')) {
        const char *e = strchr(p, '}');
        if (!e)
            break;
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(e - p - 1), p + 1);
        json_array_append_new(
            params, param(name, "path", "string", "percent-encoded name (%RETRY%G is %25RETRY%25G)", true));
    }
}

static json_t *operation(const struct api_route_def *d, int m)
{
    json_t *params = json_array();
    add_path_params(params, d->path);
    if (m == 0) {
        add_query(params, d->query);
        if (d->paginated) {
            json_array_append_new(
                params, param("limit", "query", "integer", "page size, 1 to 1000 (default 100)", false));
            json_array_append_new(params, param("cursor", "query", "string",
                                                "opaque: the \"next\" value of the previous page", false));
        }
    }
    char opid[160];
    snprintf(opid, sizeof opid, "%s %s", method_keys[m], d->path);
    json_t *op = json_pack("{s:s,s:s,s:o,s:{s:{s:s,s:{s:{}}},s:{s:s},s:{s:s}}}", "summary", d->summary[m],
                           "operationId", opid, "parameters", params, "responses", "200", "description",
                           "success", "content", d->produces, "4XX", "description",
                           "error: {\"error\": short message, \"detail\": what to fix}", "5XX", "description",
                           "error: {\"error\", \"detail\"}");
    if (op && m != 0)
        json_object_set_new(op, "security", json_pack("[{s:[]}]", "bearer"));
    if (op && d->body)
        json_object_set_new(op, "requestBody",
                            json_pack("{s:s,s:b,s:{s:{s:{s:s}}}}", "description", d->body, "required", 1,
                                      "content", "application/json", "schema", "type", "object"));
    return op;
}

/* See api_openapi.h. */
json_t *api_openapi_document(void)
{
    size_t n;
    const struct api_route_def *t = api_routes_table(&n);
    json_t *paths = json_object();
    for (size_t i = 0; paths && i < n; i++) {
        json_t *item = json_object();
        for (int m = 0; item && m < 4; m++)
            if (t[i].methods & method_bits[m])
                json_object_set_new(item, method_keys[m], operation(&t[i], m));
        json_object_set_new(paths, t[i].path, item);
    }
    return json_pack("{s:s,s:{s:s,s:s,s:s},s:o,s:{s:{s:{s:s,s:s,s:s}}}}", "openapi", "3.0.3", "info", "title",
                     "rmqcoord admin API", "version", "1", "description",
                     "JSON everywhere; errors are {\"error\",\"detail\"}. PUT, DELETE and POST need "
                     "Authorization: Bearer <token> when the daemon runs with --admin-token. Lists page with "
                     "limit and cursor (pass back \"next\"; null means the last page).",
                     "paths", paths, "components", "securitySchemes", "bearer", "type", "http", "scheme",
                     "bearer", "description", "the daemon's --admin-token / RMQCOORD_ADMIN_TOKEN");
}
