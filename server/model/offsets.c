/* offsets.c — the in-memory offset table (see offsets.h). Loop thread only. */
#include "offsets.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Key text is bounded by the name limits (topics_name_ok, group names):
 * 600 bytes hold two 255-byte names, two NULs and a queue id. */
#define OFFSETS_KEY_MAX 600

/* Builds the key "a\0b\0<qid>" (or "a\0<qid>" without b) into out; returns its length. */
static size_t make_key(char *out, size_t cap, const char *a, const char *b, int32_t qid)
{
    int n = b ? snprintf(out, cap, "%s%c%s%c%d", a, 0, b, 0, (int)qid)
              : snprintf(out, cap, "%s%c%d", a, 0, (int)qid);
    return n < 0 ? 0 : ((size_t)n >= cap ? cap - 1 : (size_t)n);
}

/* The value of key in m, added zeroed (size bytes) when absent, which
 * *added tells; NULL when out of memory. */
static void *value_for(struct hashmap *m, const char *key, size_t klen, size_t size, bool *added)
{
    void *v = hashmap_get(m, key, klen);
    *added = !v;
    if (v)
        return v;
    v = rmq_calloc(1, size);
    if (v && hashmap_put(m, key, klen, v, NULL) != 0) {
        rmq_free(v);
        return NULL;
    }
    return v;
}

static int put_box(struct hashmap *m, const char *key, size_t klen, int64_t v, bool keep_max)
{
    bool added;
    int64_t *box = value_for(m, key, klen, sizeof *box, &added);
    if (!box)
        return RMQ_ENOMEM;
    if (added || !keep_max || v > *box)
        *box = v;
    return RMQ_OK;
}

static void free_box(void *p)
{
    rmq_free(p);
}

void offsets_init(struct offsets *o)
{
    hashmap_init(&o->committed);
    hashmap_init(&o->queue_max);
}

void offsets_free(struct offsets *o)
{
    hashmap_free(&o->committed, free_box);
    hashmap_free(&o->queue_max, free_box);
}

/* The committed entry of key, created (offset 0) when absent; NULL when out of memory. */
static struct offset_entry *entry_for(struct hashmap *m, const char *key, size_t klen)
{
    bool added;
    return value_for(m, key, klen, sizeof(struct offset_entry), &added);
}

int offsets_put_at(struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t offset,
                   int64_t now_ms)
{
    o->changes++;
    char key[OFFSETS_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, NULL, qid);
    /* The queue's max first: a failure then leaves the committed table as it was. */
    int rc = put_box(&o->queue_max, key, n, offset, true);
    if (rc != 0)
        return rc;
    n = make_key(key, sizeof key, group, topic, qid);
    struct offset_entry *e = entry_for(&o->committed, key, n);
    if (!e)
        return RMQ_ENOMEM;
    e->offset = offset;
    e->updated_ms = now_ms;
    /* The queue's max is the highest offset any group committed. */
    assert(offsets_queue_max(o, topic, qid) >= (offset > 0 ? offset : 0));
    return RMQ_OK;
}

int offsets_put(struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t offset)
{
    return offsets_put_at(o, group, topic, qid, offset, 0);
}

struct offset_entry *offsets_find(const struct offsets *o, const char *group, const char *topic, int32_t qid)
{
    char key[OFFSETS_KEY_MAX];
    size_t n = make_key(key, sizeof key, group, topic, qid);
    return hashmap_get(&o->committed, key, n);
}

/* Splits a committed key "group\0topic\0qid". */
static void split_key(const struct hashmap_entry *e, const char **group, const char **topic, int32_t *qid)
{
    *group = e->key;
    *topic = e->key + strlen(e->key) + 1;
    assert((size_t)(*topic - e->key) <= e->klen); /* the key has its three parts */
    *qid = (int32_t)atoi(*topic + strlen(*topic) + 1);
}

void offsets_each(const struct offsets *o, offsets_visit visit, void *ctx)
{
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&o->committed, &b); e;
         e = hashmap_next(&o->committed, e, &b)) {
        const char *group, *topic;
        int32_t qid;
        split_key(e, &group, &topic, &qid);
        visit(ctx, group, topic, qid, e->val);
    }
}

/* Removes every committed entry (and, with topic, every queue max) that
 * matches: group and/or topic, NULL = any. Returns the committed count removed. */
static size_t remove_where(struct offsets *o, const char *group, const char *topic)
{
    size_t removed = 0, b;
    for (int pass = 0; pass < 2; pass++) {
        struct hashmap *m = pass == 0 ? &o->committed : &o->queue_max;
        if (pass == 1 && !topic)
            break;
        /* Collect first: removing while walking the buckets would skip entries. */
        size_t n = 0, cap = m->count ? m->count : 1;
        struct hashmap_entry **hit = rmq_malloc(cap * sizeof *hit);
        if (!hit)
            return removed;
        for (struct hashmap_entry *e = hashmap_first(m, &b); e; e = hashmap_next(m, e, &b)) {
            assert(n < cap); /* cap is the count: no more entries than that */
            const char *eg = e->key, *et = pass == 0 ? e->key + strlen(e->key) + 1 : e->key;
            if ((!group || !strcmp(eg, group)) && (!topic || !strcmp(et, topic)))
                hit[n++] = e;
        }
        for (size_t i = 0; i < n; i++) {
            /* Copy the key: hashmap_remove frees the entry that holds it. */
            char key[OFFSETS_KEY_MAX];
            size_t klen = hit[i]->klen < sizeof key ? hit[i]->klen : sizeof key - 1;
            memcpy(key, hit[i]->key, klen);
            rmq_free(hashmap_remove(m, key, klen));
        }
        if (pass == 0)
            removed = n;
        assert(hashmap_sanity(m)); /* the pass walked the whole map */
        rmq_free(hit);
    }
    return removed;
}

size_t offsets_delete_topic(struct offsets *o, const char *topic)
{
    o->changes++;
    return remove_where(o, NULL, topic);
}

size_t offsets_delete_group(struct offsets *o, const char *group)
{
    o->changes++;
    return remove_where(o, group, NULL);
}

int offsets_get(const struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t *out)
{
    char key[OFFSETS_KEY_MAX];
    size_t n = make_key(key, sizeof key, group, topic, qid);
    const struct offset_entry *e = hashmap_get(&o->committed, key, n);
    if (!e)
        return RMQ_ENOTFOUND;
    *out = e->offset;
    return RMQ_OK;
}

int64_t offsets_queue_max(const struct offsets *o, const char *topic, int32_t qid)
{
    char key[OFFSETS_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, NULL, qid);
    const int64_t *box = hashmap_get(&o->queue_max, key, n);
    return box && *box > 0 ? *box : 0;
}
