/* admin_topic_requests.c — the topic codes of admin tools (see
 * admin_topic_requests.h; specs: tests/mqadmin/FINDINGS.md §3.1–3.7): the topic
 * list, a topic's stats and config, the broker's runtime info, creating and
 * deleting topics. rmqcoord stores no messages: a queue's min offset is 0
 * and its max offset is the highest committed one (what GET_MAX_OFFSET
 * answers), so topicStatus and consumerProgress agree. Loop thread only. */
#include "admin_topic_requests.h"

#include "admin_body.h"
#include "offset_table.h"

#include "conn.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"
#include "trace_recorder.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The version rmqcoord answers as (docs/protocol.md §1.7: V4_9_8). */
#define ADMIN_BROKER_VERSION_DESC "V4_9_8"
#define ADMIN_BROKER_VERSION "409"
#define ADMIN_TOPIC_NAME_MAX 127

void admin_topic_req_noop(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}

/* GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every topic, sorted. */
void admin_topic_req_list(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char **names = hashmap_sorted_keys(&s->topics.map);
    json_t *list = names ? json_array() : NULL;
    for (size_t i = 0; list && i < s->topics.map.count; i++)
        (void)json_array_append_new(list, json_string(names[i]));
    rmq_free(names);
    admin_body_reply(s, c, req, list ? json_pack("{s:o}", "topicList", list) : NULL, false);
}

/* The topic named by the request's "topic" field, or NULL after replying
 * TOPIC_NOT_EXIST with the remark pre + topic + post. */
static const struct topic *topic_of(struct broker *s, struct conn *c, const struct rmq_cmd *req,
                                    const char *pre, const char *post)
{
    const char *name;
    if (reply_require_str(s, c, req, "topic", &name) != 0)
        return NULL;
    const struct topic *tp = topics_get(&s->topics, name);
    if (!tp) {
        char remark[400];
        snprintf(remark, sizeof remark, "%s%s%s", pre, name, post);
        reply_code(s, c, req, RMQ_RESP_TOPIC_NOT_EXIST, remark);
    }
    return tp;
}

/* GET_TOPIC_STATS_INFO (202): per queue, min 0 and max = GET_MAX_OFFSET. */
void admin_topic_req_stats(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const struct topic *tp = topic_of(s, c, req, "topic[", "] not exist");
    if (!tp)
        return;
    json_t *table = json_object();
    for (size_t b = 0; table && b < tp->nbrokers; b++) {
        const struct topic_broker *tb = &tp->brokers[b];
        int nq = tb->read_queue_nums > tb->write_queue_nums ? tb->read_queue_nums : tb->write_queue_nums;
        for (int q = 0; table && q < nq; q++) {
            char *key = admin_body_mq_key(tb->broker_name, tp->name, q);
            json_t *v =
                json_pack("{s:I,s:I,s:I}", "lastUpdateTimestamp", (json_int_t)0, "maxOffset",
                          (json_int_t)offset_table_queue_end(s, tp->name, q), "minOffset", (json_int_t)0);
            if (!key || !v || json_object_set_new(table, key, v) != 0) {
                json_decref(table);
                table = NULL;
            }
            free(key);
        }
    }
    admin_body_reply(s, c, req,
                     table ? json_pack("{s:o,s:f}", "offsetTable", table, "topicPutTps", 0.0) : NULL, false);
}

/* The topic's queue counts on this broker (its entry for --broker-name, or the first). */
static const struct topic_broker *own_entry(const struct broker *s, const struct topic *tp)
{
    for (size_t i = 0; i < tp->nbrokers; i++)
        if (!strcmp(tp->brokers[i].broker_name, s->cfg->broker_name))
            return &tp->brokers[i];
    return &tp->brokers[0];
}

/* GET_TOPIC_CONFIG (351, 5.x): the TopicConfig, no static-topic mapping. */
void admin_topic_req_config(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const struct topic *tp = topic_of(s, c, req, "No topic in this broker. topic: ", "");
    if (!tp)
        return;
    const struct topic_broker *tb = own_entry(s, tp);
    admin_body_reply(s, c, req,
                     json_pack("{s:{},s:b,s:i,s:i,s:s,s:s,s:i,s:i}", "attributes", "order", 0, "perm",
                               tb->perm, "readQueueNums", tb->read_queue_nums, "topicFilterType",
                               "SINGLE_TAG", "topicName", tp->name, "topicSysFlag", 0, "writeQueueNums",
                               tb->write_queue_nums),
                     false);
}

/* GET_BROKER_RUNTIME_INFO (28): a KVTable of strings (FINDINGS §3.4). */
void admin_topic_req_broker_runtime_info(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    char boot[32];
    snprintf(boot, sizeof boot, "%lld", (long long)s->started_ms);
    json_t *t = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "brokerVersionDesc",
                          ADMIN_BROKER_VERSION_DESC, "brokerVersion", ADMIN_BROKER_VERSION, "putTps",
                          "0.0 0.0 0.0", "getTransferedTps", "0.0 0.0 0.0", "getTransferredTps",
                          "0.0 0.0 0.0", "sendThreadPoolQueueSize", "0", "pullThreadPoolQueueSize", "0",
                          "sendThreadPoolQueueHeadWaitTimeMills", "0", "pullThreadPoolQueueHeadWaitTimeMills",
                          "0", "pageCacheLockTimeMills", "0", "commitLogDiskRatio", "0.0", "brokerActive",
                          "true", "bootTimestamp", boot);
    admin_body_reply(s, c, req, t ? json_pack("{s:o}", "table", t) : NULL, false);
}

