/* remoting_cmd.c — struct rmq_cmd: lifetime, extFields map, response and
 * request constructors, and the language-name table.
 *
 * extFields is a small array searched linearly: real headers carry at most a
 * dozen keys, so a hash table would cost more than it saves. Pure; owned by
 * whichever thread owns the command.
 */
#include "remoting_cmd.h"

#include "array.h"
#include "err.h"
#include "mem.h"
#include "parse_int.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PROTOCOL: docs/protocol.md §1.6 language byte codes; the index is the byte. */
static const char *const language_names[] = {
    "JAVA",  "CPP",  "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
    "OTHER", "HTTP", "GO",     "PHP",    "OMS",    "RUST",   "NODE_JS",
};
#define LANGUAGE_COUNT (sizeof language_names / sizeof language_names[0])

#ifndef NDEBUG
/* Every extFields entry has a key and a value (the header says a value is
 * never NULL), the array has room for its length, and a body pointer is held
 * exactly when there are body bytes. O(ext_len). */
static int cmd_sanity(const struct rmq_cmd *c)
{
    assert(c->ext_len <= c->ext_cap);
    assert(c->ext != NULL || c->ext_cap == 0);
    for (size_t i = 0; i < c->ext_len; i++)
        assert(c->ext[i].key && c->ext[i].val);
    assert((c->body == NULL) == (c->body_len == 0));
    return 1;
}
#endif

void rmq_cmd_init(struct rmq_cmd *c)
{
    memset(c, 0, sizeof *c);
    c->language = RMQ_LANG_JAVA;
    c->serialize_type = RMQ_SERIALIZE_JSON;
}

void rmq_cmd_clear(struct rmq_cmd *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ext_len; i++) {
        rmq_free(c->ext[i].key);
        rmq_free(c->ext[i].val);
    }
    rmq_free(c->ext);
    rmq_free(c->remark);
    rmq_free(c->body);
    rmq_cmd_init(c);
}

static struct rmq_ext *ext_find(const struct rmq_cmd *c, const char *key)
{
    for (size_t i = 0; i < c->ext_len; i++)
        if (strcmp(c->ext[i].key, key) == 0)
            return &c->ext[i];
    return NULL;
}

/* Appends the pair, which it owns from then on: on failure (k or v NULL
 * from a failed copy, or no room) both are freed and the command is as it
 * was. */
static int push_ext(struct rmq_cmd *c, char *k, char *v)
{
    if (!k || !v || RMQ_GROW(c->ext, c->ext_cap, c->ext_len + 1, 8) != 0) {
        rmq_free(k);
        rmq_free(v);
        return RMQ_ENOMEM;
    }
    c->ext[c->ext_len].key = k;
    c->ext[c->ext_len].val = v;
    c->ext_len++;
    assert(cmd_sanity(c));
    return RMQ_OK;
}

/* Both copies are made before the map changes, so a failed allocation leaves
 * the command exactly as it was. */
int rmq_cmd_ext_set(struct rmq_cmd *c, const char *key, const char *val)
{
    if (!key || !val)
        return RMQ_EINVAL;
    char *v = rmq_strdup(val);
    if (!v)
        return RMQ_ENOMEM;
    struct rmq_ext *e = ext_find(c, key);
    if (e) {
        rmq_free(e->val);
        e->val = v;
        assert(cmd_sanity(c));
        return RMQ_OK;
    }
    return push_ext(c, rmq_strdup(key), v);
}

int rmq_cmd_ext_append(struct rmq_cmd *c, const char *key, const char *val)
{
    if (!key || !val)
        return RMQ_EINVAL;
    return push_ext(c, rmq_strdup(key), rmq_strdup(val));
}

/* Below this many entries the plain pairwise search is cheaper than sorting. */
#define EXT_DEDUPE_SORT_MIN 16

int rmq_cmd_ext_dedupe(struct rmq_cmd *c)
{
    size_t n = c->ext_len;
    if (n < 2)
        return RMQ_OK;
    /* keep[i]: entry i survives; a duplicate's value moves to the first
     * entry of its key, which keeps its place (rmq_cmd_ext_set's rule). */
    bool *drop = rmq_calloc(n, sizeof *drop);
    if (!drop)
        return RMQ_ENOMEM;
    if (n < EXT_DEDUPE_SORT_MIN) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (!drop[j] && !strcmp(c->ext[i].key, c->ext[j].key)) {
                    rmq_free(c->ext[j].val);
                    c->ext[j].val = c->ext[i].val;
                    c->ext[i].val = NULL;
                    drop[i] = true;
                    break;
                }
    } else {
        struct rmq_str_pos *refs = rmq_malloc(n * sizeof *refs);
        if (!refs) {
            rmq_free(drop);
            return RMQ_ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
            refs[i] = (struct rmq_str_pos){c->ext[i].key, i};
        qsort(refs, n, sizeof *refs, rmq_str_pos_cmp);
        for (size_t i = 0; i < n;) {
            size_t first = refs[i].pos, j = i + 1;
            for (; j < n && !strcmp(refs[j].s, refs[i].s); j++) {
                size_t dup = refs[j].pos; /* ascending: the last one's value wins */
                rmq_free(c->ext[first].val);
                c->ext[first].val = c->ext[dup].val;
                c->ext[dup].val = NULL;
                drop[dup] = true;
            }
            i = j;
        }
        rmq_free(refs);
    }
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (drop[i]) {
            rmq_free(c->ext[i].key);
            rmq_free(c->ext[i].val);
            continue;
        }
        assert(c->ext[i].val); /* only a dropped duplicate gave its value away */
        c->ext[w++] = c->ext[i];
    }
    assert(w >= 1 && w <= n);
    c->ext_len = w;
    rmq_free(drop);
    assert(cmd_sanity(c));
    return RMQ_OK;
}

