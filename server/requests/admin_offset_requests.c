/* admin_offset_requests.c — the offset codes of admin tools (see
 * admin_offset_requests.h; specs: tests/mqadmin/FINDINGS.md §3.8 and §3.13):
 * GET_CONSUME_STATS (208) and INVOKE_BROKER_TO_RESET_OFFSET (222).
 *
 * The reset is the 5.x broker's server-side one: the new offsets are
 * committed (stored before the reply) and each queue is marked "reset
 * pending". While the mark is on, the clients' own commits of that queue
 * are acknowledged and dropped (they would carry the old position), and
 * its pulls at any other offset are answered PULL_OFFSET_MOVED with the new
 * one; pulls held at the time of the reset are released that way at once.
 * The mark ends when a client pulls (or commits) at the reset offset: it
 * has moved. Clearing it at the first PULL_OFFSET_MOVED instead lost
 * resets: the answer could go to a held pull of a client that had just
 * given the queue up in a rebalance, and the new owner then committed the
 * position it had read before the reset. A mark nobody picks up lapses
 * after RESET_PENDING_MAX_MS. As a 4.9 broker does, live clients of the group are
 * also sent RESET_CONSUMER_CLIENT_OFFSET (220, oneway). Loop thread only. */
#include "admin_offset_requests.h"

#include "admin_body.h"

#include "conn.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "offset_table.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- GET_CONSUME_STATS (208) ---- */

struct topic_pick {
    const char *group;
    json_t *topics; /* object used as a set */
};

static void pick_group_topic(void *ctx, const char *group, const char *topic, int32_t qid,
                             struct offset_entry *e)
{
    struct topic_pick *p = ctx;
    (void)qid;
    (void)e;
    if (!strcmp(group, p->group))
        (void)json_object_set_new(p->topics, topic, json_true());
}

/* Whether the live group subscribes to topic (true when it is not live). */
static bool subscribed(const struct reg_group *g, const char *topic)
{
    if (!g)
        return true;
    for (size_t i = 0; i < g->g.nsubs; i++)
        if (!strcmp(g->g.subs[i].topic, topic))
            return true;
    return false;
}

/* The topics of a 208: topic, topicList (';'-separated) or those with
 * committed offsets of the group that a live group subscribes to. */
static json_t *stats_topics(struct broker *s, const struct rmq_cmd *req, const char *group)
{
    json_t *set = json_object();
    const char *one = rmq_cmd_ext_get(req, "topic"), *list = rmq_cmd_ext_get(req, "topicList");
    if (!set)
        return NULL;
    if (one && *one) {
        json_object_set_new(set, one, json_true());
    } else if (list && *list) {
        char *copy = rmq_strdup(list), *save = NULL;
        for (char *t = copy ? strtok_r(copy, ";", &save) : NULL; t; t = strtok_r(NULL, ";", &save))
            json_object_set_new(set, t, json_true());
        rmq_free(copy);
    } else {
        struct topic_pick p = {group, set};
        offsets_each(&s->offsets, pick_group_topic, &p);
        const struct reg_group *g = registry_group(&s->reg, group);
        const char *t;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(set, tmp, t, v)
        {
            if (!subscribed(g, t))
                json_object_del(set, t);
        }
    }
    return set;
}

void admin_offset_req_consume_stats(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group;
    if (reply_require_str(s, c, req, "consumerGroup", &group) != 0)
        return;
    json_t *set = stats_topics(s, req, group), *table = json_object();
    const char *name;
    json_t *v;
    json_object_foreach(set, name, v)
    {
        const struct topic *tp = topics_get(&s->topics, name);
        for (size_t b = 0; table && tp && b < tp->nbrokers; b++) {
            for (int q = 0; table && q < tp->brokers[b].read_queue_nums; q++) {
                int64_t committed = 0;
                (void)offsets_get(&s->offsets, group, tp->name, q, &committed);
                char *key = admin_body_mq_key(tp->brokers[b].broker_name, tp->name, q);
                json_t *row = json_pack("{s:I,s:I,s:I,s:I}", "brokerOffset",
                                        (json_int_t)offset_table_queue_end(s, tp->name, q), "consumerOffset",
                                        (json_int_t)committed, "lastTimestamp", (json_int_t)0, "pullOffset",
                                        (json_int_t)committed);
                if (!key || !row || json_object_set_new(table, key, row) != 0) {
                    json_decref(table);
                    table = NULL;
                }
                free(key);
            }
        }
    }
    json_decref(set);
    admin_body_reply(s, c, req,
                     set && table ? json_pack("{s:f,s:o}", "consumeTps", 0.0, "offsetTable", table) : NULL,
                     false);
}

/* ---- reset pending ---- */

#define RESET_PENDING_MAX_MS 60000

