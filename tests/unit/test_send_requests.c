/* test_send_requests.c — SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE
 * (server/requests/send_requests.c with model/message_queues.c) on a broker
 * fixture: the SUCCESS fields held until the commit, the stored rows, the
 * offset id that names them, consecutive offsets, the topic, queue and size
 * checks (docs/protocol.md §13). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "buf.h"
#include "consumer_requests.h"
#include "message_batch.h"
#include "message_id.h"
#include "message_props.h"
#include "message_record.h"
#include "offset_requests.h"
#include "pull_requests.h"
#include "request_codes.h"
#include "send_requests.h"
#include "store_messages.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int setup(void **state)
{
    struct config cfg;
    fx_config_defaults(&cfg);
    strcpy(cfg.topics[0].name, "T");
    cfg.topics[0].queues = 4;
    cfg.ntopics = 1;
    *state = fx_new(&cfg);
    return 0;
}

static int setup_no_auto(void **state)
{
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.auto_create_queues = 0;
    *state = fx_new(&cfg);
    return 0;
}

static int teardown(void **state)
{
    fx_free(*state);
    return 0;
}

/* A send of body with props on topic/queue: V1 names or V2 letters. */
static void send_msg(struct fx *fx, size_t i, int32_t code, int32_t opaque, const char *topic, int qid,
                     const char *props, const void *body, size_t body_len)
{
    struct rmq_cmd req;
    fx_request(&req, code, opaque, 0);
    bool v2 = code == RMQ_REQ_SEND_MESSAGE_V2;
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "a" : "producerGroup", "PG"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "b" : "topic", topic), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "c" : "defaultTopic", "TBW102"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "d" : "defaultTopicQueueNums", "4"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, v2 ? "e" : "queueId", qid), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "f" : "sysFlag", "0"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "g" : "bornTimestamp", "1700000000000"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "h" : "flag", "7"), 0);
    if (props)
        assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "i" : "properties", props), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, v2 ? "j" : "reconsumeTimes", "0"), 0);
    if (body_len)
        assert_int_equal(rmq_cmd_set_body_copy(&req, body, body_len), 0);
    send_req_message(&fx->b, fx_conn(fx, i), &req);
    rmq_cmd_clear(&req);
}

struct seen {
    int n;
    int64_t offsets[8], ids[8];
    char props[8][256];
    char body[8][64];
    int64_t tags_code[8];
    int32_t flag[8];
};

static int collect(void *ctx, const struct store_message *m)
{
    struct seen *v = ctx;
    assert_true(v->n < 8);
    v->offsets[v->n] = m->queue_offset;
    v->ids[v->n] = m->physical_id;
    assert_true(m->properties_len < sizeof v->props[0] && m->body_len < sizeof v->body[0]);
    memcpy(v->props[v->n], m->properties, m->properties_len);
    v->props[v->n][m->properties_len] = 0;
    memcpy(v->body[v->n], m->body, m->body_len);
    v->body[v->n][m->body_len] = 0;
    v->tags_code[v->n] = m->tags_code;
    v->flag[v->n] = m->flag;
    v->n++;
    return 0;
}

static const char *prop_of(const char *props, const char *name, char *out, size_t cap)
{
    const char *val;
    size_t n;
    if (!rmq_msg_props_find(props, strlen(props), name, &val, &n) || n >= cap)
        return NULL;
    memcpy(out, val, n);
    out[n] = 0;
    return out;
}

/* V1 and V2 sends: held until the commit, then SUCCESS with msgId naming
 * the stored row, queueId, consecutive queueOffsets, transactionId = the
 * UNIQ_KEY, MSG_REGION and TRACE_ON; the rows keep body, flag, properties. */
