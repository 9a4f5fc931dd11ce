/* h_offset.c — consumer offsets: QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
 * SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME. Committed offsets
 * live in memory (for answers) and in the store (for restarts); rmqcoord
 * stores no messages, so a queue's min offset is 0 and its max offset is the
 * highest offset any group committed for it. Loop thread only. */
#include "conn.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "request_codes.h"
#include "server.h"
#include "store.h"

#include <stdio.h>
#include <string.h>

/* Builds the key "a\0b\0<qid>" into out; returns its length. */
static size_t make_key(char *out, size_t cap, const char *a, const char *b, int32_t qid)
{
    int n = b ? snprintf(out, cap, "%s%c%s%c%d", a, 0, b, 0, (int)qid)
              : snprintf(out, cap, "%s%c%d", a, 0, (int)qid);
    return n < 0 ? 0 : ((size_t)n >= cap ? cap - 1 : (size_t)n);
}

static int put_box(struct hashmap *m, const char *key, size_t klen, int64_t v, bool keep_max)
{
    int64_t *box = hashmap_get(m, key, klen);
    if (box) {
        if (!keep_max || v > *box)
            *box = v;
        return RMQ_OK;
    }
    box = rmq_malloc(sizeof *box);
    if (!box)
        return RMQ_ENOMEM;
    *box = v;
    if (hashmap_put(m, key, klen, box, NULL) != 0) {
        rmq_free(box);
        return RMQ_ENOMEM;
    }
    return RMQ_OK;
}

int server_offset_load(struct server *s, const char *group, const char *topic, int32_t qid, int64_t offset)
{
    char key[600];
    size_t n = make_key(key, sizeof key, group, topic, qid);
    int rc = put_box(&s->offsets, key, n, offset, false);
    if (rc == 0) {
        n = make_key(key, sizeof key, topic, NULL, qid);
        rc = put_box(&s->queue_max, key, n, offset, true);
    }
    return rc;
}

int server_offset_get(const struct server *s, const char *group, const char *topic, int32_t qid, int64_t *out)
{
    char key[600];
    size_t n = make_key(key, sizeof key, group, topic, qid);
    const int64_t *box = hashmap_get(&s->offsets, key, n);
    if (!box)
        return RMQ_ENOTFOUND;
    *out = *box;
    return RMQ_OK;
}

int server_offset_commit(struct server *s, const char *group, const char *topic, int32_t qid, int64_t offset)
{
    int rc = server_offset_load(s, group, topic, qid, offset);
    if (rc == 0)
        rc = store_put_offset(s->store, group, topic, qid, offset, server_now_ms(s));
    return rc;
}

int64_t server_queue_max(const struct server *s, const char *topic, int32_t qid)
{
    char key[600];
    size_t n = make_key(key, sizeof key, topic, NULL, qid);
    const int64_t *box = hashmap_get(&s->queue_max, key, n);
    return box && *box > 0 ? *box : 0;
}

/* Reads the common (topic, queueId) pair; replies the error itself. */
static int topic_queue(struct server *s, struct conn *c, const struct rmq_cmd *req, const char **topic,
                       int32_t *qid)
{
    int64_t q;
    if (server_require_str(s, c, req, "topic", topic) != 0 ||
        server_require_i64(s, c, req, "queueId", &q) != 0)
        return RMQ_EINVAL;
    if (q < 0 || q > INT32_MAX) {
        server_reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "queueId out of range");
        return RMQ_EINVAL;
    }
    *qid = (int32_t)q;
    return RMQ_OK;
}

/* Replies SUCCESS with one extFields entry (e.g. offset=N). */
static void reply_value(struct server *s, struct conn *c, const struct rmq_cmd *req, const char *key,
                        int64_t v, bool durable)
{
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req, RMQ_RESP_SUCCESS, NULL) != 0 ||
        rmq_cmd_ext_set_i64(&resp, key, v) != 0) {
        rmq_cmd_clear(&resp);
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    server_send_reply(s, c, req, &resp, durable);
}

void h_query_offset(struct server *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group, *topic;
    int32_t qid;
    if (server_require_str(s, c, req, "consumerGroup", &group) != 0 ||
        topic_queue(s, c, req, &topic, &qid) != 0)
        return;
    int64_t off;
    if (server_offset_get(s, group, topic, qid, &off) == 0) {
        reply_value(s, c, req, "offset", off, false);
        return;
    }
    /* PROTOCOL: §2.2.7 — nothing committed: offset 0 while the queue's min
     * offset is 0 (always, with no messages stored), unless the client asks
     * for QUERY_NOT_FOUND with setZeroIfNotFound=false. */
    bool zero = true;
    if (rmq_cmd_ext_get_bool(req, "setZeroIfNotFound", &zero) != 0)
        zero = true;
    if (!zero) {
        server_reply_code(s, c, req, RMQ_RESP_QUERY_NOT_FOUND,
                          "Not found, no offset committed for this queue");
        return;
    }
    reply_value(s, c, req, "offset", 0, false);
}

void h_update_offset(struct server *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group, *topic;
    int32_t qid;
    int64_t off;
    if (server_require_str(s, c, req, "consumerGroup", &group) != 0 ||
        topic_queue(s, c, req, &topic, &qid) != 0 || server_require_i64(s, c, req, "commitOffset", &off) != 0)
        return;
    if (server_offset_commit(s, group, topic, qid, off) != 0) {
        log_error("offset %s/%s/%d not stored: %s", group, topic, (int)qid, store_errmsg(s->store));
        server_reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "offset not stored: storage error");
        return;
    }
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req, RMQ_RESP_SUCCESS, NULL) != 0) {
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    server_send_reply(s, c, req, &resp, true);
}

void h_get_max_offset(struct server *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    if (topic_queue(s, c, req, &topic, &qid) == 0)
        reply_value(s, c, req, "offset", server_queue_max(s, topic, qid), false);
}

void h_get_min_offset(struct server *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    if (topic_queue(s, c, req, &topic, &qid) == 0)
        reply_value(s, c, req, "offset", 0, false);
}

void h_search_offset(struct server *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    int64_t ts;
    if (topic_queue(s, c, req, &topic, &qid) != 0 || server_require_i64(s, c, req, "timestamp", &ts) != 0)
        return;
    /* No message is stored after any time: the answer is the queue's end. */
    reply_value(s, c, req, "offset", server_queue_max(s, topic, qid), false);
}

void h_earliest_msg_storetime(struct server *s, struct conn *c, struct rmq_cmd *req)
{
    const char *topic;
    int32_t qid;
    if (topic_queue(s, c, req, &topic, &qid) == 0)
        reply_value(s, c, req, "timestamp", -1, false);
}
