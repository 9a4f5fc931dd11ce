/* pull_requests.c — PULL_MESSAGE / LITE_PULL_MESSAGE. rmqcoord stores no messages,
 * so every pull ends in PULL_NOT_FOUND; a pull with the SUSPEND flag is held
 * (long polling) until the client's suspend timeout (capped by
 * --pull-hold-max-ms), or earlier when its group's membership changes, so
 * clients neither hot-loop nor time out (PROTOCOL: docs/protocol.md §6). A pull carrying
 * COMMIT_OFFSET commits its commitOffset, as the broker does. Loop thread only. */
#include "pull_requests.h"
#include "admin_offset_requests.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "loop.h"
#include "mem.h"
#include "offset_table.h"
#include "reply.h"
#include "request_codes.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define PULL_SYSFLAG_COMMIT_OFFSET 0x1
#define PULL_SYSFLAG_SUSPEND 0x2
#define PULL_SYSFLAG_SUBSCRIPTION 0x4
#define RESP_SUBSCRIPTION_NOT_LATEST 25

/* Sends code (PULL_NOT_FOUND or PULL_OFFSET_MOVED) with the four offsets Java unboxes; a 5.x
 * broker's (--compat broker-5) also carries groupSysFlag and topicSysFlag. */
static void answer_offsets(struct broker *s, struct conn *c, const struct rmq_cmd *req_like, int32_t code,
                           int64_t next_begin, int64_t max)
{
    assert(code == RMQ_RESP_PULL_NOT_FOUND || code == RMQ_RESP_PULL_OFFSET_MOVED);
    struct rmq_cmd resp;
    bool sys_flags = s->cfg->dialect.pull_sys_flags;
    if (rmq_cmd_init_response(&resp, req_like, code,
                              code == RMQ_RESP_PULL_NOT_FOUND ? "no new message" : "offset moved") != 0 ||
        rmq_cmd_ext_set_i64(&resp, "nextBeginOffset", next_begin) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "minOffset", 0) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "maxOffset", max) != 0 ||
        rmq_cmd_ext_set(&resp, "suggestWhichBrokerId", "0") != 0 ||
        (sys_flags && (rmq_cmd_ext_set(&resp, "groupSysFlag", "0") != 0 ||
                       rmq_cmd_ext_set(&resp, "topicSysFlag", "0") != 0))) {
        rmq_cmd_clear(&resp);
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    reply_send(s, c, req_like, &resp, false);
}

/* Sends PULL_NOT_FOUND: no message at queue_offset yet. */
static void answer_not_found(struct broker *s, struct conn *c, const struct rmq_cmd *req_like,
                             const char *topic, int32_t qid, int64_t queue_offset)
{
    int64_t max = offset_table_queue_end(s, topic, qid);
    if (queue_offset > max && !s->cfg->queue_end_zero)
        max = queue_offset;
    answer_offsets(s, c, req_like, RMQ_RESP_PULL_NOT_FOUND, queue_offset < 0 ? 0 : queue_offset, max);
}

/* --pull-checks (docs/protocol.md §12): what the broker refuses before it looks for messages —
 * a queueId the topic does not have; without the subscription flag, a group with no live
 * member, a topic it does not subscribe, a subVersion newer than its heartbeat's. */