static void test_send_and_store(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 1, "T", 2, "TAGS\001tagA\002KEYS\001k1 k2\002UNIQ_KEY\001U1\002",
             "hello", 5);
    struct rmq_cmd r;
    assert_int_equal(fx_recv(fx, a, &r), RMQ_EAGAIN); /* not before the commit */
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE_V2, 2, "T", 2, "TAGS\001tagB", "world", 5);
    fx_iterate(fx);
    assert_int_equal(fx->last_commit_rc, 0);
    assert_int_equal(fx_reply(fx, a, 1, &r), RMQ_RESP_SUCCESS);
    assert_string_equal(rmq_cmd_ext_get(&r, "queueId"), "2");
    assert_string_equal(rmq_cmd_ext_get(&r, "queueOffset"), "0");
    assert_string_equal(rmq_cmd_ext_get(&r, "transactionId"), "U1");
    assert_string_equal(rmq_cmd_ext_get(&r, "MSG_REGION"), "DefaultRegion");
    assert_string_equal(rmq_cmd_ext_get(&r, "TRACE_ON"), "true");
    const char *id = rmq_cmd_ext_get(&r, "msgId");
    assert_non_null(id);
    struct rmq_msg_host h;
    int64_t phys;
    assert_int_equal(rmq_msg_offset_id_parse(id, strlen(id), &h, &phys), 0);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_reply(fx, a, 2, &r), RMQ_RESP_SUCCESS);
    assert_string_equal(rmq_cmd_ext_get(&r, "queueOffset"), "1");
    const char *uniq2 = rmq_cmd_ext_get(&r, "transactionId");
    assert_non_null(uniq2);
    assert_int_equal(strlen(uniq2), RMQ_MSG_UNIQ_LEN); /* filled in: the client sent none */
    char uniq2c[64];
    strcpy(uniq2c, uniq2);
    rmq_cmd_clear(&r);

    struct seen v = {0};
    int n = 0;
    assert_int_equal(store_read_messages(fx->b.store, "T", 2, 0, 32, 1 << 20, collect, &v, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v.offsets[0], 0);
    assert_int_equal(v.offsets[1], 1);
    assert_int_equal(v.ids[0], phys);
    assert_int_equal(v.ids[1], phys + 1);
    assert_string_equal(v.body[0], "hello");
    assert_string_equal(v.body[1], "world");
    assert_int_equal(v.flag[0], 7);
    char val[128];
    assert_string_equal(prop_of(v.props[0], "TAGS", val, sizeof val), "tagA");
    assert_string_equal(prop_of(v.props[0], "KEYS", val, sizeof val), "k1 k2");
    assert_string_equal(prop_of(v.props[0], "UNIQ_KEY", val, sizeof val), "U1");
    assert_string_equal(prop_of(v.props[1], "UNIQ_KEY", val, sizeof val), uniq2c);
    assert_int_equal(v.tags_code[0], rmq_msg_tags_code("tagA", 4));
    assert_int_equal(fx->b.mqs.next_physical_id, phys + 2);
    const struct mq_range *q = message_queues_get(&fx->b.mqs, "T", 2);
    assert_non_null(q);
    assert_int_equal(q->next_offset, 2);
}

/* A batch: one row per inner message at consecutive offsets, each with its
 * own properties; msgId is the comma-joined list of their offset ids. */
static void test_batch(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct buf body;
    buf_init(&body, 0);
    const char *p1 = "UNIQ_KEY\001B1\002TAGS\001x";
    const char *p2 = "UNIQ_KEY\001B2\002TAGS\001y";
    assert_int_equal(rmq_msg_batch_encode_item(0, (const uint8_t *)"m1", 2, p1, strlen(p1), &body), 0);
    assert_int_equal(rmq_msg_batch_encode_item(0, (const uint8_t *)"m2", 2, p2, strlen(p2), &body), 0);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 9, "T", 1, NULL, NULL, 0); /* offset 0 taken first */
    struct rmq_cmd req;
    fx_request(&req, 320, 10, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "a", "PG"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "b", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "e", "1"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "f", "0"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "g", "1"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "h", "0"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "m", "true"), 0);
    assert_int_equal(rmq_cmd_set_body_copy(&req, body.data, body.len), 0);
    buf_free(&body);
    send_req_message(&fx->b, fx_conn(fx, a), &req);
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 9, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_reply(fx, a, 10, &r), RMQ_RESP_SUCCESS);
    assert_string_equal(rmq_cmd_ext_get(&r, "queueOffset"), "1");
    const char *ids = rmq_cmd_ext_get(&r, "msgId");
    assert_int_equal(strlen(ids), 2 * RMQ_MSG_ID_V4_LEN + 1);
    assert_int_equal(ids[RMQ_MSG_ID_V4_LEN], ',');
    struct rmq_msg_host h;
    int64_t p_a, p_b;
    assert_int_equal(rmq_msg_offset_id_parse(ids, RMQ_MSG_ID_V4_LEN, &h, &p_a), 0);
    assert_int_equal(rmq_msg_offset_id_parse(ids + RMQ_MSG_ID_V4_LEN + 1, RMQ_MSG_ID_V4_LEN, &h, &p_b), 0);
    assert_int_equal(p_b, p_a + 1);
    rmq_cmd_clear(&r);
    struct seen v = {0};
    assert_int_equal(store_read_messages(fx->b.store, "T", 1, 1, 32, 1 << 20, collect, &v, NULL), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.offsets[0], 1);
    assert_int_equal(v.offsets[1], 2);
    assert_int_equal(v.ids[0], p_a);
    assert_string_equal(v.body[1], "m2");
    char val[64];
    assert_string_equal(prop_of(v.props[0], "UNIQ_KEY", val, sizeof val), "B1");
    assert_string_equal(prop_of(v.props[1], "TAGS", val, sizeof val), "y");
}

