/* message_retention.c — see message_retention.h. The bounds are checked on
 * what the store's per-queue summary and the loop's queue ranges already
 * hold, so a pass over bounds that hold costs a few rows, not a scan. */
#include "message_retention.h"

#include "err.h"
#include "log.h"
#include "loop.h"
#include "message_queues.h"
#include "store.h"

#include <assert.h>
#include <stdint.h>

#define RETENTION_PERIOD_MS 1000

static void gone(void *ctx, const char *topic, int queue_id, int64_t queue_offset, int64_t size)
{
    struct broker *s = ctx;
    (void)size;
    message_queues_raise_min(&s->mqs, topic, (int32_t)queue_id, queue_offset + 1);
    s->stats.messages_retired++;
}

/* Per queue over --max-queue-messages: its oldest go. */
static int retain_queues(struct broker *s, int *total, bool *behind)
{
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&s->mqs.map, &b); e; e = hashmap_next(&s->mqs.map, e, &b)) {
        const struct mq_range *r = e->val;
        int64_t count = r->end_offset - r->min_offset; /* offsets are consecutive, deletes only below */
        assert(count >= 0);
        if (count <= s->cfg->max_queue_messages)
            continue;
        int n = 0;
        int rc = store_retain_queue(s->store, r->topic, r->queue_id, count, 0, s->cfg->max_queue_messages, 0,
                                    MESSAGE_RETENTION_CHUNK, gone, s, &n);
        if (rc != 0)
            return rc;
        *total += n;
        if (count - n > s->cfg->max_queue_messages)
            *behind = true;
    }
    return RMQ_OK;
}

int message_retention_run(struct broker *s)
{
    int64_t now = loop_now_ms(s->loop);
    if (now < s->retention_next_ms || s->mqs.map.count == 0)
        return 0;
    bool behind = false;
    int total = 0;
    int rc = retain_queues(s, &total, &behind);
    int64_t messages = 0, bytes = 0;
    if (rc == 0)
        rc = store_message_totals(s->store, &messages, &bytes);
    if (rc == 0 && bytes > s->cfg->max_message_bytes) {
        int n = 0;
        rc = store_retain_total(s->store, bytes, s->cfg->max_message_bytes, MESSAGE_RETENTION_CHUNK, gone, s,
                                &n);
        total += n;
        behind = behind || n == MESSAGE_RETENTION_CHUNK;
    }
    /* Behind (a chunk was not enough): the next turn goes on; else rest. */
    s->retention_next_ms = now + (behind && rc == 0 ? 0 : RETENTION_PERIOD_MS);
    assert(rc != 0 || total >= 0);
    return rc != 0 ? rc : total;
}
