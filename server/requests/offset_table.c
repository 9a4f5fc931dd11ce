/* offset_table.c — committed offsets as the broker keeps them (see
 * offset_table.h). Loop thread only. */
#include "offset_table.h"

#include "store.h"

#include <assert.h>

int offset_table_commit(struct broker *s, const char *group, const char *topic, int32_t qid, int64_t offset)
{
    assert(group && topic);
    int rc = offsets_put_at(&s->offsets, group, topic, qid, offset, broker_now_ms(s));
    /* In the table at once: the queue's end counts it before the batch commits. */
    assert(rc != 0 || (offsets_find(&s->offsets, group, topic, qid) &&
                       offsets_queue_max(&s->offsets, topic, qid) >= offset));
    if (rc == 0)
        rc = store_put_offset(s->store, group, topic, qid, offset, broker_now_ms(s));
    return rc;
}

int64_t offset_table_queue_end(const struct broker *s, const char *topic, int32_t qid)
{
    /* --queue-end zero: an empty queue, as a broker that stores no message answers (§12). */
    return s->cfg->queue_end_zero ? 0 : offsets_queue_max(&s->offsets, topic, qid);
}