/* The checks: a queue id past the topic's queues, properties or a body
 * too large; a negative queue id picks a write queue. */
static void test_checks(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 1, "T", 4, NULL, "x", 1);
    fx_iterate(fx);
    fx_expect_reply_prefix(fx, a, 1, RMQ_RESP_SYSTEM_ERROR, "request queueId[4] is illegal");
    size_t big = 4 * 1024 * 1024 + 1;
    char *body = calloc(1, big);
    assert_non_null(body);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 2, "T", 0, NULL, body, big);
    free(body);
    fx_iterate(fx);
    fx_expect_reply_prefix(fx, a, 2, 13, "the message is illegal");
    char *props = malloc(40000);
    assert_non_null(props);
    memcpy(props, "KEYS\001", 5);
    memset(props + 5, 'k', 40000 - 6);
    props[40000 - 1] = 0;
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 3, "T", 0, props, "x", 1);
    free(props);
    fx_iterate(fx);
    fx_expect_reply_prefix(fx, a, 3, 13, "the message is illegal");
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 4, "T", -1, NULL, "x", 1);
    fx_iterate(fx);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 4, &r), RMQ_RESP_SUCCESS);
    int qid = atoi(rmq_cmd_ext_get(&r, "queueId"));
    assert_true(qid >= 0 && qid < 4);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM messages"), 1);
}

/* An unknown topic is created with auto-create on, and refused with it off. */
static void test_unknown_topic(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 1, "NEW", 0, NULL, "x", 1);
    fx_iterate(fx);
    fx_expect_reply(fx, a, 1, RMQ_RESP_SUCCESS, NULL);
    assert_non_null(topics_get(&fx->b.topics, "NEW"));
}

static void test_unknown_topic_no_auto(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE_V2, 1, "NEW", 0, NULL, "x", 1);
    fx_iterate(fx);
    fx_expect_reply_prefix(fx, a, 1, RMQ_RESP_TOPIC_NOT_EXIST, "topic[NEW] not exist, apply first please!");
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM messages"), 0);
}

/* A pull of T/qid at offset with the request's own subscription expr. */
static void pull(struct fx *fx, size_t i, int32_t opaque, int qid, int64_t offset, const char *expr,
                 bool suspend)
{
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_PULL_MESSAGE, opaque, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", "G"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueId", qid), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueOffset", offset), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "sysFlag", 0x4 | (suspend ? 0x2 : 0)), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "maxMsgNums", "32"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "suspendTimeoutMillis", "15000"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "subscription", expr), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "expressionType", "TAG"), 0);
    pull_req_message(&fx->b, fx_conn(fx, i), &req);
    rmq_cmd_clear(&req);
}

static int64_t ext_i64(const struct rmq_cmd *r, const char *k)
{
    int64_t v = -99;
    assert_int_equal(rmq_cmd_ext_get_i64(r, k, &v), 0);
    return v;
}

/* Sends body with tags on T/qid and commits; the reply's physical id. */
static int64_t send_tagged(struct fx *fx, size_t a, int32_t opaque, int qid, const char *tags,
                           const char *body)
{
    char props[128];
    snprintf(props, sizeof props, "TAGS\001%s\002UNIQ_KEY\001U%d", tags, (int)opaque);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, opaque, "T", qid, props, body, strlen(body));
    fx_iterate(fx);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, opaque, &r), RMQ_RESP_SUCCESS);
    struct rmq_msg_host h;
    int64_t phys;
    const char *id = rmq_cmd_ext_get(&r, "msgId");
    assert_int_equal(rmq_msg_offset_id_parse(id, strlen(id), &h, &phys), 0);
    rmq_cmd_clear(&r);
    return phys;
}

