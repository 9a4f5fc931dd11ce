/* message_retention.h — keeps the stored messages within
 * --max-queue-messages per queue and --max-message-bytes in all. Loop
 * thread only. */
#ifndef RMQ_MESSAGE_RETENTION_H
#define RMQ_MESSAGE_RETENTION_H

#include "broker.h"

/* Once a second (every turn while behind), deletes the oldest messages over
 * the bounds, at most MESSAGE_RETENTION_CHUNK per queue and per pass, in the
 * open batch, and raises each queue's min offset to match: a pull below it
 * then gets PULL_OFFSET_MOVED, as on the broker after its files are
 * deleted. A queue's newest message always stays (it carries the queue's
 * next offset over a restart). Returns how many messages went, or an
 * error (logged by the caller). */
int message_retention_run(struct broker *s);

#define MESSAGE_RETENTION_CHUNK 1000

#endif
