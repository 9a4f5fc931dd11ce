/* admin_reply.h — the JSON replies the admin codes share: a MessageQueue
 * as a map key, and a SUCCESS reply with a JSON body. Loop thread only. */
#ifndef RMQ_ADMIN_REPLY_H
#define RMQ_ADMIN_REPLY_H

#include "broker.h"

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* The text of a MessageQueue as a map key ({"brokerName","queueId","topic"},
 * compact, sorted), which fastjson accepts as a quoted key. New string
 * (free()) or NULL. */
char *admin_reply_mq_key(const char *broker_name, const char *topic, int32_t qid);
/* Replies SUCCESS with body (a new reference, taken) encoded compactly;
 * NULL body closes the connection as reply_body does on failure. */
void admin_reply_json(struct broker *s, struct conn *c, const struct rmq_cmd *req, json_t *body,
                      bool durable);

#endif
