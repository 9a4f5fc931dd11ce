/* offset_table.c — committed offsets as the broker keeps them (see
 * offset_table.h). Loop thread only. */
#include "offset_table.h"

#include "message_queues.h"

#include "err.h"
#include "store.h"

#include <assert.h>

int offset_table_commit(struct broker *s, const char *group, const char *topic, int32_t qid, int64_t offset)
{
    assert(group && topic);
    /* The store first: a write it refuses must not move the live view
     * (the view answers QUERY_CONSUMER_OFFSET; it may never be ahead of
     * what was acknowledged). A batch lost later is undone by
     * offset_table_reload. */
    int rc = store_put_offset(s->store, group, topic, qid, offset, broker_now_ms(s));
    if (rc == 0)
        rc = offsets_put_at(&s->offsets, group, topic, qid, offset, broker_now_ms(s));
    /* In the table at once: the queue's end counts it before the batch commits. */
    assert(rc != 0 || (offsets_find(&s->offsets, group, topic, qid) &&
                       offsets_queue_max(&s->offsets, topic, qid) >= offset));
    return rc;
}

static int reload_one(void *ctx, const char *group, const char *topic, int queue_id, int64_t offset)
{
    return offsets_put(ctx, group, topic, queue_id, offset);
}

/* Carries over what the store does not keep, for entries whose value the
 * reload did not change. */
static void keep_meta(void *ctx, const char *group, const char *topic, int32_t qid, struct offset_entry *e)
{
    const struct offset_entry *old = offsets_find(ctx, group, topic, qid);
    if (old && old->offset == e->offset) {
        e->updated_ms = old->updated_ms;
        e->reset_pending = old->reset_pending;
        e->channel_id = old->channel_id;
    }
}

int offset_table_reload(struct broker *s)
{
    if (s->offsets.changes == s->offsets_at_commit)
        return RMQ_OK;
    struct offsets fresh;
    offsets_init(&fresh);
    int rc = store_load_offsets(s->store, reload_one, &fresh);
    if (rc != 0) {
        offsets_free(&fresh);
        return rc;
    }
    offsets_each(&fresh, keep_meta, &s->offsets);
    offsets_free(&s->offsets);
    s->offsets = fresh;
    s->offsets_at_commit = s->offsets.changes;
    return RMQ_OK;
}

int64_t offset_table_queue_end(const struct broker *s, const char *topic, int32_t qid)
{
    const struct mq_range *r = message_queues_get(&s->mqs, topic, qid);
    if (r && r->end_offset > 0)
        return r->end_offset; /* the queue holds messages: one past the last committed */
    /* --queue-end zero: an empty queue, as a broker that stores no message answers (§12). */
    return s->cfg->queue_end_zero ? 0 : offsets_queue_max(&s->offsets, topic, qid);
}
