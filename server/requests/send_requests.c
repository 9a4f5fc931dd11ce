/* send_requests.c — SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE, as
 * SendMessageProcessor of 4.9.8 and 5.3.3 answers them: the topic (created
 * when --auto-create-queues allows), the queue id (a negative one picks a
 * write queue), the size limits, then one record per message with the
 * queue's next offsets, answered SUCCESS once the batch commits (PROTOCOL:
 * docs/protocol.md §13). Loop thread only. */
#include "send_requests.h"

#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "message_batch.h"
#include "message_id.h"
#include "message_props.h"
#include "message_queues.h"
#include "message_record.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"
#include "store_messages.h"

#include <arpa/inet.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQ_SEND_BATCH_MESSAGE 320
#define RESP_MESSAGE_ILLEGAL 13
#define SEND_MAX_BODY (4 * 1024 * 1024)
#define SEND_MAX_PROPS 32767
/* The most messages one batch may carry: its offsets are reserved at once. */
#define SEND_MAX_BATCH 4096

/* SendMessageRequestHeaderV2's one-letter keys, in the order of the V1 names. */
static const char *const v1_names[] = {
    "producerGroup", "topic",     "defaultTopic", "defaultTopicQueueNums", "queueId",  "sysFlag",
    "bornTimestamp", "flag",      "properties",   "reconsumeTimes",        "unitMode", "maxReconsumeTimes",
    "batch",         "brokerName"};
