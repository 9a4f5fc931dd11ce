/* message_props.c — see message_props.h. The parse rules are the broker's
 * (string2messageProperties): a lenient reader that skips what it cannot
 * use rather than refusing the message. Pure; one thread. */
#include "message_props.h"

#include "err.h"
#include "mem.h"

#include <string.h>

void rmq_msg_props_clear(struct rmq_msg_props *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        rmq_free(p->v[i].name);
        rmq_free(p->v[i].value);
    }
    rmq_free(p->v);
    *p = (struct rmq_msg_props){0};
}

static ptrdiff_t find_name(const struct rmq_msg_props *p, const char *name, size_t len)
{
    for (size_t i = 0; i < p->n; i++)
        if (strlen(p->v[i].name) == len && memcmp(p->v[i].name, name, len) == 0)
            return (ptrdiff_t)i;
    return -1;
}

/* Puts copies of name[0..nl) and value[0..vl) in p: replaces the value of
 * a present name, appends otherwise. p is unchanged on RMQ_ENOMEM. */
static int put(struct rmq_msg_props *p, const char *name, size_t nl, const char *value, size_t vl)
{
    char *v = rmq_strndup(value, vl);
    if (!v)
        return RMQ_ENOMEM;
    ptrdiff_t at = find_name(p, name, nl);
    if (at >= 0) {
        rmq_free(p->v[at].value);
        p->v[at].value = v;
        return RMQ_OK;
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        struct rmq_msg_prop *nv = rmq_realloc(p->v, cap * sizeof *nv);
        if (!nv) {
            rmq_free(v);
            return RMQ_ENOMEM;
        }
        p->v = nv;
        p->cap = cap;
    }
    char *nm = rmq_strndup(name, nl);
    if (!nm) {
        rmq_free(v);
        return RMQ_ENOMEM;
    }
    p->v[p->n++] = (struct rmq_msg_prop){nm, v};
    return RMQ_OK;
}

/* Walks the pieces of s[0..n) the broker would keep, calling fn for each
 * name/value pair; stops at fn's non-zero result and returns it. */
static int each_pair(const char *s, size_t n, int (*fn)(void *, const char *, size_t, const char *, size_t),
                     void *ctx)
{
    size_t i = 0;
    while (i < n) {
        const char *end = memchr(s + i, RMQ_PROP_SEP, n - i);
        size_t e = end ? (size_t)(end - s) : n;
        /* The separator is searched from the piece's start to the end of
         * the whole string: one found past the piece means no pair here. */
        const char *kv = memchr(s + i, RMQ_PROP_NAME_SEP, n - i);
        size_t k = kv ? (size_t)(kv - s) : n;
        if (e - i >= 3 && k > i && k + 1 < e) {
            int r = fn(ctx, s + i, k - i, s + k + 1, e - k - 1);
            if (r)
                return r;
        }
        i = e + 1;
    }
    return 0;
}

static int parse_pair(void *ctx, const char *name, size_t nl, const char *value, size_t vl)
{
    return put(ctx, name, nl, value, vl);
}

int rmq_msg_props_parse(const char *s, size_t n, struct rmq_msg_props *out, char *err, size_t errlen)
{
    *out = (struct rmq_msg_props){0};
    if (n && !s)
        return rmq_fail(err, errlen, RMQ_EINVAL, "properties: NULL");
    if (n && memchr(s, 0, n))
        return rmq_fail(err, errlen, RMQ_EPROTO, "properties: a NUL byte");
    int rc = each_pair(s, n, parse_pair, out);
    if (rc) {
        rmq_msg_props_clear(out);
        return rmq_fail(err, errlen, rc, "properties: %s", rmq_strerror(rc));
    }
    return RMQ_OK;
}

const char *rmq_msg_props_get(const struct rmq_msg_props *p, const char *name)
{
    ptrdiff_t at = find_name(p, name, strlen(name));
    return at >= 0 ? p->v[at].value : NULL;
}

static bool usable(const char *s)
{
    return s && *s && !strchr(s, RMQ_PROP_NAME_SEP) && !strchr(s, RMQ_PROP_SEP);
}

int rmq_msg_props_set(struct rmq_msg_props *p, const char *name, const char *value)
{
    if (!usable(name) || !usable(value))
        return RMQ_EINVAL;
    return put(p, name, strlen(name), value, strlen(value));
}

bool rmq_msg_props_remove(struct rmq_msg_props *p, const char *name)
{
    ptrdiff_t at = find_name(p, name, strlen(name));
    if (at < 0)
        return false;
    rmq_free(p->v[at].name);
    rmq_free(p->v[at].value);
    memmove(&p->v[at], &p->v[at + 1], (p->n - (size_t)at - 1) * sizeof p->v[0]);
    p->n--;
    return true;
}

