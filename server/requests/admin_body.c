/* admin_body.c — the JSON replies the admin codes share (see
 * admin_body.h). Loop thread only. */
#include "admin_body.h"

#include "buf.h"
#include "err.h"
#include "reply.h"

#include <assert.h>
#include <stdlib.h>

char *admin_body_mq_key(const char *broker_name, const char *topic, int32_t qid)
{
    assert(broker_name && topic && qid >= 0);
    json_t *k =
        json_pack("{s:s,s:i,s:s}", "brokerName", broker_name, "queueId", (json_int_t)qid, "topic", topic);
    char *text = k ? json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(k);
    return text;
}

void admin_body_reply(struct broker *s, struct conn *c, const struct rmq_cmd *req, json_t *body, bool durable)
{
    struct buf b;
    buf_init(&b, 0);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    int rc = text ? buf_append_str(&b, text) : RMQ_ENOMEM;
    free(text);
    reply_body(s, c, req, rc, &b, durable);
}
