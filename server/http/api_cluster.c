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

#include "request_codes.h"

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "parse_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define FETCH_MAX_BYTES (4u << 20)

/* Splits "host:port" (IPv4 loopback only) into a sockaddr. */
static int loopback_addr(const char *hp, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(hp, ':');
    if (!colon || (size_t)(colon - hp) >= sizeof host)
        return RMQ_EINVAL;
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    int64_t port;
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1 || rmq_parse_i64_range(colon + 1, 1, 65535, &port) != 0)
        return RMQ_EINVAL;
    if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127)
        return RMQ_EINVAL; /* loopback only: the admin API is not a proxy */
    sa->sin_port = htons((uint16_t)port);
    return 0;
}

static void pct_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t j = 0;
    for (; *s && j + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '_' || c == '.' || c == '~') {
            out[j++] = (char)c;
        } else {
            out[j++] = '%';
            out[j++] = hex[c >> 4];
            out[j++] = hex[c & 15];
        }
    }
    out[j] = 0;
}

/* GET http://hp/api/groups/<group>; the parsed JSON body as a new reference,
 * or NULL with *err set. */
static json_t *fetch_group(const char *hp, const char *group, const char **err)
{
    struct sockaddr_in sa;
    if (loopback_addr(hp, &sa) != 0) {
        *err = "not a loopback address";
        return NULL;
    }
    char path[1024], req[1200];
    pct_encode(group, path, sizeof path);
    int rn = snprintf(req, sizeof req, "GET /api/groups/%s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n",
                      path, hp);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = "socket failed";
        return NULL;
    }
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct buf b;
    buf_init(&b, FETCH_MAX_BYTES);
    json_t *out = NULL;
    *err = "connect failed";
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        *err = "send failed";
        if (send(fd, req, (size_t)rn, MSG_NOSIGNAL) == rn) {
            char chunk[4096];
            ssize_t k;
            while ((k = recv(fd, chunk, sizeof chunk, 0)) > 0)
                if (buf_append(&b, chunk, (size_t)k) != 0)
                    break;
            *err = k < 0 ? "timed out (1 s)" : "bad HTTP reply";
            const char *text = (const char *)buf_head(&b);
            size_t n = buf_live(&b);
            const char *sep = NULL;
            for (size_t at = 0; !sep && n >= 4 && at <= n - 4; at++)
                if (!memcmp(text + at, "\r\n\r\n", 4))
                    sep = text + at;
            if (sep && k == 0) {
                json_error_t je;
                out = json_loadb(sep + 4, n - (size_t)(sep + 4 - text), 0, &je);
            }
        }
    }
    close(fd);
    buf_free(&b);
    return out;
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
