/* api_cluster.c — GET /api/cluster?group=G, HTTP side: a name server
 * asks each live broker's admin API for its view of group G and sets the
 * views side by side with what differs (see cluster.h, docs/cluster.md).
 *
 * The fetch is a tiny blocking HTTP/1.0 GET over a socket, bounded to 1 s
 * per broker and refused for non-loopback addresses. It runs on a worker
 * thread of its own (http_admin.c, cluster_worker), never on the HTTP
 * thread that serves the other requests, nor on the loop thread.
 */
#include "api_cluster.h"

#include "http_fetch.h"

#include "request_codes.h"

#include "err.h"
#include "mem.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GET http://hp/api/groups/<group> (loopback only, 1 s bound); the parsed
 * JSON body as a new reference, or NULL with *err set. */
static json_t *fetch_group(const char *hp, const char *group, const char **err)
{
    char seg[1024], path[1100];
    http_fetch_pct_encode(group, seg, sizeof seg);
    snprintf(path, sizeof path, "/api/groups/%s", seg);
    int status = 0;
    return http_fetch_json(hp, path, 1000, true, &status, err);
}

static bool has_id(const json_t *ids, const char *id)
{
    size_t i;
    const json_t *v;
    json_array_foreach(ids, i, v) if (!strcmp(json_string_value(v), id)) return true;
    return false;
}

/* The clientIds of a /api/groups/G reply, sorted as served. */
static json_t *member_ids(const json_t *group)
{
    json_t *ids = json_array();
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(group, "consumers"), i, m)
    {
        const char *id = json_string_value(json_object_get(m, "clientId"));
        if (id && !has_id(ids, id))
            json_array_append_new(ids, json_string(id));
    }
    return ids;
}

json_t *api_cluster_augment(json_t *reply)
{
    const char *group = json_string_value(json_object_get(reply, "group"));
    json_t *brokers = json_object_get(reply, "brokers");
    if (!group || !json_is_array(brokers))
        return reply;
    json_t *all = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(brokers, i, b)
    {
        const char *hp = json_string_value(json_object_get(b, "httpAddr"));
        const char *err = "the broker sent no " CLUSTER_EXT_HTTP " address";
        json_t *g = hp ? fetch_group(hp, group, &err) : NULL;
        if (!g) {
            json_object_set_new(b, "fetchError", json_string(err));
            continue;
        }
        json_t *ids = member_ids(g);
        json_decref(g);
        size_t k;
        json_t *id;
        json_array_foreach(ids, k, id) if (!has_id(all, json_string_value(id))) json_array_append(all, id);
        json_object_set_new(b, "members", ids);
    }
    /* Differences: on each broker, the members some other broker has and it lacks. */
    bool agree = true;
    json_array_foreach(brokers, i, b)
    {
        const json_t *ids = json_object_get(b, "members");
        if (!ids) {
            agree = false;
            continue;
        }
        json_t *missing = json_array();
        size_t k;
        json_t *id;
        json_array_foreach(all, k, id) if (!has_id(ids, json_string_value(id)))
            json_array_append(missing, id);
        if (json_array_size(missing))
            agree = false;
        json_object_set_new(b, "missing", missing);
    }
    json_object_set_new(reply, "allMembers", all);
    json_object_set_new(reply, "agree", json_boolean(agree));
    return reply;
}