/* The queue's entry while a reset of it is pending (lapsed marks cleared), else NULL. */
static struct offset_entry *pending(struct broker *s, const char *group, const char *topic, int32_t qid)
{
    struct offset_entry *e = offsets_find(&s->offsets, group, topic, qid);
    if (!e || !e->reset_pending)
        return NULL;
    /* updated_ms is the reset's own commit: dropped commits do not touch it. */
    if (broker_now_ms(s) - e->updated_ms > RESET_PENDING_MAX_MS) {
        e->reset_pending = false;
        log_info("reset offset of %s/%s/%d not picked up by any pull: the mark lapsed", group, topic,
                 (int)qid);
        return NULL;
    }
    return e;
}

bool admin_offset_commit_allowed(struct broker *s, const char *group, const char *topic, int32_t qid,
                                 int64_t offset)
{
    struct offset_entry *e = pending(s, group, topic, qid);
    if (e && offset == e->offset)
        e->reset_pending = false;
    assert(!e || e->reset_pending == (offset != e->offset)); /* the reset offset itself ends the mark */
    return !e || offset == e->offset;
}

/* Answers a pull (req_like: its opaque, version and serialize type) with
 * PULL_OFFSET_MOVED to next. */
static void answer_moved(struct broker *s, struct conn *c, const struct rmq_cmd *req_like, const char *topic,
                         int32_t qid, int64_t next)
{
    int64_t max = offset_table_queue_end(s, topic, qid);
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req_like, RMQ_RESP_PULL_OFFSET_MOVED,
                              "the offset was reset by an admin") != 0 ||
        rmq_cmd_ext_set_i64(&resp, "nextBeginOffset", next) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "minOffset", 0) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "maxOffset", max > next ? max : next) != 0 ||
        rmq_cmd_ext_set(&resp, "suggestWhichBrokerId", "0") != 0) {
        rmq_cmd_clear(&resp);
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    reply_send(s, c, req_like, &resp, false);
}

bool admin_offset_pull_moved(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *group,
                             const char *topic, int32_t qid, int64_t queue_offset)
{
    struct offset_entry *e = pending(s, group, topic, qid);
    if (!e)
        return false;
    if (queue_offset == e->offset) {
        e->reset_pending = false;
        log_info("reset offset of %s/%s/%d taken up by %s at %lld", group, topic, (int)qid, c->peer,
                 (long long)e->offset);
        return false;
    }
    answer_moved(s, c, req, topic, qid, e->offset);
    return true;
}

struct held_pick {
    struct broker *s;
    const char *group, *topic;
};

static bool held_on_reset_queue(const struct held_pull *h, const void *arg)
{
    const struct held_pick *p = arg;
    if (strcmp(h->group, p->group) != 0 || strcmp(h->topic, p->topic) != 0)
        return false;
    const struct offset_entry *e = offsets_find(&p->s->offsets, h->group, h->topic, h->queue_id);
    return e && e->reset_pending;
}

static void release_moved(void *ctx, const struct held_pull *h)
{
    struct broker *s = ctx;
    struct offset_entry *e = offsets_find(&s->offsets, h->group, h->topic, h->queue_id);
    if (!e || !h->conn || h->conn->closing)
        return;
    struct rmq_cmd like;
    rmq_cmd_init(&like);
    like.opaque = h->opaque;
    like.version = h->version;
    like.serialize_type = h->serialize_type;
    answer_moved(s, h->conn, &like, h->topic, h->queue_id, e->offset);
}

/* ---- INVOKE_BROKER_TO_RESET_OFFSET (222) ---- */

/* RESET_CONSUMER_CLIENT_OFFSET (220), oneway, to every live channel of group. */
static void push_client_reset(struct broker *s, const struct admin_reset *r, const char *body)
{
    const struct reg_group *g = registry_group(&s->reg, r->group);
    for (size_t i = 0; g && i < g->g.nmembers; i++) {
        struct reg_channel *ch = registry_channel(&s->reg, g->g.members[i].channel_id);
        if (!ch || !ch->conn || ch->conn->closing)
            continue;
        struct rmq_cmd out;
        rmq_cmd_init_request(&out, RMQ_REQ_RESET_CONSUMER_CLIENT_OFFSET, s->next_opaque++, RMQ_FLAG_ONEWAY);
        out.serialize_type = RMQ_SERIALIZE_JSON;
        if (rmq_cmd_ext_set(&out, "topic", r->topic) == 0 && rmq_cmd_ext_set(&out, "group", r->group) == 0 &&
            rmq_cmd_ext_set_i64(&out, "timestamp", r->timestamp) == 0 &&
            rmq_cmd_ext_set(&out, "isForce", r->force ? "true" : "false") == 0 &&
            rmq_cmd_set_body_copy(&out, body, strlen(body)) == 0)
            conn_send(ch->conn, &out);
        rmq_cmd_clear(&out);
    }
}

