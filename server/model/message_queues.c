/* message_queues.c — per-queue offset ranges of the stored messages (see
 * message_queues.h). Loop thread only. */
#include "message_queues.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
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
    rmq_free(p);
}

void message_queues_init(struct message_queues *q)
{
    hashmap_init(&q->map);
    q->next_physical_id = 1;
}

void message_queues_free(struct message_queues *q)
{
    hashmap_free(&q->map, free_range);
    q->next_physical_id = 1;
}

const struct mq_range *message_queues_get(const struct message_queues *q, const char *topic, int32_t qid)
{
    char key[MQ_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, qid);
    return hashmap_get(&q->map, key, n);
}

static struct mq_range *range_for(struct message_queues *q, const char *topic, int32_t qid)
{
    char key[MQ_KEY_MAX];
    size_t n = make_key(key, sizeof key, topic, qid);
    struct mq_range *r = hashmap_get(&q->map, key, n);
    if (r)
        return r;
    r = rmq_calloc(1, sizeof *r);
    if (r && hashmap_put(&q->map, key, n, r, NULL) != 0) {
        rmq_free(r);
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
    r->next_offset = max_offset + 1;
    return RMQ_OK;
}

int message_queues_reserve(struct message_queues *q, const char *topic, int32_t qid, int n, int64_t *offset,
                           int64_t *physical_id)
{
    assert(n > 0);
    struct mq_range *r = range_for(q, topic, qid);
    if (!r)
        return RMQ_ENOMEM;
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
    assert(r && r->next_offset - n >= r->min_offset);
    if (r)
        r->next_offset -= n;
    q->next_physical_id -= n;
}
