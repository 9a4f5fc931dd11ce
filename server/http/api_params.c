/* api_params.c — pure helpers of the admin API: pagination cursors and page
 * slicing, name rules, bearer tokens. No I/O and no state; any thread.
 *
 * Cursors are opaque to clients but simple inside: base64url (no padding)
 * of "<kind>:<value>", where value is the last item of the page (a name for
 * name-sorted lists, an event id for events). Carrying the kind means a
 * cursor from /api/events handed to /api/groups is refused (400) instead of
 * silently skipping groups.
 */
#include "api_params.h"
#include "api_routes.h"

#include "err.h"
#include "mem.h"

#include <arpa/inet.h>
#include <assert.h>
#include <string.h>
#include <strings.h>

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* See api_params.h. */
char *api_cursor_encode(char kind, const char *value)
{
    size_t vn = strlen(value), n = vn + 2;
    char *raw = rmq_malloc(n);
    char *out = rmq_malloc((n + 2) / 3 * 4 + 1);
    if (!raw || !out) {
        rmq_free(raw);
        rmq_free(out);
        return NULL;
    }
    raw[0] = kind;
    raw[1] = ':';
    memcpy(raw + 2, value, vn);
    size_t j = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)raw[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)raw[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)raw[i + 2];
        out[j++] = b64[v >> 18 & 63];
        out[j++] = b64[v >> 12 & 63];
        if (i + 1 < n)
            out[j++] = b64[v >> 6 & 63];
        if (i + 2 < n)
            out[j++] = b64[v & 63];
    }
    assert(j <= (n + 2) / 3 * 4); /* within what was allocated, before the NUL */
    out[j] = 0;
    rmq_free(raw);
    return out;
}

/* See api_params.h. */
int api_cursor_decode(const char *cursor, char kind, char **value)
{
    size_t n = strlen(cursor);
    if (n < 3 || n % 4 == 1 || n > 4 * HTTP_ADMIN_NAME_MAX)
        return RMQ_EINVAL;
    char *raw = rmq_malloc(n + 1);
    if (!raw)
        return RMQ_ENOMEM;
    size_t j = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(cursor[i]);
        if (v < 0) {
            rmq_free(raw);
            return RMQ_EINVAL;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            raw[j++] = (char)(acc >> bits & 0xff);
        }
    }
    assert(j <= n); /* 6 bits a character give fewer bytes than characters */
    raw[j] = 0;
    if (j < 2 || raw[0] != kind || raw[1] != ':' || memchr(raw, 0, j) != NULL) {
        rmq_free(raw);
        return RMQ_EINVAL;
    }
    memmove(raw, raw + 2, j - 1); /* value and its NUL */
    *value = raw;
    return 0;
}

/* See api_params.h. */
int api_page_params(const json_t *query, char kind, int64_t *limit, char **after, const char **why)
{
    const char *ls = json_string_value(json_object_get(query, "limit"));
    const char *cs = json_string_value(json_object_get(query, "cursor"));
    *limit = API_LIST_LIMIT_DEFAULT;
    *after = NULL;
    if (ls && (api_routes_parse_uint(ls, API_LIST_LIMIT_MAX, limit) < 0 || *limit < 1)) {
        *why = "limit must be an integer from 1 to 1000";
        return RMQ_EINVAL;
    }
    if (cs) {
        int rc = api_cursor_decode(cs, kind, after);
        if (rc == RMQ_EINVAL)
            *why = "cursor is not a cursor of this list: pass back the \"next\" value of the previous page";
        return rc;
    }
    return 0;
}

/* See api_params.h. A linear pass: the loop built the whole sorted list
 * anyway, and lists are at most a few thousand entries. */
int api_page_slice(json_t *reply, const char *key, const char *field, const char *after, int64_t limit)
{
    json_t *arr = json_object_get(reply, key);
    if (!json_is_array(arr))
        return RMQ_EINVAL;
    json_t *page = json_array();
    if (!page)
        return RMQ_ENOMEM;
    size_t i, n = json_array_size(arr);
    const char *last = NULL;
    bool more = false;
    for (i = 0; i < n; i++) {
        json_t *item = json_array_get(arr, i);
        const char *v = json_string_value(json_object_get(item, field));
        if (!v || (after && strcmp(v, after) <= 0))
            continue;
        if ((int64_t)json_array_size(page) == limit) {
            more = true;
            break;
        }
        if (json_array_append(page, item) != 0) {
            json_decref(page);
            return RMQ_ENOMEM;
        }
        last = v;
    }
    assert((int64_t)json_array_size(page) <= limit && (!more || last)); /* a full page has a last name */
    json_t *next = json_null();
    if (more && last) {
        char *c = api_cursor_encode('n', last);
        json_decref(next);
        next = c ? json_string(c) : NULL;
        rmq_free(c);
    }
    /* set_new steals even on failure */
    if (!next || json_object_set_new(reply, "next", next) != 0 || json_object_set_new(reply, key, page) != 0)
        return RMQ_ENOMEM;
    return 0;
}