/* The ResetOffsetBody of rows: {"offsetTable":{MessageQueue text: offset}}; new or NULL. */
static json_t *reset_body(const struct admin_reset *r, const struct admin_reset_row *rows, size_t n)
{
    json_t *table = json_object();
    for (size_t i = 0; table && i < n; i++) {
        char *key = admin_body_mq_key(rows[i].broker_name, r->topic, rows[i].queue_id);
        if (!key || json_object_set_new(table, key, json_integer(rows[i].to)) != 0) {
            json_decref(table);
            table = NULL;
        }
        free(key);
    }
    return table ? json_pack("{s:o}", "offsetTable", table) : NULL;
}

int admin_offset_reset(struct broker *s, const struct admin_reset *r, struct admin_reset_row **rows_out,
                       size_t *n_out)
{
    assert(r && r->group && r->topic && rows_out && n_out);
    *rows_out = NULL;
    *n_out = 0;
    const struct topic *tp = topics_get(&s->topics, r->topic);
    if (!tp)
        return RMQ_ENOTFOUND;
    size_t cap = 0;
    for (size_t b = 0; b < tp->nbrokers; b++)
        cap += (size_t)tp->brokers[b].write_queue_nums;
    struct admin_reset_row *rows = rmq_calloc(cap ? cap : 1, sizeof *rows);
    if (!rows)
        return RMQ_ENOMEM;
    size_t n = 0;
    for (size_t b = 0; b < tp->nbrokers; b++) {
        for (int q = 0; q < tp->brokers[b].write_queue_nums; q++) {
            if (r->queue_id >= 0 && q != r->queue_id)
                continue;
            /* No message is stored: the search by time and "now" (-1) both give the queue's end. */
            int64_t target = r->offset >= 0 ? r->offset : offset_table_queue_end(s, r->topic, q),
                    committed = 0;
            if (target < 0)
                target = 0;
            bool has = offsets_get(&s->offsets, r->group, r->topic, q, &committed) == 0;
            rows[n++] =
                (struct admin_reset_row){tp->brokers[b].broker_name, q, has, committed,
                                         !r->force && has && target >= committed ? committed : target};
        }
    }
    assert(n <= cap); /* one row per writable queue at most */
    int rc = 0;
    for (size_t i = 0; rc == 0 && !r->dry_run && i < n; i++) {
        rc = offset_table_commit(s, r->group, r->topic, rows[i].queue_id, rows[i].to);
        struct offset_entry *e =
            rc == 0 ? offsets_find(&s->offsets, r->group, r->topic, rows[i].queue_id) : NULL;
        if (e)
            e->reset_pending = true;
    }
    if (rc != 0) {
        rmq_free(rows);
        return rc;
    }
    if (!r->dry_run) {
        log_info("offsets of %s on %s reset (%zu queue(s), timestamp %lld)", r->group, r->topic, n,
                 (long long)r->timestamp);
        /* Held pulls on the reset queues learn the new offset now. */
        struct held_pick pick = {s, r->group, r->topic};
        held_pulls_release(&s->pulls, held_on_reset_queue, &pick, release_moved, s);
        json_t *body = reset_body(r, rows, n);
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (text)
            push_client_reset(s, r, text);
        free(text);
        json_decref(body);
    }
    *rows_out = rows;
    *n_out = n;
    return RMQ_OK;
}

void admin_offset_req_reset(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    struct admin_reset r = {.queue_id = -1, .offset = -1, .force = true};
    if (reply_require_str(s, c, req, "topic", &r.topic) != 0 ||
        reply_require_str(s, c, req, "group", &r.group) != 0 ||
        reply_require_i64(s, c, req, "timestamp", &r.timestamp) != 0)
        return;
    if (rmq_cmd_ext_get_bool(req, "isForce", &r.force) != 0)
        r.force = true;
    int64_t q = -1, off = -1;
    (void)rmq_cmd_ext_get_i64(req, "queueId", &q);
    (void)rmq_cmd_ext_get_i64(req, "offset", &off);
    if (q >= 0 && off >= 0) { /* 5.x: one queue, this offset */
        r.queue_id = q;
        r.offset = off;
    }
    struct admin_reset_row *rows;
    size_t n;
    int rc = admin_offset_reset(s, &r, &rows, &n);
    if (rc == RMQ_ENOTFOUND) {
        char remark[400];
        snprintf(remark, sizeof remark,
                 "[reset-offset] reset offset failed, no topic in this broker. topic=%s", r.topic);
        reply_code(s, c, req, RMQ_RESP_TOPIC_NOT_EXIST, remark);
        return;
    }
    if (rc != 0) {
        log_error("reset offset %s/%s not stored: %s", r.group, r.topic, store_errmsg(s->store));
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "reset offset not stored");
        return;
    }
    log_info("reset of %s on %s asked by an admin request from %s", r.group, r.topic, c->peer);
    json_t *body = reset_body(&r, rows, n);
    rmq_free(rows);
    admin_body_reply(s, c, req, body, true);
}
