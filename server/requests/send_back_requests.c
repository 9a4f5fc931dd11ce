/* send_back_requests.c — CONSUMER_SEND_MSG_BACK (36): a message a consumer
 * failed to consume goes to its group's retry topic, or to its dead-letter
 * topic after the last retry (docs/protocol.md §13.6). Loop thread only.
 *
 * The message is found by its physical offset (what the record's
 * PHYSICALOFFSET and the offset msgId carry), copied with reconsumeTimes
 * + 1, RETRY_TOPIC (its first topic) and ORIGIN_MESSAGE_ID (its first
 * msgId), and stored in %RETRY%<group> — or %DLQ%<group> once its
 * reconsume times reach the group's maximum or the consumer asks for it
 * (delayLevel < 0) — in the open batch; the SUCCESS is held until the batch
 * commits, as every stored fact's. Delay levels are not honoured yet: the
 * retried message is delivered at once. */
#include "send_back_requests.h"

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "message_id.h"
#include "message_props.h"
#include "message_queues.h"
#include "message_record.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"
#include "topics.h"

#include <assert.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* The broker's default retryMaxTimes of a subscription group. */
#define SEND_BACK_MAX_RECONSUME 16

/* What the stored message gives the retry copy (owned copies: the row's
 * memory is the store's only for the callback). */
struct found {
    bool seen;
    char *topic;
    char *props;
    size_t props_len;
    uint8_t *body;
    size_t body_len;
    int32_t flag, sys_flag, reconsume;
    int64_t tags_code, born_ms;
    struct rmq_msg_host born, store;
};

static int take_found(void *ctx, const struct store_message *m)
{
    struct found *f = ctx;
    f->seen = true;
    f->topic = rmq_strdup(m->topic);
    f->props = rmq_malloc(m->properties_len + 1);
    f->body = rmq_malloc(m->body_len ? m->body_len : 1);
    if (!f->topic || !f->props || !f->body)
        return RMQ_ENOMEM;
    memcpy(f->props, m->properties, m->properties_len);
    f->props[m->properties_len] = 0;
    f->props_len = m->properties_len;
    if (m->body_len)
        memcpy(f->body, m->body, m->body_len);
    f->body_len = m->body_len;
    f->flag = m->flag;
    f->sys_flag = m->sys_flag;
    f->reconsume = m->reconsume_times;
    f->tags_code = m->tags_code;
    f->born_ms = m->born_ms;
    f->born = m->born_host;
    f->store = m->store_host;
    return RMQ_OK;
}

static void found_clear(struct found *f)
{
    rmq_free(f->topic);
    rmq_free(f->props);
    rmq_free(f->body);
}

/* The copy's properties: the original's, with RETRY_TOPIC and
 * ORIGIN_MESSAGE_ID kept from the first delivery or set now. */
static int retry_props(const struct found *f, const char *origin_id, struct buf *out, char *uniq, size_t cap)
{
    struct rmq_msg_props p = {0};
    char err[120];
    int rc = rmq_msg_props_parse(f->props, f->props_len, &p, err, sizeof err);
    if (rc == 0 && !rmq_msg_props_get(&p, RMQ_PROP_RETRY_TOPIC))
        rc = rmq_msg_props_set(&p, RMQ_PROP_RETRY_TOPIC, f->topic);
    if (rc == 0 && !rmq_msg_props_get(&p, RMQ_PROP_ORIGIN_MESSAGE_ID))
        rc = rmq_msg_props_set(&p, RMQ_PROP_ORIGIN_MESSAGE_ID, origin_id);
    if (rc == 0)
        rc = rmq_msg_props_encode(&p, out);
    /* The copy keeps its unique key (a consumer's dedup sees the same message). */
    const char *u = rc == 0 ? rmq_msg_props_get(&p, RMQ_PROP_UNIQ_KEY) : NULL;
    snprintf(uniq, cap, "%s", u && strlen(u) < cap ? u : "");
    rmq_msg_props_clear(&p);
    return rc;
}

/* Stores the copy at the next offset of (topic, queue 0). 0 or an error
 * (nothing reserved then). */
