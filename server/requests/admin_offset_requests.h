/* admin_offset_requests.h — consume stats (208), the server-side offset
 * reset (222, with RESET_CONSUMER_CLIENT_OFFSET 220 pushed to live
 * clients) and its "reset pending" marks (tests/mqadmin/FINDINGS.md §3).
 * Loop thread only. */
#ifndef RMQ_ADMIN_OFFSET_REQUESTS_H
#define RMQ_ADMIN_OFFSET_REQUESTS_H

#include "broker.h"

#include <stdbool.h>
#include <stdint.h>

void admin_offset_req_consume_stats(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_offset_req_reset(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* A client's own commit of offset for (group, topic, qid): false while an
 * admin reset of that queue is pending and offset is not the reset one (the
 * commit is then acknowledged and dropped). Committing the reset offset
 * itself ends the reset. */
bool admin_offset_commit_allowed(struct broker *s, const char *group, const char *topic, int32_t qid,
                                 int64_t offset);
/* A pull of (group, topic, qid) at queue_offset while a reset is pending:
 * at the reset offset, the client has moved (the mark is cleared, false:
 * serve the pull); elsewhere it is answered PULL_OFFSET_MOVED with the reset
 * offset (true), and the commit it carries is stale. */
bool admin_offset_pull_moved(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *group,
                             const char *topic, int32_t qid, int64_t queue_offset);

/* An offset reset (222, and the admin API's): every queue below the
 * topic's writeQueueNums (or queue_id only, when >= 0) goes to offset when
 * >= 0, else to the queue's end (timestamp: -1 or a time; no message is
 * stored, so both give the end); without force, a target not below the
 * committed offset keeps the committed one. */
struct admin_reset {
    const char *group, *topic;
    int64_t timestamp;
    int64_t queue_id, offset;
    bool force, dry_run;
};
struct admin_reset_row {
    const char *broker_name; /* borrowed from the topic table: use before the loop runs again */
    int32_t queue_id;
    bool had;         /* a committed offset existed */
    int64_t from, to; /* committed before (0 when none), after */
};
/* Computes the rows (new array, rmq_free) and, unless dry_run, commits them
 * in the store batch, marks them reset pending, releases the held pulls
 * with PULL_OFFSET_MOVED and sends RESET_CONSUMER_CLIENT_OFFSET to the
 * group's live channels. 0, RMQ_ENOTFOUND (no such topic), or an error. */
int admin_offset_reset(struct broker *s, const struct admin_reset *r, struct admin_reset_row **rows,
                       size_t *n);

#endif
