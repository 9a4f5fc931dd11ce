/* pull_requests.c — PULL_MESSAGE / LITE_PULL_MESSAGE. rmqcoord stores no messages,
 * so every pull ends in PULL_NOT_FOUND; a pull with the SUSPEND flag is held
 * (long polling) until the client's suspend timeout (capped by
 * --pull-hold-max-ms), or earlier when its group's membership changes, so
 * clients neither hot-loop nor time out (PROTOCOL: docs/protocol.md §6). A pull carrying
 * COMMIT_OFFSET commits its commitOffset, as the broker does. Loop thread only. */
#include "pull_requests.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "loop.h"
#include "mem.h"
#include "reply.h"
#include "request_codes.h"

#include <string.h>

#define PULL_SYSFLAG_COMMIT_OFFSET 0x1
#define PULL_SYSFLAG_SUSPEND 0x2

/* Sends PULL_NOT_FOUND with the four offsets Java unboxes. */
static void answer_not_found(struct broker *s, struct conn *c, const struct rmq_cmd *req_like,
                             const char *topic, int32_t qid, int64_t queue_offset)
{
    int64_t max = offsets_queue_max(&s->offsets, topic, qid);
    if (queue_offset > max)
        max = queue_offset;
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req_like, RMQ_RESP_PULL_NOT_FOUND, "no new message") != 0 ||
        rmq_cmd_ext_set_i64(&resp, "nextBeginOffset", queue_offset < 0 ? 0 : queue_offset) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "minOffset", 0) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "maxOffset", max) != 0 ||
        rmq_cmd_ext_set(&resp, "suggestWhichBrokerId", "0") != 0) {
        rmq_cmd_clear(&resp);
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    reply_send(s, c, req_like, &resp, false);
}

/* Answers one released hold (nothing when its connection closed). */
static void answer_hold(void *ctx, const struct held_pull *h)
{
    struct broker *s = ctx;
    struct rmq_cmd like;
    rmq_cmd_init(&like);
    like.opaque = h->opaque;
    like.version = h->version;
    like.serialize_type = h->serialize_type;
    if (h->conn && !h->conn->closing)
        answer_not_found(s, h->conn, &like, h->topic, h->queue_id, h->queue_offset);
}

static bool same_group(const struct held_pull *h, const void *arg)
{
    return !strcmp(h->group, arg);
}
static bool same_conn(const struct held_pull *h, const void *arg)
{
    return h->conn == arg;
}
static bool due(const struct held_pull *h, const void *arg)
{
    return h->deadline_ms <= *(const int64_t *)arg;
}

void pull_release_group(struct broker *s, const char *group)
{
    held_pulls_release(&s->pulls, same_group, group, answer_hold, s);
}

void pull_drop_conn(struct broker *s, const struct conn *c)
{
    /* The connection is going away: forget its holds without answering. */
    held_pulls_forget_conn(&s->pulls, c);
    held_pulls_release(&s->pulls, same_conn, NULL, NULL, NULL);
}

void pull_on_timer(struct broker *s)
{
    int64_t now = broker_now_ms(s);
    held_pulls_release(&s->pulls, due, &now, answer_hold, s);
}

void pull_free_all(struct broker *s)
{
    held_pulls_free(&s->pulls);
}

static int hold(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *group,
                const char *topic, int32_t qid, int64_t queue_offset, int64_t hold_ms)
{
    struct held_pull h = {
        .conn = c,
        .opaque = req->opaque,
        .version = req->version,
        .serialize_type = req->serialize_type,
        .group = rmq_strdup(group),
        .topic = rmq_strdup(topic),
        .queue_id = qid,
        .queue_offset = queue_offset,
        .deadline_ms = broker_now_ms(s) + hold_ms,
    };
    if (!h.group || !h.topic || held_pulls_add(&s->pulls, &h) != 0) {
        rmq_free(h.group);
        rmq_free(h.topic);
        return RMQ_ENOMEM;
    }
    return RMQ_OK;
}

void handle_pull(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group, *topic;
    int64_t qid, queue_offset, sys_flag = 0, commit = -1, suspend = 0;
    if (reply_require_str(s, c, req, "consumerGroup", &group) != 0 ||
        reply_require_str(s, c, req, "topic", &topic) != 0 ||
        reply_require_i64(s, c, req, "queueId", &qid) != 0 ||
        reply_require_i64(s, c, req, "queueOffset", &queue_offset) != 0)
        return;
    if (qid < 0 || qid > INT32_MAX) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "queueId out of range");
        return;
    }
    /* Optional fields: absent or malformed ones take the conservative default. */
    (void)rmq_cmd_ext_get_i64(req, "sysFlag", &sys_flag);
    (void)rmq_cmd_ext_get_i64(req, "commitOffset", &commit);
    (void)rmq_cmd_ext_get_i64(req, "suspendTimeoutMillis", &suspend);
    const struct topic *tp = topics_get(&s->topics, topic);
    if (!tp) {
        reply_code(s, c, req, RMQ_RESP_TOPIC_NOT_EXIST, "topic does not exist");
        return;
    }
    if ((sys_flag & PULL_SYSFLAG_COMMIT_OFFSET) && commit >= 0)
        (void)broker_offset_commit(s, group, topic, (int32_t)qid, commit);
    int64_t hold_ms = suspend < s->cfg->pull_hold_max_ms ? suspend : s->cfg->pull_hold_max_ms;
    if (!(sys_flag & PULL_SYSFLAG_SUSPEND) || hold_ms <= 0 || rmq_cmd_is_oneway(req) ||
        hold(s, c, req, group, topic, (int32_t)qid, queue_offset, hold_ms) != 0)
        answer_not_found(s, c, req, topic, (int32_t)qid, queue_offset);
}
