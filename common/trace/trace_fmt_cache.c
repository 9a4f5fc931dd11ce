/* trace_fmt_cache.c — the decoder's line cache (see trace_fmt_cache.h): request
 * lines equal but for "ts" to one decoded before are answered from a copy of
 * that decode. Split from trace_fmt.c, which does the full decode. */
#include "trace_fmt_cache.h"

#include "err.h"
#include "mem.h"
#include "trace_event.h"

#include <assert.h>
#include <stdatomic.h>
#include <string.h>

/* One cached request line, one allocation: this header, the event's
 * extFields, the line's tail (everything after `{"ts":N,`) as read, then
 * the strings the event hands out as the full decode left them (unescaped,
 * NUL-terminated). The body points into the tail itself: a body is never
 * unescaped, and the tail has just been compared, so it is warm. */
struct trace_line_slot {
    size_t cap;            /* bytes in the allocation */
    unsigned char *tail;   /* in the allocation */
    struct trace_event ev; /* ts aside, what the tail decodes to; ev.tag names this fill */
};

/* A slot and what picks it, so that looking a line up reads one cache line
 * per set (four refs) and then only the slot that matches. */
struct trace_line_ref {
    uint32_t hash;                /* of the tail's first bytes */
    uint32_t len;                 /* tail length; 0: nothing kept here */
    struct trace_line_slot *slot; /* owned */
};

/* Process-wide, so that tags from two decoders never meet by accident. */
static _Atomic uint64_t last_tag;

#ifndef NDEBUG
/* One kept line: its slot holds the header, extFields, the tail and the
 * strings, and the event's body points into that tail. */
static int ref_sanity(const struct trace_line_ref *ref)
{
    if (!ref->len)
        return 1;
    const struct trace_line_slot *sl = ref->slot;
    assert(sl && ref->len <= TRACE_FMT_LINE_CACHE_MAX);
    assert(sl->tail > (const unsigned char *)sl &&
           sl->tail + ref->len <= (const unsigned char *)sl + sl->cap);
    assert(!sl->ev.body || (sl->ev.body >= sl->tail && sl->ev.body + sl->ev.body_len <= sl->tail + ref->len));
    assert(sl->ev.tag != 0);
    return 1;
}

/* The whole cache: every kept line sane, the byte count the sum of the
 * slots' sizes and within the budget. O(slots). */
static int cache_sanity(const struct trace_decoder *d)
{
    size_t bytes = 0;
    for (size_t i = 0; d->lines && i < TRACE_FMT_LINE_SLOTS; i++) {
        assert(ref_sanity(&d->lines[i]));
        bytes += d->lines[i].slot ? d->lines[i].slot->cap : 0;
    }
    assert(bytes == d->line_bytes && bytes <= TRACE_FMT_LINE_CACHE_BUDGET);
    return 1;
}
#endif

void trace_line_cache_free(struct trace_decoder *d)
{
    assert(cache_sanity(d));
    if (d->lines)
        for (size_t i = 0; i < TRACE_FMT_LINE_SLOTS; i++)
            rmq_free(d->lines[i].slot);
    rmq_free(d->lines);
    d->lines = NULL;
}

/* ---- the line cache (see trace_fmt_cache.h) ----
 *
 * Why a hit gives exactly what the full decode would: a line L = `{"ts":D,` T
 * is only looked up when D is digits get_int accepts for "ts" (no sign, no
 * leading zero, at most INT64_MAX / 4), and only matches a tail T that an
 * earlier line `{"ts":D',` T decoded from, successfully, to a request.
 * Phase one scans the prefix of both lines the same way up to T (a number,
 * then ','), so it scans T from the same state (one pair, "ts", recorded),
 * and T alone decides the rest of phase one and all of phase two but "ts";
 * the event is the cached one with ts = D. Anything else (another prefix,
 * a tail never seen, every failure) takes the full decode. */

/* Offset of the tail of a line starting with `{"ts":D,`, D as above, with
 * its value in *ts; 0 for any other line. */
static size_t ts_prefix(const unsigned char *p, size_t len, int64_t *ts)
{
    static const char head[] = "{\"ts\":";
    if (len <= sizeof head || memcmp(p, head, sizeof head - 1) != 0)
        return 0;
    const unsigned char *d0 = p + sizeof head - 1, *q = d0, *end = p + len;
    const unsigned char *lim = end - q > 19 ? q + 19 : end;
    uint64_t v = 0; /* 19 digits at most: no overflow */
    unsigned dg;
    while (q < lim && (dg = (unsigned)(*q - '0')) <= 9) {
        v = v * 10 + dg;
        q++;
    }
    size_t nd = (size_t)(q - d0);
    if (nd == 0 || nd > 18 || (*d0 == '0' && nd > 1) || q == end || *q != ',' ||
        v > (uint64_t)(INT64_MAX / 4))
        return 0;
    assert(q + 1 <= end); /* the tail starts inside the line */
    *ts = (int64_t)v;
    return (size_t)(q + 1 - p);
}

/* The tail's first bytes name the connection ("conn" comes next in what the
 * recorder writes: `"conn":4294967297,` is 18 bytes), so one connection's
 * lines share a set. Eight bytes at a time. */
static uint32_t tail_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n < 24 ? n : 24);
    size_t i = 0;
    for (; i + 8 <= n && i < 24; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    for (; i < n && i < 24; i++)
        h = (h ^ p[i]) * 0x100000001B3ULL;
    return (uint32_t)(h ^ h >> 29);
}

/* Index of the first slot of h's set. */
static size_t line_set(uint32_t h)
{
    return h % (TRACE_FMT_LINE_SLOTS / TRACE_FMT_LINE_WAYS) * TRACE_FMT_LINE_WAYS;
}

