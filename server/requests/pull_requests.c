/* pull_requests.c — PULL_MESSAGE / LITE_PULL_MESSAGE. A queue with committed
 * messages answers FOUND with the stored records (tag-filtered), or
 * PULL_OFFSET_MOVED / PULL_RETRY_IMMEDIATELY as the broker's store maps its
 * status; a queue without any, and a pull at its end, PULL_NOT_FOUND. A pull
 * with the SUSPEND flag at the end is held until a message for its queue
 * commits or
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
#include "message_props.h"
#include "message_queues.h"
#include "message_record.h"
#include "offset_table.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"
#include "store_messages.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* What one pull returns at most: the broker's in-memory transfer limits. */
#define PULL_MAX_MSGS 32
#define PULL_MAX_BYTES (256 * 1024)
#define PULL_MAX_TAGS 64

#define PULL_SYSFLAG_COMMIT_OFFSET 0x1
#define PULL_SYSFLAG_SUSPEND 0x2
#define PULL_SYSFLAG_SUBSCRIPTION 0x4
#define RESP_SUBSCRIPTION_NOT_LATEST 25

/* Sends code with the four offsets Java unboxes and body (may be NULL; its
 * bytes are taken); a 5.x broker's (--compat broker-5) also carries
 * groupSysFlag and topicSysFlag. */
