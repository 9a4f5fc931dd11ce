/* offset_table.h — committed offsets as the broker keeps them: in memory
 * (model/offsets.c, for answers) and in the store batch (for restarts); the
 * request files (offset_, pull_, admin_*_requests.c) and the admin API
 * commit and read them here. Loop thread only. */
#ifndef RMQ_OFFSET_TABLE_H
#define RMQ_OFFSET_TABLE_H

#include "broker.h"

#include <stdint.h>

/* Commits group's offset of (topic, qid): the in-memory table and a store
 * write in the open batch. 0 or an error. */
int offset_table_commit(struct broker *s, const char *group, const char *topic, int32_t qid, int64_t offset);
/* After a batch was lost: the in-memory offsets go back to what the store
 * holds (what was acknowledged), keeping each unchanged entry's reporting
 * channel and reset flag. Nothing happens when no offset moved since the
 * last good commit. 0 or the store's error (the table is then unchanged). */
int offset_table_reload(struct broker *s);
/* A queue's max offset as rmqcoord answers it: one past its last committed message; for a queue
 * without messages the highest committed offset, or 0 with --queue-end zero. */
int64_t offset_table_queue_end(const struct broker *s, const char *topic, int32_t qid);

#endif
