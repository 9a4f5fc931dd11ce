/* api_routes.c — the admin API's route table and URL parsing.
 *
 * Pure string work, no I/O and no state, so any thread may call it (in
 * practice the HTTP thread). Paths arrive still percent-encoded (http_admin.c
 * turns MHD's own unescaping off): they are split on '/' first and each name
 * segment is decoded afterwards, so "%2F" stays inside a name and
 * "%25RETRY%25G1" becomes the group "%RETRY%G1".
 */
#include "http_admin_api.h"

#include "err.h"
#include "mem.h"

#include <microhttpd.h>
#include <string.h>

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* See http_admin_api.h. Strict: a '%' not followed by two hex digits is an
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
            int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1;
            int lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
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
    d[j] = 0;
    *out = d;
    return 0;
}

/* See http_admin_api.h. */
int api_routes_parse_uint(const char *s, int64_t max, int64_t *out)
{
    if (!*s || strlen(s) > 19)
        return RMQ_EINVAL;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return RMQ_EINVAL;
        if (v > (max - (*p - '0')) / 10) /* v * 10 + digit would pass max */
            return RMQ_EINVAL;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 0;
}

/* Splits url ("/a/b/c", not decoded) into at most max segments. Returns the
 * count, or max + 1 when there are more (no route is that deep). */
static int split_path(const char *url, const char **seg, size_t *len, int max)
{
    if (*url != '/')
        return 0;
    int n = 0;
    const char *p = url + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t l = slash ? (size_t)(slash - p) : strlen(p);
        if (n == max)
            return max + 1;
        seg[n] = p;
        len[n] = l;
        n++;
        if (!slash)
            return n;
        p = slash + 1;
    }
}

static bool seg_is(const char *seg, size_t len, const char *lit)
{
    return strlen(lit) == len && memcmp(seg, lit, len) == 0;
}

/* See http_admin_api.h. A trailing slash yields an empty name, which the
 * caller rejects with 400 rather than 404, since the route is clear. */
enum api_route api_routes_match(const char *url, const char **name_seg, size_t *name_len)
{
    const char *seg[5];
    size_t len[5];
    int n = split_path(url, seg, len, 4);
    if (n == 1 && seg_is(seg[0], len[0], "healthz"))
        return API_ROUTE_HEALTHZ;
    if (n < 2 || n > 4 || !seg_is(seg[0], len[0], "api"))
        return API_ROUTE_NONE;
    bool groups = seg_is(seg[1], len[1], "groups"), topics = seg_is(seg[1], len[1], "topics");
    if (n == 2) {
        if (groups)
            return API_ROUTE_GROUPS;
        if (topics)
            return API_ROUTE_TOPICS;
        return seg_is(seg[1], len[1], "events") ? API_ROUTE_EVENTS : API_ROUTE_NONE;
    }
    *name_seg = seg[2];
    *name_len = len[2];
    if (n == 3)
        return groups ? API_ROUTE_GROUP : topics ? API_ROUTE_TOPIC : API_ROUTE_NONE;
    return groups && seg_is(seg[3], len[3], "allocation") ? API_ROUTE_GROUP_ALLOCATION : API_ROUTE_NONE;
}

const char *api_routes_allow(enum api_route r)
{
    return r == API_ROUTE_TOPIC ? "GET, HEAD, PUT, DELETE" : "GET, HEAD";
}

bool api_routes_method_allowed(enum api_route r, const char *method)
{
    if (!strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD))
        return true;
    return r == API_ROUTE_TOPIC &&
           (!strcmp(method, MHD_HTTP_METHOD_PUT) || !strcmp(method, MHD_HTTP_METHOD_DELETE));
}

/* See http_admin_api.h. */
enum admin_op api_routes_op(enum api_route r, const char *method)
{
    switch (r) {
    case API_ROUTE_GROUPS: return ADMIN_OP_GROUPS_LIST;
    case API_ROUTE_GROUP: return ADMIN_OP_GROUP_GET;
    case API_ROUTE_GROUP_ALLOCATION: return ADMIN_OP_GROUP_ALLOCATION;
    case API_ROUTE_TOPICS: return ADMIN_OP_TOPICS_LIST;
    case API_ROUTE_TOPIC:
        if (!strcmp(method, MHD_HTTP_METHOD_PUT))
            return ADMIN_OP_TOPIC_PUT;
        return !strcmp(method, MHD_HTTP_METHOD_DELETE) ? ADMIN_OP_TOPIC_DELETE : ADMIN_OP_TOPIC_GET;
    case API_ROUTE_HEALTHZ:
    case API_ROUTE_EVENTS: /* answered on the HTTP thread; healthz also asks for stats */
    case API_ROUTE_NONE:
    default: return ADMIN_OP_STATS;
    }
}
