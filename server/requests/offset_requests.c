/* offset_requests.c — consumer offsets: QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
 * SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME. Committed offsets
 * live in memory (for answers) and in the store (for restarts). A queue with
 * committed messages answers from them (message_queues.h, store_messages.h);
 * one without any has min offset 0 and, as its max offset, the highest offset
 * any group committed for it. Loop thread only. */
#include "offset_requests.h"

#include "admin_offset_requests.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "message_queues.h"
#include "offset_table.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"
#include "store_messages.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* Reads the common (topic, queueId) pair; replies the error itself. */
static int topic_queue(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char **topic,
                       int32_t *qid)
{
    int64_t q;
    if (reply_require_str(s, c, req, "topic", topic) != 0 || reply_require_i64(s, c, req, "queueId", &q) != 0)
        return RMQ_EINVAL;
    if (q < 0 || q > INT32_MAX) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "queueId out of range");
        return RMQ_EINVAL;
    }
    *qid = (int32_t)q;
    return RMQ_OK;
}

/* Replies SUCCESS with one extFields entry (e.g. offset=N). */
static void reply_value(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *key,
                        int64_t v, bool durable)
{
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req, RMQ_RESP_SUCCESS, NULL) != 0 ||
        rmq_cmd_ext_set_i64(&resp, key, v) != 0) {
        rmq_cmd_clear(&resp);
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    reply_send(s, c, req, &resp, durable);
}

void offset_req_query(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group, *topic;
    int32_t qid;
    if (reply_require_str(s, c, req, "consumerGroup", &group) != 0 ||
        topic_queue(s, c, req, &topic, &qid) != 0)
        return;
    int64_t off;
    /* A stored negative offset (ali-ons commits -1) is "nothing committed", as the broker reads it. */
    if (offsets_get(&s->offsets, group, topic, qid, &off) == 0 && off >= 0) {
        reply_value(s, c, req, "offset", off, false);
        return;
    }
    /* PROTOCOL: docs/protocol.md §5.1 — nothing committed: offset 0 while the queue's min
     * offset is 0 (always, with no messages stored), unless the client asks
     * for QUERY_NOT_FOUND with setZeroIfNotFound=false. --compat broker-4.9:
     * 4.9 has no setZeroIfNotFound; broker-5: 5.x answers QUERY_NOT_FOUND
     * unless message 0 is in memory, never with an empty queue (§12). */
    bool zero = true;
    const struct broker_dialect *d = &s->cfg->dialect;
    if (d->query_offset_not_found ||
        (d->query_offset_set_zero && rmq_cmd_ext_get_bool(req, "setZeroIfNotFound", &zero) == 0 && !zero)) {
        reply_code(s, c, req, RMQ_RESP_QUERY_NOT_FOUND, d->query_offset_not_found_remark);
        return;
    }
    reply_value(s, c, req, "offset", 0, false);
}

void offset_req_update(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group, *topic;
    int32_t qid;
    int64_t off;
    /* --compat broker-5: 5.x refuses a commit of a group with no subscription-group config (one
     * that never heartbeated) before it reads the other fields (docs/protocol.md §12). */
    const char *g5 = rmq_cmd_ext_get(req, "consumerGroup");
    if (s->cfg->dialect.offset_commit_needs_group && g5 && *g5 && !registry_group_known(&s->reg, g5)) {
        char remark[320];
        snprintf(remark, sizeof remark, "Group %s not exist!", g5);
        reply_code(s, c, req, RMQ_RESP_SUBSCRIPTION_GROUP_NOT_EXIST, remark);
        return;
    }
    if (reply_require_str(s, c, req, "consumerGroup", &group) != 0 ||
        topic_queue(s, c, req, &topic, &qid) != 0 || reply_require_i64(s, c, req, "commitOffset", &off) != 0)
        return;
    if (!admin_offset_commit_allowed(s, group, topic, qid, off)) {
        /* An admin reset of this queue is pending: the client's position is stale. */
        reply_code(s, c, req, RMQ_RESP_SUCCESS, "Offset has been previously reset");
        return;
    }
    if (offset_table_commit(s, group, topic, qid, off) != 0) {
        log_limited(&s->store_log, loop_now_ms(s->loop), LOG_ERROR, "offset %s/%s/%d not stored: %s", group,
                    topic, (int)qid, store_errmsg(s->store));
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "offset not stored: storage error");
        return;
    }
    struct offset_entry *e = offsets_find(&s->offsets, group, topic, qid);
    assert(e); /* offset_table_commit put it */
    if (e)
        e->channel_id = c->id; /* the reported holder of GET /api/groups/{g}/offsets */
    reply_ok(s, c, req, true);
}

/* The committed messages of a queue, NULL when it never had one. */
static const struct mq_range *stored(const struct broker *s, const char *topic, int32_t qid)
{
    const struct mq_range *r = message_queues_get(&s->mqs, topic, qid);
    return r && r->end_offset > 0 ? r : NULL;
}

void offset_req_get_max(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    if (topic_queue(s, c, req, &topic, &qid) != 0)
        return;
    reply_value(s, c, req, "offset", offset_table_queue_end(s, topic, qid), false);
}

void offset_req_get_min(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    if (topic_queue(s, c, req, &topic, &qid) != 0)
        return;
    const struct mq_range *r = stored(s, topic, qid);
    reply_value(s, c, req, "offset", r ? r->min_offset : 0, false);
}

struct first_msg {
    int64_t end; /* rows at or past it are not committed */
    int64_t offset, store_ms;
    bool seen;
};

static int take_first(void *ctx, const struct store_message *m)
{
    struct first_msg *f = ctx;
    if (m->queue_offset < f->end) {
        f->seen = true;
        f->offset = m->queue_offset;
        f->store_ms = m->store_ms;
    }
    return 1;
}

/* The first committed message of r at or after offset: 0 with *f set (seen
 * false when there is none), or the store's error. */
static int first_from(struct broker *s, const struct mq_range *r, int64_t offset, struct first_msg *f)
{
    *f = (struct first_msg){.end = r->end_offset};
    int rc = store_read_messages(s->store, r->topic, r->queue_id, offset, 1, 0, take_first, f, NULL);
    return rc == 1 ? 0 : rc;
}

void offset_req_search(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    int64_t ts;
    if (topic_queue(s, c, req, &topic, &qid) != 0 || reply_require_i64(s, c, req, "timestamp", &ts) != 0)
        return;
    const struct mq_range *r = stored(s, topic, qid);
    if (!r) {
        /* No message is stored after any time: the answer is the queue's end. */
        reply_value(s, c, req, "offset", offset_table_queue_end(s, topic, qid), false);
        return;
    }
    /* The first offset stored at or after ts (store times grow with offsets): a
     * binary search reading one row per step; the end when every message is older. */
    int64_t lo = r->min_offset, hi = r->end_offset;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        struct first_msg f;
        if (first_from(s, r, mid, &f) != 0) {
            reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "messages not read: storage error");
            return;
        }
        if (!f.seen || f.store_ms < ts)
            lo = f.seen && f.offset + 1 < hi ? f.offset + 1 : hi;
        else
            hi = mid;
    }
    reply_value(s, c, req, "offset", lo, false);
}

void offset_req_earliest_msg_storetime(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    if (topic_queue(s, c, req, &topic, &qid) != 0)
        return;
    const struct mq_range *r = stored(s, topic, qid);
    struct first_msg f = {0};
    if (r && first_from(s, r, r->min_offset, &f) != 0) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "messages not read: storage error");
        return;
    }
    reply_value(s, c, req, "timestamp", f.seen ? f.store_ms : -1, false);
}
