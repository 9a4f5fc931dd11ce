/* sim_pull.c — a simulated client's process queues: the offset lookup of a
 * newly won queue (QUERY_CONSUMER_OFFSET, then GET_MAX_OFFSET for
 * CONSUME_FROM_LAST_OFFSET), one long-polling PULL_MESSAGE outstanding per
 * held queue, re-pulled when answered, and oneway UPDATE_CONSUMER_OFFSET
 * when a queue is dropped and on the persist timer. The sim consumes
 * nothing, so its consumed offset is always the next pull offset.
 *
 * A queue lives while the client holds it or while a request about it is
 * outstanding (refs); a dropped queue's late reply only releases it.
 * Loop thread only. */
#include "sim_pull.h"

#include "sim_conn.h"
#include "sim_timer.h"

#include "clocks.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "request_codes.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

struct sim_pq *sim_pq_new(struct sim_client *c, struct sim_topic *t, const char *broker, int32_t queue_id)
{
    struct sim_pq *pq = rmq_calloc(1, sizeof *pq);
    if (!pq)
        return NULL;
    if (!(pq->broker_name = rmq_strdup(broker))) {
        rmq_free(pq);
        return NULL;
    }
    pq->client = c;
    pq->topic = t;
    pq->queue_id = queue_id;
    pq->offset = -1;
    pq->refs = 1;
    return pq;
}

void sim_pq_unref(struct sim_pq *pq)
{
    assert(!pq || pq->refs > 0); /* never released more often than taken */
    if (!pq || --pq->refs > 0)
        return;
    rmq_free(pq->broker_name);
    rmq_free(pq);
}

static struct sim *sim_of(const struct sim_pq *pq)
{
    return pq->client->sim;
}

/* The connection for the queue's broker, or NULL when the route has none. */
static struct rclient_conn *pq_conn(const struct sim_pq *pq)
{
    const char *addr = rmq_route_info_addr_of(&pq->topic->route, pq->broker_name);
    return addr ? sim_group_conn(pq->client->grp, addr) : NULL;
}

/* A request about the queue with the common extFields. */
static int pq_request_init(const struct sim_pq *pq, struct rmq_cmd *cmd, int32_t code, bool with_group)
{
    sim_request_init(sim_of(pq), cmd, code);
    int rc = 0;
    if (with_group)
        rc = rmq_cmd_ext_set(cmd, "consumerGroup", sim_of(pq)->cfg->group);
    if (!rc)
        rc = rmq_cmd_ext_set(cmd, "topic", pq->topic->name);
    if (!rc)
        rc = rmq_cmd_ext_set_i64(cmd, "queueId", pq->queue_id);
    if (!rc && sim_of(pq)->cfg->version >= 409) /* PROTOCOL: docs/protocol.md §2.1 bname since 4.9.8 */
        rc = rmq_cmd_ext_set(cmd, "bname", pq->broker_name);
    return rc;
}

/* Sends cmd about pq; on success the reply callback holds a reference. */
static int pq_send(struct sim_pq *pq, struct rmq_cmd *cmd, int64_t timeout, unsigned flags,
                   rclient_reply_cb cb)
{
    struct rclient_conn *conn = pq_conn(pq);
    int rc = conn ? rclient_conn_request(conn, cmd, timeout, flags, cb, pq) : RMQ_ENOTFOUND;
    if (rc == 0) {
        assert(!pq->busy); /* one offset query or pull outstanding per queue */
        pq->refs++;
        pq->busy = true;
    }
    return rc;
}

/* Tries again after delay_ms (the client timer picks it up). */
static void retry_later(struct sim_pq *pq, int64_t delay_ms)
{
    pq->retry_at = loop_now_ms(sim_of(pq)->loop) + delay_ms;
    sim_client_arm(pq->client);
}

static void start_pull(struct sim_pq *pq);
static void query_offset(struct sim_pq *pq);
static void persist(struct sim_pq *pq);

/* Common head of every reply callback: false when the reply no longer
 * matters (shutdown, queue dropped); then the reference is released. */