int rmq_msg_props_encode(const struct rmq_msg_props *p, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = RMQ_OK;
    for (size_t i = 0; i < p->n && !rc; i++)
        if (!(rc = buf_append_str(out, p->v[i].name)) && !(rc = buf_append_u8(out, RMQ_PROP_NAME_SEP)) &&
            !(rc = buf_append_str(out, p->v[i].value)))
            rc = buf_append_u8(out, RMQ_PROP_SEP);
    return buf_undo_on_error(out, mark, rc);
}

struct find_ctx {
    const char *name;
    size_t nl;
    const char *val;
    size_t vlen;
};

static int find_pair(void *ctx, const char *name, size_t nl, const char *value, size_t vl)
{
    struct find_ctx *f = ctx;
    if (nl == f->nl && memcmp(name, f->name, nl) == 0) {
        f->val = value;
        f->vlen = vl;
    }
    return 0;
}

bool rmq_msg_props_find(const char *s, size_t n, const char *name, const char **val, size_t *vlen)
{
    struct find_ctx f = {name, strlen(name), NULL, 0};
    if (s)
        (void)each_pair(s, n, find_pair, &f);
    if (!f.val)
        return false;
    *val = f.val;
    *vlen = f.vlen;
    return true;
}

static bool cont(unsigned b)
{
    return (b & 0xC0) == 0x80;
}

/* Decodes the character at p[0..n) (n >= 1) the way Java 17's new
 * String(bytes, UTF_8) does, malformed input included: *cp gets the code
 * point or U+FFFD; returns the bytes it takes. Where a sequence is cut
 * short or malformed, Java replaces the longest prefix that could have
 * begun a valid one, and a cut-short sequence at the very end as a
 * whole. */
static size_t java_utf8_step(const unsigned char *p, size_t n, uint32_t *cp)
{
    unsigned b1 = p[0];
    *cp = 0xFFFD;
    if (b1 < 0x80) {
        *cp = b1;
        return 1;
    }
    if ((b1 & 0xE0) == 0xC0 && (b1 & 0x1E) != 0) { /* C2..DF */
        if (n < 2 || !cont(p[1]))
            return 1;
        *cp = (b1 & 0x1Fu) << 6 | (p[1] & 0x3Fu);
        return 2;
    }
    if ((b1 & 0xF0) == 0xE0) {
        bool bad2 = n >= 2 && ((b1 == 0xE0 && (p[1] & 0xE0) == 0x80) || !cont(p[1]));
        if (n < 3)
            return bad2 ? 1 : n;
        if (bad2)
            return 1;
        if (!cont(p[2]))
            return 2;
        uint32_t c = (b1 & 0x0Fu) << 12 | (p[1] & 0x3Fu) << 6 | (p[2] & 0x3Fu);
        if (c < 0xD800 || c > 0xDFFF)
            *cp = c; /* a surrogate's three bytes are one U+FFFD */
        return 3;
    }
    if ((b1 & 0xF8) == 0xF0) { /* F0..F7 */
        bool bad2 = b1 > 0xF4 || (n >= 2 && ((b1 == 0xF0 && (p[1] < 0x90 || p[1] > 0xBF)) ||
                                             (b1 == 0xF4 && (p[1] & 0xF0) != 0x80) || !cont(p[1])));
        if (n < 4) {
            if (bad2 || n == 1)
                return 1;
            return n == 3 && !cont(p[2]) ? 2 : n;
        }
        uint32_t uc = (b1 & 0x07u) << 18 | (p[1] & 0x3Fu) << 12 | (p[2] & 0x3Fu) << 6 | (p[3] & 0x3Fu);
        if (!cont(p[1]) || !cont(p[2]) || !cont(p[3]) || uc < 0x10000 || uc > 0x10FFFF)
            return bad2 ? 1 : !cont(p[2]) ? 2 : 3;
        *cp = uc;
        return 4;
    }
    return 1; /* 80..BF, C0, C1, F8..FF */
}

int32_t rmq_java_string_hash(const char *s, size_t n)
{
    uint32_t h = 0; /* Java's int arithmetic wraps: unsigned here, cast at the end */
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += java_utf8_step(p + i, n - i, &cp);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = 31 * h + (0xD800 + (cp >> 10));
            h = 31 * h + (0xDC00 + (cp & 0x3FF));
        } else {
            h = 31 * h + cp;
        }
    }
    return (int32_t)h;
}

int64_t rmq_msg_tags_code(const char *tags, size_t n)
{
    return tags && n ? rmq_java_string_hash(tags, n) : 0;
}