bool trace_line_hit(struct trace_decoder *d, const unsigned char *line, size_t len, struct trace_event *ev)
{
    int64_t ts;
    size_t off = d->lines && !d->line_cache_off ? ts_prefix(line, len, &ts) : 0;
    if (!off)
        return false;
    const unsigned char *t = line + off;
    size_t n = len - off;
    uint32_t h = tail_hash(t, n);
    const struct trace_line_ref *set = &d->lines[line_set(h)];
    for (size_t w = 0; w < TRACE_FMT_LINE_WAYS; w++) {
        if (set[w].len != n || set[w].hash != h || memcmp(set[w].slot->tail, t, n) != 0)
            continue;
        assert(ref_sanity(&set[w]));
        *ev = set[w].slot->ev;
        ev->ts = ts;
        return true;
    }
    return false;
}

/* Where a pointer of the event decoded into the line buffer p[0..len] goes
 * in a slot. */
struct relocation {
    uintptr_t base, tail, end; /* p, p + off, p + len + 1 */
    unsigned char *strings;    /* next free byte of the slot's string area (NULL: sizing only) */
    size_t used;
    bool ok; /* false: a pointer into the ts prefix, which the slot does not keep */
};

/* A NUL-terminated string: copied to the string area when it lies in the
 * line buffer; a static string (ext booleans) stays. */
static const char *relocate_str(struct relocation *r, const char *q)
{
    uintptr_t u = (uintptr_t)q;
    if (!q || u < r->base || u >= r->end)
        return q;
    if (u < r->tail) {
        r->ok = false;
        return q;
    }
    size_t n = strlen(q) + 1;
    const char *out = q;
    if (r->strings) {
        memcpy(r->strings + r->used, q, n);
        out = (const char *)(r->strings + r->used);
    }
    r->used += n;
    return out;
}

/* Fills the slot's event from ev, its strings into the string area. */
static void relocate(struct relocation *r, const struct trace_event *ev, struct trace_event *out,
                     struct trace_kv *kv)
{
    *out = *ev;
    out->peer = relocate_str(r, ev->peer);
    for (size_t i = 0; i < ev->next; i++) {
        const char *k = relocate_str(r, ev->ext[i].key), *v = relocate_str(r, ev->ext[i].val);
        if (kv)
            kv[i] = (struct trace_kv){k, v};
    }
    out->ext = kv;
}

/* Keeps a request line that decoded in full, its buffer at p; failing to
 * keep it costs only speed. */
void trace_line_remember(struct trace_decoder *d, const unsigned char *line, size_t len,
                         const unsigned char *p, struct trace_event *ev)
{
    int64_t ts;
    size_t off = ts_prefix(line, len, &ts), n = len - off;
    uintptr_t tail = (uintptr_t)p + off, body = (uintptr_t)ev->body;
    /* Only the fields a request has; its body lies in the tail (never bodyBase64 here). */
    if (!off || n > TRACE_FMT_LINE_CACHE_MAX || ev->broker || ev->group || ev->reason || ev->topic ||
        ev->brokers || (ev->body && (body < tail || body + ev->body_len > tail + n)))
        return;
    struct relocation r = {(uintptr_t)p, tail, (uintptr_t)p + len + 1, NULL, 0, true};
    struct trace_event sized;
    relocate(&r, ev, &sized, NULL);
    size_t head = sizeof(struct trace_line_slot) + ev->next * sizeof(struct trace_kv);
    size_t need = head + n + r.used;
    if (!r.ok)
        return;
    if (!d->lines && !(d->lines = rmq_calloc(TRACE_FMT_LINE_SLOTS, sizeof *d->lines)))
        return;
    uint32_t h = tail_hash(line + off, n);
    struct trace_line_ref *set = &d->lines[line_set(h)], *ref = NULL;
    for (size_t w = 0; w < TRACE_FMT_LINE_WAYS && !ref; w++)
        if (set[w].len && set[w].hash == h)
            ref = &set[w]; /* the same connection's previous line, most likely: replace it */
    for (size_t w = 0; w < TRACE_FMT_LINE_WAYS && !ref; w++)
        if (!set[w].len)
            ref = &set[w];
    if (!ref)
        ref = &set[d->line_evict++ % TRACE_FMT_LINE_WAYS];
    ref->len = 0;
    size_t had = ref->slot ? ref->slot->cap : 0;
    if (had < need) {
        if (d->line_bytes - had + need > TRACE_FMT_LINE_CACHE_BUDGET)
            return;
        struct trace_line_slot *sl = rmq_realloc(ref->slot, need);
        if (!sl)
            return;
        d->line_bytes = d->line_bytes - had + need;
        ref->slot = sl;
        sl->cap = need;
    }
    struct trace_line_slot *sl = ref->slot;
    struct trace_kv *kv = (struct trace_kv *)(void *)(sl + 1);
    sl->tail = (unsigned char *)sl + head;
    memcpy(sl->tail, line + off, n);
    r.strings = sl->tail + n;
    r.used = 0;
    relocate(&r, ev, &sl->ev, kv);
    assert(r.ok && head + n + r.used == need && need <= sl->cap); /* the sizing pass counted it all */
    if (ev->body)
        sl->ev.body = sl->tail + (body - tail);
    sl->ev.tag = ev->tag = atomic_fetch_add(&last_tag, 1) + 1;
    ref->hash = h;
    ref->len = (uint32_t)n;
    assert(ref_sanity(ref) && d->line_bytes <= TRACE_FMT_LINE_CACHE_BUDGET);
}