/* RocketMQ's topic name rule: 1..127 characters of [%|a-zA-Z0-9_-]. */
static bool valid_topic_name(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > ADMIN_TOPIC_NAME_MAX)
        return false;
    for (const char *p = t; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '%' ||
              *p == '|' || *p == '_' || *p == '-'))
            return false;
    return true;
}

static bool system_topic(const char *t)
{
    return !strcmp(t, "TBW102") || !strcmp(t, "SCHEDULE_TOPIC_XXXX") || !strncmp(t, "RMQ_SYS_", 8) ||
           !strncmp(t, "rmq_sys_", 8);
}

/* Answers INVALID_PARAMETER for a bad or system topic name; true when it did. */
static bool refuse_name(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *topic)
{
    char remark[300];
    if (!valid_topic_name(topic))
        snprintf(remark, sizeof remark,
                 "The specified topic[%.200s] is invalid: 1 to %d characters of "
                 "[%%|a-zA-Z0-9_-]",
                 topic, ADMIN_TOPIC_NAME_MAX);
    else if (system_topic(topic))
        snprintf(remark, sizeof remark, "The topic[%s] is conflict with system topic.", topic);
    else
        return false;
    reply_code(s, c, req, RMQ_RESP_INVALID_PARAMETER, remark);
    return true;
}

/* UPDATE_AND_CREATE_TOPIC (17): creates the topic on this broker, or
 * replaces this broker's queue counts and perm; stored before the reply. */
void admin_topic_req_create(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int64_t r, w, perm;
    if (reply_require_str(s, c, req, "topic", &topic) != 0 ||
        reply_require_i64(s, c, req, "readQueueNums", &r) != 0 ||
        reply_require_i64(s, c, req, "writeQueueNums", &w) != 0 ||
        reply_require_i64(s, c, req, "perm", &perm) != 0)
        return;
    if (refuse_name(s, c, req, topic))
        return;
    if (r < 0 || r > TOPIC_MAX_QUEUES || w < 0 || w > TOPIC_MAX_QUEUES || perm < 0 || perm > 15) {
        char remark[120];
        snprintf(remark, sizeof remark, "queue counts must be 0..%d and perm 0..15", TOPIC_MAX_QUEUES);
        reply_code(s, c, req, RMQ_RESP_INVALID_PARAMETER, remark);
        return;
    }
    struct topic_broker list[TOPIC_MAX_BROKERS];
    size_t n = 0;
    const struct topic *tp = topics_get(&s->topics, topic);
    bool found = false;
    for (size_t i = 0; tp && i < tp->nbrokers && n < TOPIC_MAX_BROKERS; i++) {
        list[n] = tp->brokers[i];
        if (!strcmp(list[n].broker_name, s->cfg->broker_name)) {
            if (list[n].read_queue_nums == r && list[n].write_queue_nums == w && list[n].perm == perm) {
                reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL); /* unchanged: nothing to do */
                return;
            }
            list[n] = (struct topic_broker){(char *)s->cfg->broker_name, (int)r, (int)w, (int)perm};
            found = true;
        }
        n++;
    }
    if (!found && n == TOPIC_MAX_BROKERS) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "the topic has too many brokers");
        return;
    }
    if (!found)
        list[n++] = (struct topic_broker){(char *)s->cfg->broker_name, (int)r, (int)w, (int)perm};
    assert(n >= 1 && n <= TOPIC_MAX_BROKERS); /* this broker's entry, within the table's bound */
    if (!tp && (int64_t)s->topics.map.count >= s->cfg->max_topics) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "topic not created: --max-topics reached");
        return;
    }
    if (broker_put_topic(s, topic, list, n) != 0) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "topic not stored: storage error");
        return;
    }
    log_info("topic %s %s with %lld/%lld queue(s), perm %lld by an admin request from %s", topic,
             tp ? "updated" : "created", (long long)r, (long long)w, (long long)perm, c->peer);
    reply_ok(s, c, req, true);
}

/* DELETE_TOPIC_IN_BROKER (215): the topic and every group's offsets of it;
 * an unknown topic is not an error. */
void admin_topic_req_delete_in_broker(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic = rmq_cmd_ext_get(req, "topic");
    if (!topic || !*topic) {
        reply_code(s, c, req, RMQ_RESP_INVALID_PARAMETER, "The specified topic is blank.");
        return;
    }
    if (system_topic(topic)) {
        refuse_name(s, c, req, topic);
        return;
    }
    bool existed = topics_delete(&s->topics, topic) == 0;
    size_t noffsets = offsets_delete_topic(&s->offsets, topic);
    assert(!topics_get(&s->topics, topic));
    int rc = 0;
    if (existed) {
        trace_record_route(s->trace, broker_now_ms(s), topic, NULL);
        rc = store_delete_topic(s->store, topic);
    }
    if (rc == 0 && noffsets > 0)
        rc = store_delete_offsets(s->store, NULL, topic);
    if (rc != 0) {
        log_error("topic %s deletion not stored: %s", topic, store_errmsg(s->store));
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "deletion not stored: storage error");
        return;
    }
    if (existed || noffsets)
        log_info("topic %s deleted (%zu committed offset(s)) by an admin request from %s", topic, noffsets,
                 c->peer);
    reply_ok(s, c, req, existed || noffsets);
}
