/* message_queues.c — per-queue offset ranges of the stored messages (see
 * message_queues.h). Loop thread only. */
#include "message_queues.h"

#include "array.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>

/* Topic names are at most 255 bytes (topics_name_ok). */
#define MQ_KEY_MAX 300

static size_t make_key(char *out, size_t cap, const char *topic, int32_t qid)
{
    int n = snprintf(out, cap, "%s%c%d", topic, 0, (int)qid);
    return n < 0 ? 0 : ((size_t)n >= cap ? cap - 1 : (size_t)n);
}

static void free_range(void *p)
{
    struct mq_range *r = p;
    rmq_free(r->topic);
    rmq_free(r);
}

void message_queues_init(struct message_queues *q)
{
    hashmap_init(&q->map);
    q->next_physical_id = 1;
    q->committed_physical_id = 1;
    q->dirty = NULL;
    q->ndirty = q->dirty_cap = 0;
}

void message_queues_free(struct message_queues *q)
{
    hashmap_free(&q->map, free_range);
    rmq_free(q->dirty);
    q->dirty = NULL;
    q->ndirty = q->dirty_cap = 0;
    q->next_physical_id = q->committed_physical_id = 1;
}

const struct mq_range *message_queues_get(const struct message_queues *q, const char *topic, int32_t qid)
{
    char key[MQ_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, qid);
    return hashmap_get(&q->map, key, n);
}

void message_queues_raise_min(struct message_queues *q, const char *topic, int32_t qid, int64_t offset)
{
    char key[MQ_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, qid);
    struct mq_range *r = hashmap_get(&q->map, key, n);
    if (!r)
        return;
    if (offset > r->end_offset)
        offset = r->end_offset;
    if (offset > r->min_offset)
        r->min_offset = offset;
    assert(r->min_offset <= r->end_offset && r->end_offset <= r->next_offset);
}

static struct mq_range *range_for(struct message_queues *q, const char *topic, int32_t qid)
{
    char key[MQ_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, qid);
    struct mq_range *r = hashmap_get(&q->map, key, n);
    if (r)
        return r;
    r = rmq_calloc(1, sizeof *r);
    if (r && !(r->topic = rmq_strdup(topic))) {
        rmq_free(r);
        return NULL;
    }
    if (r)
        r->queue_id = qid;
    if (r && hashmap_put(&q->map, key, n, r, NULL) != 0) {
        free_range(r);
        return NULL;
    }
    return r;
}

int message_queues_load(struct message_queues *q, const char *topic, int32_t qid, int64_t min_offset,
                        int64_t max_offset)
{
    assert(min_offset >= 0 && max_offset >= min_offset);
    struct mq_range *r = range_for(q, topic, qid);
    if (!r)
        return RMQ_ENOMEM;
    r->min_offset = min_offset;
    r->end_offset = r->next_offset = max_offset + 1;
    return RMQ_OK;
}

int message_queues_reserve(struct message_queues *q, const char *topic, int32_t qid, int n, int64_t *offset,
                           int64_t *physical_id)
{
    assert(n > 0);
    struct mq_range *r = range_for(q, topic, qid);
    if (!r || (!r->dirty && RMQ_GROW(q->dirty, q->dirty_cap, q->ndirty + 1, 16) != 0))
        return RMQ_ENOMEM;
    if (!r->dirty) {
        r->dirty = true;
        q->dirty[q->ndirty++] = r;
    }
    *offset = r->next_offset;
    *physical_id = q->next_physical_id;
    r->next_offset += n;
    q->next_physical_id += n;
    return RMQ_OK;
}

void message_queues_unreserve(struct message_queues *q, const char *topic, int32_t qid, int n)
{
    char key[MQ_KEY_MAX];
    size_t kn = make_key(key, sizeof key, topic, qid);
    struct mq_range *r = hashmap_get(&q->map, key, kn);
    assert(n >= 0 && r && r->next_offset - n >= r->end_offset);
    if (r)
        r->next_offset -= n;
    q->next_physical_id -= n;
}

void message_queues_commit(struct message_queues *q, bool stored, mq_committed_cb cb, void *ctx)
{
    if (stored)
        q->committed_physical_id = q->next_physical_id;
    else
        q->next_physical_id = q->committed_physical_id;
    for (size_t i = 0; i < q->ndirty; i++) {
        struct mq_range *r = q->dirty[i];
        r->dirty = false;
        if (!stored) {
            r->next_offset = r->end_offset;
            continue;
        }
        bool grew = r->next_offset > r->end_offset;
        r->end_offset = r->next_offset;
        if (grew && cb)
            cb(ctx, r);
    }
    q->ndirty = 0;
}