int rmq_cmd_ext_set_i64(struct rmq_cmd *c, const char *key, int64_t val)
{
    /* By hand: snprintf was a visible share of a heartbeat reply's cost. */
    char tmp[24], *p = tmp + sizeof tmp;
    uint64_t u = val < 0 ? 0 - (uint64_t)val : (uint64_t)val;
    *--p = 0;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (val < 0)
        *--p = '-';
    assert(p >= tmp); /* 20 digits and a sign fit */
    return rmq_cmd_ext_set(c, key, p);
}

const char *rmq_cmd_ext_get(const struct rmq_cmd *c, const char *key)
{
    const struct rmq_ext *e = ext_find(c, key);
    return e ? e->val : NULL;
}

int rmq_cmd_ext_get_i64(const struct rmq_cmd *c, const char *key, int64_t *out)
{
    const char *s = rmq_cmd_ext_get(c, key);
    return s ? rmq_parse_i64(s, out) : RMQ_ENOTFOUND;
}

static bool ascii_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        if (x != *b)
            return false;
    }
    return *a == *b;
}

int rmq_cmd_ext_get_bool(const struct rmq_cmd *c, const char *key, bool *out)
{
    const char *s = rmq_cmd_ext_get(c, key);
    if (!s)
        return RMQ_ENOTFOUND;
    if (ascii_ieq(s, "true"))
        *out = true;
    else if (ascii_ieq(s, "false"))
        *out = false;
    else
        return RMQ_EINVAL;
    return RMQ_OK;
}

int rmq_cmd_set_remark(struct rmq_cmd *c, const char *remark)
{
    char *r = NULL;
    if (remark && !(r = rmq_strdup(remark)))
        return RMQ_ENOMEM;
    rmq_free(c->remark);
    c->remark = r;
    return RMQ_OK;
}

int rmq_cmd_set_body_copy(struct rmq_cmd *c, const void *p, size_t n)
{
    uint8_t *b = NULL;
    if (n) {
        b = rmq_malloc(n);
        if (!b)
            return RMQ_ENOMEM;
        memcpy(b, p, n);
    }
    rmq_cmd_set_body_take(c, b, n);
    return RMQ_OK;
}

void rmq_cmd_set_body_take(struct rmq_cmd *c, uint8_t *p, size_t n)
{
    rmq_free(c->body);
    if (n == 0) {
        rmq_free(p);
        p = NULL;
    }
    c->body = p;
    c->body_len = n;
    assert(cmd_sanity(c));
}

int rmq_cmd_init_response(struct rmq_cmd *resp, const struct rmq_cmd *req, int32_t code, const char *remark)
{
    rmq_cmd_init(resp);
    resp->code = code;
    resp->opaque = req->opaque;
    resp->flag = RMQ_FLAG_RESPONSE;
    resp->serialize_type =
        req->serialize_type; /* PROTOCOL (docs/protocol.md §1.4): reply in the request's type */
    resp->language = RMQ_LANG_JAVA;
    resp->version = RMQ_SERVER_VERSION;
    return rmq_cmd_set_remark(resp, remark);
}

void rmq_cmd_init_request(struct rmq_cmd *c, int32_t code, int32_t opaque, int32_t flag)
{
    rmq_cmd_init(c);
    c->code = code;
    c->opaque = opaque;
    c->flag = flag;
    c->serialize_type =
        RMQ_SERIALIZE_JSON; /* PROTOCOL (docs/protocol.md §1.4): server-initiated requests are JSON */
    c->language = RMQ_LANG_JAVA;
    c->version = RMQ_SERVER_VERSION;
}

const char *rmq_language_name(int32_t code)
{
    if (code < 0 || (size_t)code >= LANGUAGE_COUNT)
        return "OTHER";
    return language_names[code];
}

int32_t rmq_language_from_name(const char *name)
{
    if (!name)
        return RMQ_LANG_OTHER;
    for (size_t i = 0; i < LANGUAGE_COUNT; i++)
        if (strcmp(language_names[i], name) == 0)
            return (int32_t)i;
    return RMQ_LANG_OTHER;
}
