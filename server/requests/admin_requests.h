/* admin_requests.h — the codes admin tools (RocketMQ's mqadmin) send to a
 * broker and name server, one file per family (tests/mqadmin/FINDINGS.md §3):
 *   admin_topic_requests.c   topic list (206), stats (202), config (351),
 *                            runtime info (28), create (17), delete (215, 216),
 *                            DELETE_KV_CONFIG (102);
 *   admin_group_requests.c   subscription-group configs (200, 201, 207) and
 *                            GET_CONSUMER_RUNNING_INFO (307) forwarded to the client;
 *   admin_offset_requests.c  consume stats (208), the server-side offset reset
 *                            (222, with RESET_CONSUMER_CLIENT_OFFSET 220 pushed to
 *                            live clients) and its "reset pending" marks.
 * Loop thread only. */
#ifndef RMQ_ADMIN_REQUESTS_H
#define RMQ_ADMIN_REQUESTS_H

#include "broker.h"
#include "buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* admin_topic_requests.c */
void handle_topic_list(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_topic_stats(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_topic_config(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_broker_runtime_info(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_create_topic(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_delete_topic_in_broker(struct broker *s, struct conn *c, struct rmq_cmd *req);
/* 216 in --role both (215 already deleted it) and 102: nothing to do, 0. */
void handle_admin_noop(struct broker *s, struct conn *c, struct rmq_cmd *req);

/* The text of a MessageQueue as a map key ({"brokerName","queueId","topic"},
 * compact, sorted), which fastjson accepts as a quoted key. New string
 * (free()) or NULL. */
char *admin_mq_key(const char *broker_name, const char *topic, int32_t qid);
/* Replies SUCCESS with body (a new reference, taken) encoded compactly;
 * NULL body closes the connection as reply_body does on failure. */
void admin_reply_json(struct broker *s, struct conn *c, const struct rmq_cmd *req, json_t *body,
                      bool durable);

/* admin_group_requests.c */
void handle_update_sub_group(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_get_all_sub_groups(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_delete_sub_group(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_forward_running_info(struct broker *s, struct conn *c, struct rmq_cmd *req);

/* admin_offset_requests.c */
void handle_consume_stats(struct broker *s, struct conn *c, struct rmq_cmd *req);
void handle_reset_offset(struct broker *s, struct conn *c, struct rmq_cmd *req);
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

/* At start: the stored subscription-group configs and the offsets' commit
 * times. 0 or an error (logged). */
int admin_requests_load(struct broker *s);
/* Frees the config table (shutdown, reset). */
void admin_requests_free(struct broker *s);

#endif