/* FOUND: the records the tag filter takes, in offset order, every field as
 * sent; nextBeginOffset past the filtered ones too; at the end
 * PULL_NOT_FOUND; past it PULL_OFFSET_MOVED; only tags not taken: retry. */
static void test_pull_found(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    int64_t p0 = send_tagged(fx, a, 1, 1, "a", "m0");
    (void)send_tagged(fx, a, 2, 1, "b", "m1");
    int64_t p2 = send_tagged(fx, a, 3, 1, "a", "m2");
    pull(fx, a, 10, 1, 0, "a || c", false);
    fx_iterate(fx);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 10, &r), RMQ_RESP_SUCCESS);
    assert_int_equal(ext_i64(&r, "nextBeginOffset"), 3);
    assert_int_equal(ext_i64(&r, "minOffset"), 0);
    assert_int_equal(ext_i64(&r, "maxOffset"), 3);
    assert_int_equal(ext_i64(&r, "suggestWhichBrokerId"), 0);
    struct rmq_msg_record m;
    size_t used, at = 0;
    char err[128];
    const char *bodies[] = {"m0", "m2"};
    int64_t offs[] = {0, 2}, phys[] = {p0, p2};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rmq_msg_record_decode(r.body + at, r.body_len - at, &m, &used, err, sizeof err), 0);
        at += used;
        assert_int_equal(m.queue_offset, offs[k]);
        assert_int_equal(m.physical_offset, phys[k]);
        assert_int_equal(m.queue_id, 1);
        assert_int_equal(m.flag, 7);
        assert_int_equal(m.born_ms, 1700000000000);
        assert_int_equal(m.body_len, 2);
        assert_memory_equal(m.body, bodies[k], 2);
        assert_int_equal(m.body_crc, rmq_msg_body_crc(m.body, 2));
        assert_int_equal(m.topic_len, 1);
        assert_memory_equal(m.topic, "T", 1);
        const char *v;
        size_t vn;
        assert_true(rmq_msg_props_find(m.props, m.props_len, "TAGS", &v, &vn));
        assert_int_equal(vn, 1);
        assert_memory_equal(v, "a", 1);
    }
    assert_int_equal(at, r.body_len);
    rmq_cmd_clear(&r);

    pull(fx, a, 11, 1, 1, "b", false);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, a, 11, &r), RMQ_RESP_SUCCESS);
    assert_int_equal(ext_i64(&r, "nextBeginOffset"), 3); /* offset 2 was scanned, not taken */
    rmq_cmd_clear(&r);
    pull(fx, a, 12, 1, 2, "zzz", false);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, a, 12, &r), RMQ_RESP_PULL_RETRY_IMMEDIATELY);
    assert_int_equal(ext_i64(&r, "nextBeginOffset"), 3);
    rmq_cmd_clear(&r);
    pull(fx, a, 13, 1, 3, "*", false);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, a, 13, &r), RMQ_RESP_PULL_NOT_FOUND);
    assert_int_equal(ext_i64(&r, "nextBeginOffset"), 3);
    assert_int_equal(ext_i64(&r, "maxOffset"), 3);
    rmq_cmd_clear(&r);
    pull(fx, a, 14, 1, 9, "*", false);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, a, 14, &r), RMQ_RESP_PULL_OFFSET_MOVED);
    assert_int_equal(ext_i64(&r, "nextBeginOffset"), 0);
    rmq_cmd_clear(&r);
}

/* A held pull at the end is answered FOUND by the commit of a send to its
 * queue, after the send's own reply; never before the commit. */
static void test_held_pull_answered_by_send(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    (void)send_tagged(fx, a, 1, 2, "x", "first");
    pull(fx, b, 20, 2, 1, "*", true);
    fx_iterate(fx);
    assert_int_equal(fx->b.pulls.n, 1);
    struct rmq_cmd r;
    assert_int_equal(fx_recv(fx, b, &r), RMQ_EAGAIN);
    send_msg(fx, a, RMQ_REQ_SEND_MESSAGE, 2, "T", 2, "TAGS\001x", "second", 6);
    /* A pull in the same turn as the send does not see it: it is not committed. */
    pull(fx, b, 21, 2, 1, "*", false);
    fx_iterate(fx);
    fx_expect_reply(fx, a, 2, RMQ_RESP_SUCCESS, NULL);
    assert_int_equal(fx_reply(fx, b, 21, &r), RMQ_RESP_PULL_NOT_FOUND);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_reply(fx, b, 20, &r), RMQ_RESP_SUCCESS);
    assert_int_equal(ext_i64(&r, "nextBeginOffset"), 2);
    struct rmq_msg_record m;
    size_t used;
    char err[128];
    assert_int_equal(rmq_msg_record_decode(r.body, r.body_len, &m, &used, err, sizeof err), 0);
    assert_int_equal(m.queue_offset, 1);
    assert_memory_equal(m.body, "second", 6);
    assert_int_equal(used, r.body_len);
    rmq_cmd_clear(&r);
    assert_int_equal(fx->b.pulls.n, 0);
}