static bool pull_refused(struct broker *s, struct conn *c, const struct rmq_cmd *req, const struct topic *tp,
                         const char *group, int32_t qid, int64_t sys_flag)
{
    const char *bname = rmq_cmd_ext_get(req, "bname");
    if (!bname || !*bname)
        bname = s->cfg->broker_name;
    char remark[400];
    for (size_t i = 0; i < tp->nbrokers; i++) {
        if (strcmp(tp->brokers[i].broker_name, bname) || qid < tp->brokers[i].read_queue_nums)
            continue;
        snprintf(remark, sizeof remark,
                 "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]", (int)qid,
                 tp->name, tp->brokers[i].read_queue_nums, c->peer);
        reply_code(s, c, req, s->cfg->dialect.pull_bad_queue_code, remark);
        return true;
    }
    if (sys_flag & PULL_SYSFLAG_SUBSCRIPTION)
        return false;
    const struct reg_group *g = registry_group(&s->reg, group);
    if (!g || g->g.nmembers == 0) {
        reply_code(s, c, req, RMQ_RESP_SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist");
        return true;
    }
    const struct rmq_subscription *sub = NULL;
    for (size_t i = 0; i < g->g.nsubs && !sub; i++)
        if (!strcmp(g->g.subs[i].topic, tp->name))
            sub = &g->g.subs[i];
    if (!sub) {
        reply_code(s, c, req, RMQ_RESP_SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist");
        return true;
    }
    int64_t sub_version = 0;
    if (rmq_cmd_ext_get_i64(req, "subVersion", &sub_version) == 0 && sub->sub_version < sub_version) {
        reply_code(s, c, req, RESP_SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest");
        return true;
    }
    return false;
}

/* --pull-checks: an offset past the queue's end (or before 0) is answered PULL_OFFSET_MOVED with
 * the corrected offset, as the broker's store does; at the end itself, PULL_NOT_FOUND. */
static bool pull_offset_moved(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *topic,
                              int32_t qid, int64_t queue_offset)
{
    int64_t end = offset_table_queue_end(s, topic, qid);
    if (queue_offset >= 0 && queue_offset <= end)
        return false;
    answer_offsets(s, c, req, RMQ_RESP_PULL_OFFSET_MOVED, queue_offset < 0 ? 0 : end, end);
    return true;
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

#ifndef NDEBUG
/* For asserts: whether no held pull matches pick(arg). */
static bool none_held(const struct broker *s, held_pull_pick pick, const void *arg)
{
    for (size_t i = 0; i < s->pulls.n; i++)
        if (pick(&s->pulls.items[i], arg))
            return false;
    return true;
}
#endif

void pull_release_group(struct broker *s, const char *group)
{
    held_pulls_release(&s->pulls, same_group, group, answer_hold, s);
    assert(none_held(s, same_group, group));
}

void pull_drop_conn(struct broker *s, const struct conn *c)
{
    /* The connection is going away: forget its holds without answering. */
    held_pulls_forget_conn(&s->pulls, c);
    held_pulls_release(&s->pulls, same_conn, NULL, NULL, NULL);
    assert(none_held(s, same_conn, c) && none_held(s, same_conn, NULL)); /* nothing left to answer on c */
}

void pull_on_timer(struct broker *s)
{
    int64_t now = broker_now_ms(s);
    held_pulls_release(&s->pulls, due, &now, answer_hold, s);
    assert(none_held(s, due, &now)); /* no pull outlives its deadline by more than a tick */
}

void pull_free_all(struct broker *s)
{
    held_pulls_free(&s->pulls);
}

static int hold(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *group,
                const char *topic, int32_t qid, int64_t queue_offset, int64_t hold_ms)
{
    /* A oneway pull is never held: nothing could answer it. */
    assert(hold_ms > 0 && !rmq_cmd_is_oneway(req));
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

void pull_req_message(struct broker *s, struct conn *c, struct rmq_cmd *req)
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
    if (s->cfg->pull_checks && pull_refused(s, c, req, tp, group, (int32_t)qid, sys_flag))
        return;
    /* An admin reset of this queue is pending: PULL_OFFSET_MOVED, and the
     * commit the pull carries is stale. */
    if (admin_offset_pull_moved(s, c, req, group, topic, (int32_t)qid, queue_offset))
        return;
    if ((sys_flag & PULL_SYSFLAG_COMMIT_OFFSET) && commit >= 0 &&
        offset_table_commit(s, group, topic, (int32_t)qid, commit) == 0) {
        struct offset_entry *e = offsets_find(&s->offsets, group, topic, (int32_t)qid);
        if (e)
            e->channel_id = c->id;
    }
    if (s->cfg->pull_checks && pull_offset_moved(s, c, req, topic, (int32_t)qid, queue_offset))
        return;
    int64_t hold_ms = suspend < s->cfg->pull_hold_max_ms ? suspend : s->cfg->pull_hold_max_ms;
    if (!(sys_flag & PULL_SYSFLAG_SUSPEND) || hold_ms <= 0 || rmq_cmd_is_oneway(req) ||
        hold(s, c, req, group, topic, (int32_t)qid, queue_offset, hold_ms) != 0)
        answer_not_found(s, c, req, topic, (int32_t)qid, queue_offset);
}