/* See api_params.h. */
int api_page_next_from_hex(json_t *reply)
{
    json_t *hex = json_object_get(reply, "_nextHex");
    const char *h = json_string_value(hex);
    json_t *next;
    if (!hex || json_is_null(hex)) {
        next = json_null();
    } else {
        size_t n = h ? strlen(h) : 1;
        if (n % 2 || n == 0 || n > 2 * HTTP_ADMIN_NAME_MAX)
            return RMQ_EINVAL;
        char raw[HTTP_ADMIN_NAME_MAX + 1];
        for (size_t i = 0; i < n / 2; i++) {
            int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
            if (hi < 0 || lo < 0 || (hi | lo) == 0)
                return RMQ_EINVAL;
            raw[i] = (char)(hi << 4 | lo);
        }
        raw[n / 2] = 0;
        char *c = api_cursor_encode('n', raw);
        next = c ? json_string(c) : NULL;
        rmq_free(c);
    }
    json_object_del(reply, "_nextHex");
    if (!next || json_object_set_new(reply, "next", next) != 0)
        return RMQ_ENOMEM;
    return 0;
}

/* See api_params.h. RocketMQ's client Validators and the broker's
 * TopicValidator both use this character set; the topic limit is 127. */
bool api_name_topic_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > API_TOPIC_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '%' ||
                  c == '|' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

bool api_name_lookup_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > HTTP_ADMIN_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return false;
    return true;
}

/* See api_params.h. Every byte of want is visited whatever given holds,
 * and differences are OR-ed together instead of returning at the first. */
bool api_token_equal(const char *given, size_t given_len, const char *want, size_t want_len)
{
    volatile unsigned char diff = given_len != want_len;
    for (size_t i = 0; i < want_len; i++) {
        unsigned char g = i < given_len ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)want[i]);
    }
    return diff == 0;
}

const char *api_bearer_token(const char *header, size_t *len)
{
    if (!header || strncasecmp(header, "Bearer ", 7) != 0)
        return NULL;
    const char *t = header + 7;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    while (n && t[n - 1] == ' ')
        n--;
    if (n == 0)
        return NULL;
    *len = n;
    return t;
}

/* Whether the literal address (no brackets) is loopback. */
static bool loopback_literal(const char *a)
{
    unsigned char v4[4], v6[16];
    if (inet_pton(AF_INET, a, v4) == 1)
        return v4[0] == 127;
    if (inet_pton(AF_INET6, a, v6) == 1) {
        static const unsigned char one[16] = {[15] = 1};
        static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
        return !memcmp(v6, one, 16) || (!memcmp(v6, mapped, 12) && v6[12] == 127);
    }
    return false;
}

static bool wildcard_host(const char *h)
{
    return !h || !*h || !strcmp(h, "0.0.0.0") || !strcmp(h, "::") || !strcmp(h, "[::]");
}

/* See api_params.h. */
bool api_host_allowed(const char *host, const char *cfg_host)
{
    if (wildcard_host(cfg_host))
        return true;
    char name[256];
    size_t n;
    if (host[0] == '[') { /* [v6]:port */
        const char *close = strchr(host, ']');
        if (!close || (close[1] && close[1] != ':'))
            return false;
        n = (size_t)(close - host - 1);
        host++;
    } else {
        const char *colon = strchr(host, ':');
        if (colon && strchr(colon + 1, ':'))
            return false; /* a bare IPv6 address is not a valid Host */
        n = colon ? (size_t)(colon - host) : strlen(host);
    }
    if (n == 0 || n >= sizeof name)
        return false;
    memcpy(name, host, n);
    name[n] = 0;
    if (n && name[n - 1] == '.') /* "localhost." is the same name */
        name[--n] = 0;
    if (!strcasecmp(name, "localhost") || (n > 10 && !strcasecmp(name + n - 10, ".localhost")))
        return true;
    if (loopback_literal(name))
        return true;
    const char *c = cfg_host;
    size_t cn = strlen(c);
    if (cn >= 2 && c[0] == '[' && c[cn - 1] == ']') {
        c++;
        cn -= 2;
    }
    return cn == n && !strncasecmp(name, c, n);
}

/* See api_params.h. */
bool api_content_type_json(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    static const char want[] = "application/json";
    size_t n = sizeof want - 1;
    if (strncasecmp(ct, want, n) != 0)
        return false;
    ct += n;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == 0 || *ct == ';';
}
