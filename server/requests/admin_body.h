/* admin_body.h — the JSON replies the admin codes share: a MessageQueue
 * as a map key, and a SUCCESS reply with a JSON body. Loop thread only. */
#ifndef RMQ_ADMIN_BODY_H
#define RMQ_ADMIN_BODY_H

#include "broker.h"

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* The text of a MessageQueue as a map key ({"brokerName","queueId","topic"},
 * compact, sorted), which fastjson accepts as a quoted key. New string
 * (free()) or NULL. */
char *admin_body_mq_key(const char *broker_name, const char *topic, int32_t qid);
/* Replies SUCCESS with body (a new reference, taken) encoded compactly;
 * NULL body closes the connection as reply_body does on failure. */
void admin_body_reply(struct broker *s, struct conn *c, const struct rmq_cmd *req, json_t *body,
                      bool durable);

#endif