static int put_copy(struct broker *s, const char *topic, const struct found *f, const struct buf *props,
                    const char *uniq)
{
    int64_t offset, id;
    int rc = message_queues_reserve(&s->mqs, topic, 0, 1, &offset, &id);
    if (rc != 0)
        return rc;
    assert(offset >= 0 && id > 0);
    struct store_message m = {
        .physical_id = id,
        .topic = topic,
        .queue_id = 0,
        .queue_offset = offset,
        .born_ms = f->born_ms,
        .store_ms = broker_now_ms(s),
        .flag = f->flag,
        .sys_flag = f->sys_flag,
        .tags_code = f->tags_code,
        .reconsume_times = f->reconsume + 1,
        .body_crc = rmq_msg_body_crc(f->body, f->body_len),
        .uniq_key = uniq,
        .born_host = f->born,
        .store_host = f->store,
        .properties = (const char *)props->data,
        .properties_len = props->len,
        .body = f->body,
        .body_len = f->body_len,
    };
    rc = store_put_message(s->store, &m);
    if (rc != 0)
        message_queues_unreserve(&s->mqs, topic, 0, 1);
    return rc;
}

/* The retry or dead-letter topic of group, created (one queue) if missing. */
static bool ensure_topic(struct broker *s, const char *name, int perm)
{
    if (topics_get(&s->topics, name))
        return true;
    struct topic_broker b = {(char *)s->cfg->broker_name, 1, 1, perm};
    return broker_put_topic(s, name, &b, 1) == 0;
}

/* The subscription group's retryMaxTimes (mqadmin updateSubGroup), else the header's, else 16. */
static int64_t max_reconsume(const struct broker *s, const struct rmq_cmd *req, const char *group)
{
    int64_t v = SEND_BACK_MAX_RECONSUME;
    json_t *cfg = s->group_configs ? json_object_get(s->group_configs, group) : NULL;
    json_t *r = cfg ? json_object_get(cfg, "retryMaxTimes") : NULL;
    if (json_is_integer(r))
        v = json_integer_value(r);
    int64_t h;
    if (rmq_cmd_ext_get_i64(req, "maxReconsumeTimes", &h) == 0 && h >= 0)
        v = h;
    return v;
}

void send_back_req(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group;
    int64_t offset, delay = 0;
    if (reply_require_str(s, c, req, "group", &group) != 0 ||
        reply_require_i64(s, c, req, "offset", &offset) != 0)
        return;
    (void)rmq_cmd_ext_get_i64(req, "delayLevel", &delay);
    struct found f = {0};
    int rc = offset > 0 ? store_message_by_physical_id(s->store, offset, take_found, &f) : RMQ_ENOTFOUND;
    if (rc == RMQ_ENOTFOUND || (rc == 0 && !f.seen)) {
        found_clear(&f);
        /* Not a message rmqcoord holds: the flag says how to answer (§12). */
        if (!s->cfg->refuse_send_back) {
            reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
            return;
        }
        char remark[160];
        snprintf(remark, sizeof remark, "look message by offset failed, %lld", (long long)offset);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        return;
    }
    char topic[300], origin[RMQ_MSG_ID_V6_LEN + 1];
    const char *origin_hdr = rmq_cmd_ext_get(req, "originMsgId");
    if (rc == 0) {
        (void)rmq_msg_offset_id(&f.store, offset, origin);
        bool dead = f.reconsume >= max_reconsume(s, req, group) || delay < 0;
        snprintf(topic, sizeof topic, "%s%s", dead ? "%DLQ%" : "%RETRY%", group);
        /* PROTOCOL: a dead-letter topic is write-only, as the broker creates it. */
        if (!topics_name_ok(topic) || !ensure_topic(s, topic, dead ? TOPIC_PERM_WRITE : TOPIC_PERM_RW))
            rc = RMQ_EINVAL;
    }
    struct buf props;
    buf_init(&props, 0);
    char uniq[128];
    if (rc == 0)
        rc = retry_props(&f, origin_hdr && *origin_hdr ? origin_hdr : origin, &props, uniq, sizeof uniq);
    if (rc == 0)
        rc = put_copy(s, topic, &f, &props, uniq[0] ? uniq : NULL);
    buf_free(&props);
    found_clear(&f);
    if (rc != 0) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "send back not stored: storage error");
        return;
    }
    reply_ok(s, c, req, true);
}