static const char *const v2_keys[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"};

/* The key a V1 field name has in req (V2 requests use one letter). */
static const char *key_of(const struct rmq_cmd *req, const char *name)
{
    if (req->code != RMQ_REQ_SEND_MESSAGE_V2 && req->code != REQ_SEND_BATCH_MESSAGE)
        return name;
    if (req->code == REQ_SEND_BATCH_MESSAGE && !rmq_cmd_ext_get(req, "b"))
        return name; /* a batch may come with either header */
    for (size_t i = 0; i < sizeof v1_names / sizeof v1_names[0]; i++)
        if (!strcmp(v1_names[i], name))
            return v2_keys[i];
    return name;
}

static const char *field(const struct rmq_cmd *req, const char *name)
{
    return rmq_cmd_ext_get(req, key_of(req, name));
}

static int field_i64(const struct rmq_cmd *req, const char *name, int64_t *out)
{
    return rmq_cmd_ext_get_i64(req, key_of(req, name), out);
}

/* "ip:port", "[v6]:port" or "v6:port" into a record host; false when it is
 * no address literal. */
static bool parse_host(const char *text, struct rmq_msg_host *h)
{
    memset(h, 0, sizeof *h);
    const char *colon = strrchr(text, ':');
    if (!colon)
        return false;
    char ip[64];
    size_t n = (size_t)(colon - text);
    if (n >= sizeof ip)
        return false;
    memcpy(ip, text, n);
    ip[n] = 0;
    char *p = ip;
    if (*p == '[' && n >= 2 && p[n - 1] == ']') {
        p[n - 1] = 0;
        p++;
    }
    h->port = atoi(colon + 1);
    if (inet_pton(AF_INET, p, h->ip) == 1)
        return true;
    if (inet_pton(AF_INET6, p, h->ip) == 1) {
        h->v6 = true;
        return true;
    }
    return false;
}

/* The host records carry as the store host and offset ids name: the
 * advertised address, or 127.0.0.1 at its port when that is a name. */
static void store_host(const struct broker *s, struct rmq_msg_host *h)
{
    if (parse_host(s->advertise, h))
        return;
    const char *colon = strrchr(s->advertise, ':');
    memset(h, 0, sizeof *h);
    h->ip[0] = 127;
    h->ip[3] = 1;
    h->port = colon ? atoi(colon + 1) : 0;
}

/* The topic, created as a broker with autoCreateTopicEnable creates it
 * (no more queues than the producer's defaultTopicQueueNums asks); NULL
 * when it does not exist and may not be created. */
static const struct topic *send_topic(struct broker *s, const struct rmq_cmd *req, const char *name)
{
    const struct topic *tp = topics_get(&s->topics, name);
    if (tp || s->cfg->auto_create_queues <= 0 || s->cfg->role != CONFIG_ROLE_BOTH)
        return tp;
    int64_t want = 0;
    int n = s->cfg->auto_create_queues;
    if (field_i64(req, "defaultTopicQueueNums", &want) == 0 && want > 0 && want < n)
        n = (int)want;
    return broker_create_topic(s, name, n);
}

/* The topic's queue counts on this broker (its named broker, else the first). */
static const struct topic_broker *own_broker(const struct broker *s, const struct topic *tp,
                                             const struct rmq_cmd *req)
{
    const char *bname = field(req, "brokerName");
    if (!bname || !*bname)
        bname = s->cfg->broker_name;
    for (size_t i = 0; i < tp->nbrokers; i++)
        if (!strcmp(tp->brokers[i].broker_name, bname))
            return &tp->brokers[i];
    return &tp->brokers[0];
}

/* The common header of a send, read and checked. */
struct send_ctx {
    const char *topic;
    int32_t qid;
    int32_t sys_flag;
    int32_t flag;
    int32_t reconsume;
    int64_t born_ms;
    struct rmq_msg_host born, store;
};

/* One message: its properties as stored (owned buf), tags code, keys. */
struct send_msg {
    struct buf props;
    char uniq[RMQ_MSG_UNIQ_LEN + 1 + 200];
    char *keys; /* owned, may be NULL */
    int64_t tags_code;
    int32_t flag;
    const uint8_t *body;
    size_t body_len;
};

static uint16_t uniq_counter;

/* The stored properties of one message: the producer's, plus CLUSTER (as
 * 4.9.8 adds) and a UNIQ_KEY when it sent none (as 5.3.3 fills it). */
static int prepare(struct broker *s, const struct send_ctx *x, const char *props, size_t props_len,
                   struct send_msg *m, char *err, size_t errlen)
{
    struct rmq_msg_props p = {0};
    buf_init(&m->props, 0);
    int rc = rmq_msg_props_parse(props ? props : "", props_len, &p, err, errlen);
    if (rc != 0)
        return rc;
    const char *u = rmq_msg_props_get(&p, RMQ_PROP_UNIQ_KEY);
    if (!u || strlen(u) >= sizeof m->uniq) {
        rmq_msg_uniq_id(x->store.v6 ? (const uint8_t[4]){127, 0, 0, 1} : x->store.ip, (uint32_t)getpid(),
                        (uint32_t)s->run_id, broker_now_ms(s), uniq_counter++, m->uniq);
        rc = rmq_msg_props_set(&p, RMQ_PROP_UNIQ_KEY, m->uniq);
    } else {
        snprintf(m->uniq, sizeof m->uniq, "%s", u);
    }
    if (rc == 0 && !rmq_msg_props_get(&p, RMQ_PROP_CLUSTER) && s->cfg->cluster_name[0])
        rc = rmq_msg_props_set(&p, RMQ_PROP_CLUSTER, s->cfg->cluster_name);
    const char *tags = rmq_msg_props_get(&p, RMQ_PROP_TAGS);
    m->tags_code = tags ? rmq_msg_tags_code(tags, strlen(tags)) : 0;
    const char *keys = rmq_msg_props_get(&p, RMQ_PROP_KEYS);
    if (rc == 0 && keys && !(m->keys = rmq_strdup(keys)))
        rc = RMQ_ENOMEM;
    if (rc == 0)
        rc = rmq_msg_props_encode(&p, &m->props);
    if (rc == 0 && m->props.len > SEND_MAX_PROPS) {
        snprintf(err, errlen, "properties over %d bytes", SEND_MAX_PROPS);
        rc = RMQ_EINVAL;
    }
    rmq_msg_props_clear(&p);
    return rc;
}

static void send_msg_clear(struct send_msg *m)
{
    buf_free(&m->props);
    rmq_free(m->keys);
    m->keys = NULL;
}

/* Stores n prepared messages at consecutive offsets; *first_offset and
 * *first_id get the first's. 0 or an error (nothing reserved then; what
 * the batch holds is undone with it when the commit is not made). */
static int put_all(struct broker *s, const struct send_ctx *x, struct send_msg *ms, size_t n,
                   int64_t *first_offset, int64_t *first_id)
{
    int rc = message_queues_reserve(&s->mqs, x->topic, x->qid, (int)n, first_offset, first_id);
    if (rc != 0)
        return rc;
    int64_t now = broker_now_ms(s);
    size_t put = 0;
    int32_t host_bits =
        (x->born.v6 ? RMQ_MSG_SYS_BORNHOST_V6 : 0) | (x->store.v6 ? RMQ_MSG_SYS_STOREHOST_V6 : 0);
    int32_t sys_flag = (x->sys_flag & ~(RMQ_MSG_SYS_BORNHOST_V6 | RMQ_MSG_SYS_STOREHOST_V6)) | host_bits;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct send_msg *m = &ms[i];
        struct store_message sm = {
            .physical_id = *first_id + (int64_t)i,
            .topic = x->topic,
            .queue_id = x->qid,
            .queue_offset = *first_offset + (int64_t)i,
            .born_ms = x->born_ms,
            .store_ms = now,
            .flag = m->flag,
            .sys_flag = sys_flag,
            .tags_code = m->tags_code,
            .reconsume_times = x->reconsume,
            .body_crc = rmq_msg_body_crc(m->body, m->body_len),
            .uniq_key = m->uniq,
            .keys = m->keys,
            .born_host = x->born,
            .store_host = x->store,
            .properties = (const char *)m->props.data,
            .properties_len = m->props.len,
            .body = m->body,
            .body_len = m->body_len,
        };
        rc = store_put_message(s->store, &sm);
        if (rc == 0)
            put++;
    }
    /* Rows already in the batch keep their offsets; the rest go back, so the queue has no gap. */
    if (rc != 0)
        message_queues_unreserve(&s->mqs, x->topic, x->qid, (int)(n - put));
    return rc;
}

