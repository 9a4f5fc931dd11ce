/* offsets.c — the in-memory offset table (see offsets.h). Loop thread only. */
#include "offsets.h"

#include "err.h"
#include "mem.h"

#include <stdbool.h>
#include <stdio.h>

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

static int put_box(struct hashmap *m, const char *key, size_t klen, int64_t v, bool keep_max)
{
    int64_t *box = hashmap_get(m, key, klen);
    if (box) {
        if (!keep_max || v > *box)
            *box = v;
        return RMQ_OK;
    }
    box = rmq_malloc(sizeof *box);
    if (!box)
        return RMQ_ENOMEM;
    *box = v;
    if (hashmap_put(m, key, klen, box, NULL) != 0) {
        rmq_free(box);
        return RMQ_ENOMEM;
    }
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

int offsets_put(struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t offset)
{
    char key[OFFSETS_KEY_MAX];
    size_t n = make_key(key, sizeof key, group, topic, qid);
    int rc = put_box(&o->committed, key, n, offset, false);
    if (rc == 0) {
        n = make_key(key, sizeof key, topic, NULL, qid);
        rc = put_box(&o->queue_max, key, n, offset, true);
    }
    return rc;
}

int offsets_get(const struct offsets *o, const char *group, const char *topic, int32_t qid, int64_t *out)
{
    char key[OFFSETS_KEY_MAX];
    size_t n = make_key(key, sizeof key, group, topic, qid);
    const int64_t *box = hashmap_get(&o->committed, key, n);
    if (!box)
        return RMQ_ENOTFOUND;
    *out = *box;
    return RMQ_OK;
}

int64_t offsets_queue_max(const struct offsets *o, const char *topic, int32_t qid)
{
    char key[OFFSETS_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, NULL, qid);
    const int64_t *box = hashmap_get(&o->queue_max, key, n);
    return box && *box > 0 ? *box : 0;
}