static bool reply_matters(struct sim_pq *pq, int status)
{
    assert(pq->busy && pq->refs >= 1); /* the reply's own reference */
    pq->busy = false;
    if (status == RMQ_ESTATE || pq->dropped || sim_of(pq)->stopping) {
        sim_pq_unref(pq);
        return false;
    }
    return true;
}

static void on_max_offset(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_pq *pq = ctx;
    if (!reply_matters(pq, status))
        return;
    int64_t off;
    if (status == 0 && resp->code == RMQ_RESP_SUCCESS && rmq_cmd_ext_get_i64(resp, "offset", &off) == 0 &&
        off >= 0) {
        pq->offset = off;
        start_pull(pq);
    } else {
        retry_later(pq, SIM_PULL_DELAY_EXCEPTION_MS);
    }
    assert(pq->refs >= 2 || !pq->busy); /* a request sent above holds its own reference */
    sim_pq_unref(pq);
}

static void get_max_offset(struct sim_pq *pq)
{
    struct rmq_cmd cmd;
    int rc = pq_request_init(pq, &cmd, RMQ_REQ_GET_MAX_OFFSET, false);
    if (!rc)
        rc = pq_send(pq, &cmd, SIM_TIMEOUT_ADMIN_MS, SIM_REQ_SYNC, on_max_offset);
    rmq_cmd_clear(&cmd);
    if (rc)
        retry_later(pq, SIM_PULL_DELAY_EXCEPTION_MS);
}

/* PROTOCOL: docs/protocol.md §5.1 no stored offset + CONSUME_FROM_LAST_OFFSET: the retry
 * topic starts at 0, a normal topic at its max offset. */
static void no_stored_offset(struct sim_pq *pq)
{
    if (pq->topic->retry) {
        pq->offset = 0;
        start_pull(pq);
    } else {
        get_max_offset(pq);
    }
}

static void on_offset(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_pq *pq = ctx;
    if (!reply_matters(pq, status))
        return;
    int64_t off;
    if (status != 0)
        retry_later(pq, SIM_PULL_DELAY_EXCEPTION_MS);
    else if (resp->code == RMQ_RESP_SUCCESS && rmq_cmd_ext_get_i64(resp, "offset", &off) == 0 && off >= 0) {
        pq->offset = off;
        start_pull(pq);
    } else /* PROTOCOL: docs/protocol.md §5.1 4.9.x reads any error code as "no offset" */
        no_stored_offset(pq);
    sim_pq_unref(pq);
}

static void query_offset(struct sim_pq *pq)
{
    if (sim_of(pq)->cfg->broadcast) {
        /* Broadcasting keeps offsets in a local file; a fresh sim has none. */
        no_stored_offset(pq);
        return;
    }
    struct rmq_cmd cmd;
    int rc = pq_request_init(pq, &cmd, RMQ_REQ_QUERY_CONSUMER_OFFSET, true);
    if (!rc)
        rc = pq_send(pq, &cmd, SIM_TIMEOUT_OFFSET_MS, SIM_REQ_SYNC, on_offset);
    rmq_cmd_clear(&cmd);
    if (rc)
        retry_later(pq, SIM_PULL_DELAY_EXCEPTION_MS);
}

void sim_pq_begin(struct sim_pq *pq)
{
    query_offset(pq);
}

/* PROTOCOL: docs/protocol.md §6 reply code -> when to pull next. */
static void on_pull(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_pq *pq = ctx;
    if (!reply_matters(pq, status))
        return;
    int64_t next;
    bool has_next = status == 0 && rmq_cmd_ext_get_i64(resp, "nextBeginOffset", &next) == 0 && next >= 0;
    int code = status == 0 ? resp->code : -1;
    if (has_next && (code == RMQ_RESP_SUCCESS || code == RMQ_RESP_PULL_NOT_FOUND ||
                     code == RMQ_RESP_PULL_RETRY_IMMEDIATELY)) {
        pq->offset = next;
        start_pull(pq);
    } else if (has_next && code == RMQ_RESP_PULL_OFFSET_MOVED) {
        /* 4.9.x: offset corrected and persisted, the queue comes back later. */
        pq->offset = next;
        persist(pq);
        retry_later(pq, SIM_PULL_DELAY_MOVED_MS);
    } else {
        retry_later(pq, code == RMQ_RESP_FLOW_CONTROL ? SIM_PULL_DELAY_FLOW_MS : SIM_PULL_DELAY_EXCEPTION_MS);
    }
    sim_pq_unref(pq);
}