static void answer_pull(struct broker *s, struct conn *c, const struct rmq_cmd *req_like, int32_t code,
                        int64_t next_begin, int64_t min, int64_t max, struct buf *body)
{
    struct rmq_cmd resp;
    bool sys_flags = s->cfg->dialect.pull_sys_flags;
    const char *remark = code == RMQ_RESP_PULL_NOT_FOUND      ? "no new message"
                         : code == RMQ_RESP_PULL_OFFSET_MOVED ? "offset moved"
                         : code == RMQ_RESP_SUCCESS           ? NULL
                                                              : "no matched message, retry";
    int rc = rmq_cmd_init_response(&resp, req_like, code, remark);
    if (rc == 0 && body && buf_live(body) > 0) {
        rc = rmq_cmd_set_body_copy(&resp, buf_head(body), buf_live(body));
    }
    if (rc != 0 || rmq_cmd_ext_set_i64(&resp, "nextBeginOffset", next_begin) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "minOffset", min) != 0 ||
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

static void answer_offsets(struct broker *s, struct conn *c, const struct rmq_cmd *req_like, int32_t code,
                           int64_t next_begin, int64_t max)
{
    assert(code == RMQ_RESP_PULL_NOT_FOUND || code == RMQ_RESP_PULL_OFFSET_MOVED);
    answer_pull(s, c, req_like, code, next_begin, 0, max, NULL);
}

/* The committed messages of a queue: NULL when it never had one (then the
 * answers of a broker with an empty queue apply). */
static const struct mq_range *stored_range(const struct broker *s, const char *topic, int32_t qid)
{
    const struct mq_range *r = message_queues_get(&s->mqs, topic, qid);
    return r && r->end_offset > 0 ? r : NULL;
}

/* Sends PULL_NOT_FOUND: no message at queue_offset yet. */
static void answer_not_found(struct broker *s, struct conn *c, const struct rmq_cmd *req_like,
                             const char *topic, int32_t qid, int64_t queue_offset)
{
    const struct mq_range *r = stored_range(s, topic, qid);
    if (r) {
        answer_pull(s, c, req_like, RMQ_RESP_PULL_NOT_FOUND, queue_offset, r->min_offset, r->end_offset,
                    NULL);
        return;
    }
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

/* Which tags codes a pull takes: all, or those listed (the broker's
 * ExpressionMessageFilter by consume queue: TAG expressions only). */
struct pull_filter {
    bool all;
    int64_t codes[PULL_MAX_TAGS];
    size_t ncodes;
    /* A SQL92 (or other non-TAG) expression: rmqcoord does not evaluate
     * them, and delivering unfiltered would hand a consumer messages its
     * expression excludes (the client does not filter SQL92 again). */
    const char *refused_type;
};

/* From the pull's own subscription (sysFlag SUBSCRIPTION): "a || b". */
static void filter_from_expr(struct pull_filter *f, const char *type, const char *expr)
{
    f->all = true;
    f->ncodes = 0;
    f->refused_type = NULL;
    if (type && *type && strcmp(type, "TAG")) {
        f->refused_type = type;
        return;
    }
    if (!expr || !*expr || !strcmp(expr, "*"))
        return;
    f->all = false;
    const char *p = expr;
    while (*p) {
        const char *bar = strstr(p, "||");
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        const char *b = p, *e = p + n;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > b) {
            if (f->ncodes == PULL_MAX_TAGS) {
                f->all = true; /* more tags than kept: deliver all rather than drop any */
                return;
            }
            f->codes[f->ncodes++] = rmq_msg_tags_code(b, (size_t)(e - b));
        }
        p = bar ? bar + 2 : e + strlen(e);
    }
}

/* From the group's heartbeat subscription of topic (none: all). */
static void filter_from_group(struct pull_filter *f, const struct broker *s, const char *group,
                              const char *topic)
{
    f->all = true;
    f->ncodes = 0;
    f->refused_type = NULL;
    const struct reg_group *g = registry_group(&s->reg, group);
    const struct rmq_subscription *sub = NULL;
    for (size_t i = 0; g && i < g->g.nsubs && !sub; i++)
        if (!strcmp(g->g.subs[i].topic, topic))
            sub = &g->g.subs[i];
    if (sub && !sub->class_filter_mode && sub->expression_type && sub->expression_type[0] &&
        strcmp(sub->expression_type, "TAG")) {
        f->refused_type = sub->expression_type;
        return;
    }
    if (!sub || sub->class_filter_mode || !strcmp(sub->sub_string, "*") ||
        strcmp(sub->expression_type, "TAG") || sub->ncodes == 0 || sub->ncodes > PULL_MAX_TAGS)
        return;
    f->all = false;
    for (size_t i = 0; i < sub->ncodes; i++)
        f->codes[f->ncodes++] = sub->codes[i];
}

/* PROTOCOL: docs/protocol.md §13.6 — as a broker with enablePropertyFilter=false answers a pull
 * whose subscription is not a TAG expression. */
static void refuse_expression(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *type)
{
    char remark[160];
    snprintf(remark, sizeof remark, "The broker does not support consumer to filter message by %.40s", type);
    reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
}

static bool filter_takes(const struct pull_filter *f, int64_t tags_code)
{
    if (f->all)
        return true;
    for (size_t i = 0; i < f->ncodes; i++)
        if (f->codes[i] == tags_code)
            return true;
    return false;
}

struct pull_read {
    const struct pull_filter *f;
    int64_t end;  /* the committed end: rows at or past it are unacknowledged */
    int64_t last; /* the last offset scanned, -1 for none */
    struct buf body;
    int found;
};

#define READ_STOP 1

static int read_one(void *ctx, const struct store_message *m)
{
    struct pull_read *pr = ctx;
    if (m->queue_offset >= pr->end)
        return READ_STOP;
    pr->last = m->queue_offset;
    if (!filter_takes(pr->f, m->tags_code))
        return 0;
    size_t topic_len = strlen(m->topic);
    struct rmq_msg_record r = {
        .body_crc = m->body_crc,
        .queue_id = m->queue_id,
        .flag = m->flag,
        .queue_offset = m->queue_offset,
        .physical_offset = m->physical_id,
        .sys_flag = m->sys_flag,
        .born_ms = m->born_ms,
        .born_host = m->born_host,
        .store_ms = m->store_ms,
        .store_host = m->store_host,
        .reconsume_times = m->reconsume_times,
        .body = m->body,
        .body_len = (uint32_t)m->body_len,
        .topic = m->topic,
        .topic_len = (uint16_t)topic_len,
        .props = m->properties,
        .props_len = (uint16_t)m->properties_len,
    };
    int rc = rmq_msg_record_encode(&r, &pr->body);
    if (rc == 0)
        pr->found++;
    return rc;
}

/* Answers a pull at queue_offset of a queue with committed messages r, as
 * DefaultMessageStore.getMessage and PullMessageProcessor map it: below the
 * min or past the end, PULL_OFFSET_MOVED; at the end, false (the caller
 * answers PULL_NOT_FOUND or holds); else FOUND with what the filter takes
 * of up to max_n records, or PULL_RETRY_IMMEDIATELY when it took none,
 * nextBeginOffset past every record scanned. True when answered. */
static bool answer_stored(struct broker *s, struct conn *c, const struct rmq_cmd *req_like,
                          const struct mq_range *r, const struct pull_filter *f, int64_t queue_offset,
                          int64_t max_n)
{
    int64_t min = r->min_offset, end = r->end_offset;
    if (queue_offset < min || queue_offset > end) {
        /* OFFSET_TOO_SMALL: the min; OFFSET_OVERFLOW_BADLY: the min when it is 0, else the end. */
        int64_t next = queue_offset < min || min == 0 ? min : end;
        answer_pull(s, c, req_like, RMQ_RESP_PULL_OFFSET_MOVED, next, min, end, NULL);
        return true;
    }
    if (queue_offset == end)
        return false;
    int want = (int)(max_n < 1 ? 1 : max_n > PULL_MAX_MSGS ? PULL_MAX_MSGS : max_n);
    if (want > end - queue_offset)
        want = (int)(end - queue_offset); /* never past the commit: the open batch is unacknowledged */
    struct pull_read pr = {.f = f, .end = end, .last = -1};
    buf_init(&pr.body, 0);
    int rc = store_read_messages(s->store, r->topic, r->queue_id, queue_offset, want, PULL_MAX_BYTES,
                                 read_one, &pr, NULL);
    if (rc != 0 && rc != READ_STOP) {
        buf_free(&pr.body);
        log_limited(&s->store_log, loop_now_ms(s->loop), LOG_ERROR, "messages of %s/%d not read: %s",
                    r->topic, (int)r->queue_id, store_errmsg(s->store));
        reply_code(s, c, req_like, RMQ_RESP_SYSTEM_ERROR, "messages not read: storage error");
        return true;
    }
    /* Past the last record scanned; a gap with none (offsets of a lost batch) up to the end. */
    int64_t next = pr.last >= 0 ? pr.last + 1 : end;
    answer_pull(s, c, req_like, pr.found > 0 ? RMQ_RESP_SUCCESS : RMQ_RESP_PULL_RETRY_IMMEDIATELY, next, min,
                end, &pr.body);
    buf_free(&pr.body);
    return true;
}

/* Answers one released hold (nothing when its connection closed): the
 * messages committed since it was held, filtered by its group's subscription. */
static void answer_hold(void *ctx, const struct held_pull *h)
{
    struct broker *s = ctx;
    struct rmq_cmd like;
    rmq_cmd_init(&like);
    like.opaque = h->opaque;
    like.version = h->version;
    like.serialize_type = h->serialize_type;
    if (!h->conn || h->conn->closing)
        return;
    const struct mq_range *r = stored_range(s, h->topic, h->queue_id);
    struct pull_filter f;
    filter_from_group(&f, s, h->group, h->topic);
    if (r && f.refused_type) {
        refuse_expression(s, h->conn, &like, f.refused_type);
        return;
    }
    if (!r || !answer_stored(s, h->conn, &like, r, &f, h->queue_offset, PULL_MAX_MSGS))
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

static bool behind_commit(const struct held_pull *h, const void *arg)
{
    const struct mq_range *r = arg;
    return h->queue_id == r->queue_id && h->queue_offset < r->end_offset && !strcmp(h->topic, r->topic);
}

static void on_committed(void *ctx, const struct mq_range *r)
{
    struct broker *s = ctx;
    held_pulls_release(&s->pulls, behind_commit, r, answer_hold, s);
}

void pull_on_commit(struct broker *s, bool stored)
{
    message_queues_commit(&s->mqs, stored, on_committed, s);
}

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
    const struct mq_range *r = stored_range(s, topic, (int32_t)qid);
    if (r) {
        int64_t max_n = PULL_MAX_MSGS;
        (void)rmq_cmd_ext_get_i64(req, "maxMsgNums", &max_n);
        struct pull_filter f;
        if (sys_flag & PULL_SYSFLAG_SUBSCRIPTION)
            filter_from_expr(&f, rmq_cmd_ext_get(req, "expressionType"),
                             rmq_cmd_ext_get(req, "subscription"));
        else
            filter_from_group(&f, s, group, topic);
        if (f.refused_type) {
            refuse_expression(s, c, req, f.refused_type);
            return;
        }
        if (answer_stored(s, c, req, r, &f, queue_offset, max_n))
            return;
    } else if (s->cfg->pull_checks && pull_offset_moved(s, c, req, topic, (int32_t)qid, queue_offset)) {
        return;
    }
    int64_t hold_ms = suspend < s->cfg->pull_hold_max_ms ? suspend : s->cfg->pull_hold_max_ms;
    if (!(sys_flag & PULL_SYSFLAG_SUSPEND) || hold_ms <= 0 || rmq_cmd_is_oneway(req) ||
        hold(s, c, req, group, topic, (int32_t)qid, queue_offset, hold_ms) != 0)
        answer_not_found(s, c, req, topic, (int32_t)qid, queue_offset);
}