/* The SUCCESS reply: msgId (comma-joined for a batch), queueId,
 * queueOffset of the first, transactionId, MSG_REGION and TRACE_ON. */
static void answer(struct broker *s, struct conn *c, const struct rmq_cmd *req, const struct send_ctx *x,
                   size_t n, int64_t first_offset, int64_t first_id, const char *uniq)
{
    struct buf ids;
    buf_init(&ids, 0);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char id[RMQ_MSG_ID_V6_LEN + 1];
        size_t len = rmq_msg_offset_id(&x->store, first_id + (int64_t)i, id);
        if (i > 0)
            rc = buf_append(&ids, ",", 1);
        if (rc == 0)
            rc = buf_append(&ids, id, len);
    }
    if (rc == 0)
        rc = buf_append(&ids, "", 1);
    struct rmq_cmd resp;
    if (rc != 0 || rmq_cmd_init_response(&resp, req, RMQ_RESP_SUCCESS, NULL) != 0 ||
        rmq_cmd_ext_set(&resp, "msgId", (const char *)ids.data) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "queueId", x->qid) != 0 ||
        rmq_cmd_ext_set_i64(&resp, "queueOffset", first_offset) != 0 ||
        (uniq && rmq_cmd_ext_set(&resp, "transactionId", uniq) != 0) ||
        rmq_cmd_ext_set(&resp, RMQ_PROP_MSG_REGION, "DefaultRegion") != 0 ||
        rmq_cmd_ext_set(&resp, RMQ_PROP_TRACE_ON, "true") != 0) {
        buf_free(&ids);
        rmq_cmd_clear(&resp);
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    buf_free(&ids);
    reply_send(s, c, req, &resp, true);
}

/* Reads and checks the header; replies the error itself. */
static int read_header(struct broker *s, struct conn *c, const struct rmq_cmd *req, struct send_ctx *x)
{
    memset(x, 0, sizeof *x);
    const char *group = field(req, "producerGroup");
    x->topic = field(req, "topic");
    int64_t qid, sys_flag, born, flag = 0, reconsume = 0;
    if (!group || !*group || !x->topic || !*x->topic || field_i64(req, "queueId", &qid) != 0 ||
        field_i64(req, "sysFlag", &sys_flag) != 0 || field_i64(req, "bornTimestamp", &born) != 0 ||
        field_i64(req, "flag", &flag) != 0) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "missing or malformed send message header field");
        return RMQ_EINVAL;
    }
    (void)field_i64(req, "reconsumeTimes", &reconsume);
    if (!topics_name_ok(x->topic)) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "the specified topic is illegal");
        return RMQ_EINVAL;
    }
    const struct topic *tp = send_topic(s, req, x->topic);
    if (!tp) {
        char remark[400];
        snprintf(remark, sizeof remark,
                 "topic[%s] not exist, apply first please!\nSee http://rocketmq.apache.org/docs/faq/ for "
                 "further details.",
                 x->topic);
        reply_code(s, c, req, RMQ_RESP_TOPIC_NOT_EXIST, remark);
        return RMQ_ENOTFOUND;
    }
    x->topic = tp->name;
    const struct topic_broker *tb = own_broker(s, tp, req);
    int valid = tb->write_queue_nums > tb->read_queue_nums ? tb->write_queue_nums : tb->read_queue_nums;
    if (qid >= valid || qid > INT32_MAX) {
        char remark[600];
        snprintf(remark, sizeof remark,
                 "request queueId[%lld] is illegal, TopicConfig [topicName=%s, readQueueNums=%d, "
                 "writeQueueNums=%d, perm=%d] Producer: %s",
                 (long long)qid, tp->name, tb->read_queue_nums, tb->write_queue_nums, tb->perm, c->peer);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        return RMQ_EINVAL;
    }
    if (qid < 0) /* the broker picks one of the write queues */
        qid = tb->write_queue_nums > 0 ? s->mqs.next_physical_id % tb->write_queue_nums : 0;
    x->qid = (int32_t)qid;
    x->sys_flag = (int32_t)sys_flag;
    x->flag = (int32_t)flag;
    x->reconsume = (int32_t)reconsume;
    x->born_ms = born;
    if (!parse_host(c->peer, &x->born)) {
        x->born.ip[0] = 127;
        x->born.ip[3] = 1;
    }
    store_host(s, &x->store);
    return RMQ_OK;
}