static void start_pull(struct sim_pq *pq)
{
    assert(pq->offset >= 0 && !pq->dropped);
    struct rmq_cmd cmd;
    int64_t commit = pq->offset;
    int rc = pq_request_init(pq, &cmd, RMQ_REQ_PULL_MESSAGE, true);
    /* PROTOCOL: docs/protocol.md §6 sysFlag SUSPEND, plus COMMIT_OFFSET once there is one. */
    if (!rc)
        rc = rmq_cmd_ext_set_i64(&cmd, "queueOffset", pq->offset);
    if (!rc)
        rc = rmq_cmd_ext_set(&cmd, "maxMsgNums", "32");
    if (!rc)
        rc = rmq_cmd_ext_set_i64(&cmd, "sysFlag", commit > 0 ? 3 : 2);
    if (!rc)
        rc = rmq_cmd_ext_set_i64(&cmd, "commitOffset", commit);
    if (!rc)
        rc = rmq_cmd_ext_set_i64(&cmd, "suspendTimeoutMillis", SIM_PULL_SUSPEND_MS);
    if (!rc)
        rc = rmq_cmd_ext_set_i64(&cmd, "subVersion", pq->topic->sub_version);
    if (!rc)
        rc = rmq_cmd_ext_set(&cmd, "expressionType", "TAG");
    if (!rc)
        rc = pq_send(pq, &cmd, SIM_TIMEOUT_PULL_MS, 0, on_pull); /* async: a timeout keeps the socket */
    rmq_cmd_clear(&cmd);
    if (rc) {
        retry_later(pq, SIM_PULL_DELAY_EXCEPTION_MS);
        return;
    }
    pq->last_pull_wall = rmq_wall_ms();
    sim_of(pq)->stats.pulls++;
}

/* Oneway UPDATE_CONSUMER_OFFSET with the queue's consumed offset. */
static void persist(struct sim_pq *pq)
{
    if (sim_of(pq)->cfg->broadcast || pq->offset < 0)
        return;
    struct rclient_conn *conn = pq_conn(pq);
    struct rmq_cmd cmd;
    int rc = pq_request_init(pq, &cmd, RMQ_REQ_UPDATE_CONSUMER_OFFSET, true);
    if (!rc)
        rc = rmq_cmd_ext_set_i64(&cmd, "commitOffset", pq->offset);
    if (!rc && conn)
        rc = rclient_conn_oneway(conn, &cmd);
    if (rc)
        log_debug("sim: %s: offset of %s/%d not persisted: %s", pq->client->id, pq->topic->name, pq->queue_id,
                  rmq_strerror(rc));
    rmq_cmd_clear(&cmd);
}

void sim_pq_drop(struct sim_pq *pq)
{
    assert(!pq->dropped); /* dropped once, by the holdings that owned it */
    pq->dropped = true;
    persist(pq);
    sim_pq_unref(pq);
}

void sim_pq_persist_all(struct sim_client *c)
{
    for (size_t i = 0; i < c->ntopics; i++)
        for (size_t j = 0; j < c->topics[i].nheld; j++)
            persist(c->topics[i].held[j]);
}

void sim_pq_run_due(struct sim_client *c, int64_t now)
{
    for (size_t i = 0; i < c->ntopics; i++)
        for (size_t j = 0; j < c->topics[i].nheld; j++) {
            struct sim_pq *pq = c->topics[i].held[j];
            assert(pq->client == c && !pq->dropped); /* held queues are live */
            if (pq->busy || !pq->retry_at || pq->retry_at > now)
                continue;
            pq->retry_at = 0;
            if (pq->offset < 0)
                query_offset(pq);
            else
                start_pull(pq);
        }
}