/* Without the SUBSCRIPTION flag the group's heartbeat subscription filters:
 * its codeSet. */
static void test_pull_filtered_by_heartbeat(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    (void)send_tagged(fx, a, 1, 0, "a", "m0");
    (void)send_tagged(fx, a, 2, 0, "b", "m1");
    (void)send_tagged(fx, a, 3, 0, "a", "m2");
    fx_handle_body(fx, a, consumer_req_heartbeat, RMQ_REQ_HEART_BEAT, 4,
                   "{\"clientID\":\"c1\",\"consumerDataSet\":[{\"groupName\":\"G\",\"consumeType\":"
                   "\"CONSUME_PASSIVELY\",\"messageModel\":\"CLUSTERING\",\"consumeFromWhere\":"
                   "\"CONSUME_FROM_LAST_OFFSET\",\"subscriptionDataSet\":[{\"classFilterMode\":false,"
                   "\"codeSet\":[98],\"expressionType\":\"TAG\",\"subString\":\"b\",\"subVersion\":1,"
                   "\"tagsSet\":[\"b\"],\"topic\":\"T\"}],\"unitMode\":false}],\"producerDataSet\":[]}");
    (void)fx_drain(fx, a);
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_PULL_MESSAGE, 5, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", "G"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "queueId", "0"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "queueOffset", "0"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "sysFlag", "0"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "maxMsgNums", "32"), 0);
    fx_handle(fx, a, pull_req_message, &req);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 5, &r), RMQ_RESP_SUCCESS);
    assert_int_equal(ext_i64(&r, "nextBeginOffset"), 3);
    struct rmq_msg_record m;
    size_t used;
    char err[128];
    assert_int_equal(rmq_msg_record_decode(r.body, r.body_len, &m, &used, err, sizeof err), 0);
    assert_int_equal(m.queue_offset, 1);
    assert_int_equal(used, r.body_len);
    rmq_cmd_clear(&r);
}

static int64_t offset_query(struct fx *fx, size_t a, fx_handler h, int32_t opaque, int qid, int64_t ts,
                            const char *key)
{
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_GET_MAX_OFFSET, opaque, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "queueId", qid), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "timestamp", ts), 0);
    fx_handle(fx, a, h, &req);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, opaque, &r), RMQ_RESP_SUCCESS);
    int64_t v = ext_i64(&r, key);
    rmq_cmd_clear(&r);
    return v;
}

/* GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP and
 * GET_EARLIEST_MSG_STORETIME from the stored messages. */
static void test_offset_queries(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    assert_int_equal(offset_query(fx, a, offset_req_earliest_msg_storetime, 1, 3, 0, "timestamp"), -1);
    int64_t t0 = broker_now_ms(&fx->b);
    (void)send_tagged(fx, a, 2, 3, "x", "a");
    fx_advance(fx, 1000);
    (void)send_tagged(fx, a, 3, 3, "x", "b");
    assert_int_equal(offset_query(fx, a, offset_req_get_max, 4, 3, 0, "offset"), 2);
    assert_int_equal(offset_query(fx, a, offset_req_get_min, 5, 3, 0, "offset"), 0);
    assert_int_equal(offset_query(fx, a, offset_req_earliest_msg_storetime, 6, 3, 0, "timestamp"), t0);
    assert_int_equal(offset_query(fx, a, offset_req_search, 7, 3, t0, "offset"), 0);
    assert_int_equal(offset_query(fx, a, offset_req_search, 8, 3, t0 + 1, "offset"), 1);
    assert_int_equal(offset_query(fx, a, offset_req_search, 9, 3, t0 + 5000, "offset"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_send_and_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_topic_no_auto, setup_no_auto, teardown),
        cmocka_unit_test_setup_teardown(test_pull_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_pull_answered_by_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_queries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_filtered_by_heartbeat, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