static void illegal(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *why)
{
    char remark[300];
    snprintf(remark, sizeof remark,
             "the message is illegal, maybe msg body or properties length not matched. msg body length limit "
             "%dk, msg properties length limit 32k (%s)",
             SEND_MAX_BODY / 1024, why);
    reply_code(s, c, req, RESP_MESSAGE_ILLEGAL, remark);
}

static void store_failed(struct broker *s, struct conn *c, const struct rmq_cmd *req, int rc)
{
    log_limited(&s->store_log, loop_now_ms(s->loop), LOG_ERROR, "message not stored: %s (%d)",
                store_errmsg(s->store), rc);
    reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "message not stored: storage error");
}

static void send_one(struct broker *s, struct conn *c, struct rmq_cmd *req, const struct send_ctx *x)
{
    const char *props = field(req, "properties");
    size_t props_len = props ? strlen(props) : 0;
    if (props_len > SEND_MAX_PROPS || req->body_len > SEND_MAX_BODY) {
        illegal(s, c, req, props_len > SEND_MAX_PROPS ? "properties" : "body");
        return;
    }
    struct send_msg m = {.flag = x->flag, .body = req->body, .body_len = req->body_len};
    char err[200] = "";
    int rc = prepare(s, x, props, props_len, &m, err, sizeof err);
    if (rc == RMQ_EINVAL || rc == RMQ_EPROTO) {
        illegal(s, c, req, err);
    } else if (rc != 0) {
        conn_close_async(c, "out of memory storing a message");
    } else {
        int64_t off, id;
        rc = put_all(s, x, &m, 1, &off, &id);
        if (rc != 0)
            store_failed(s, c, req, rc);
        else
            answer(s, c, req, x, 1, off, id, m.uniq);
    }
    send_msg_clear(&m);
}

static void send_batch(struct broker *s, struct conn *c, struct rmq_cmd *req, const struct send_ctx *x)
{
    struct rmq_msg_batch b = {0};
    char err[200] = "";
    int rc = rmq_msg_batch_decode(req->body, req->body_len, &b, err, sizeof err);
    if (rc == 0 && b.n > SEND_MAX_BATCH) {
        snprintf(err, sizeof err, "a batch of %zu messages, over %d", b.n, SEND_MAX_BATCH);
        rc = RMQ_EPROTO;
    }
    if (rc != 0) {
        rmq_msg_batch_clear(&b);
        if (rc == RMQ_ENOMEM)
            conn_close_async(c, "out of memory decoding a batch");
        else
            illegal(s, c, req, err);
        return;
    }
    struct send_msg *ms = rmq_calloc(b.n, sizeof *ms);
    if (!ms) {
        rmq_msg_batch_clear(&b);
        conn_close_async(c, "out of memory storing a batch");
        return;
    }
    for (size_t i = 0; i < b.n && rc == 0; i++) {
        ms[i].flag = b.items[i].flag;
        ms[i].body = b.items[i].body;
        ms[i].body_len = b.items[i].body_len;
        if (ms[i].body_len > SEND_MAX_BODY) {
            snprintf(err, sizeof err, "message %zu: body", i);
            rc = RMQ_EINVAL;
        } else {
            rc = prepare(s, x, b.items[i].props, b.items[i].props_len, &ms[i], err, sizeof err);
        }
    }
    if (rc == RMQ_EINVAL || rc == RMQ_EPROTO) {
        illegal(s, c, req, err);
    } else if (rc != 0) {
        conn_close_async(c, "out of memory storing a batch");
    } else {
        int64_t off, id;
        rc = put_all(s, x, ms, b.n, &off, &id);
        if (rc != 0)
            store_failed(s, c, req, rc);
        else
            answer(s, c, req, x, b.n, off, id, NULL);
    }
    for (size_t i = 0; i < b.n; i++)
        send_msg_clear(&ms[i]);
    rmq_free(ms);
    rmq_msg_batch_clear(&b);
}

void send_req_message(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    struct send_ctx x;
    if (read_header(s, c, req, &x) != 0)
        return;
    if (req->code == REQ_SEND_BATCH_MESSAGE)
        send_batch(s, c, req, &x);
    else
        send_one(s, c, req, &x);
}

static int load_range(void *ctx, const char *topic, int queue_id, int64_t min_offset, int64_t max_offset,
                      int64_t count, int64_t bytes)
{
    (void)count;
    (void)bytes;
    return message_queues_load(ctx, topic, queue_id, min_offset, max_offset);
}

int send_load_queues(struct broker *s)
{
    int64_t max_id = 0;
    int rc = store_load_queue_ranges(s->store, load_range, &s->mqs, &max_id);
    if (rc == 0)
        s->mqs.next_physical_id = max_id + 1;
    return rc;
}
