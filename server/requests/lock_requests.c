/* lock_requests.c — LOCK_BATCH_MQ / UNLOCK_BATCH_MQ for orderly consumers:
 * the bodies parsed and answered here, the rules in model/queue_locks.c
 * (lease --lock-expiry-ms, the broker's 60 s; PROTOCOL: docs/protocol.md §7).
 * Loop thread only. */
#include "lock_requests.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "loop.h"
#include "mem.h"
#include "reply.h"
#include "request_codes.h"
#include "rmq_body.h"

#include <assert.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#ifndef NDEBUG
/* For asserts: whether client holds (held) or holds none of (!held) the
 * locks of mqs in group. */
static bool locks_held(const struct broker *s, const char *group, const char *client,
                       const struct rmq_mq *mqs, size_t n, bool held)
{
    for (size_t i = 0; i < n; i++) {
        const char *holder = queue_locks_holder(&s->locks, group, &mqs[i]);
        if ((holder && !strcmp(holder, client)) != held)
            return false;
    }
    return true;
}
#endif

static int parse_body(struct broker *s, struct conn *c, const struct rmq_cmd *req, struct rmq_lock_body *b)
{
    memset(b, 0, sizeof *b);
    char err[200], remark[256];
    if (rmq_lock_body_parse(req->body, req->body_len, b, err, sizeof err) != 0) {
        snprintf(remark, sizeof remark, "bad %s body: %s", rmq_request_name(req->code), err);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        rmq_lock_body_clear(b);
        return RMQ_EPROTO;
    }
    assert(b->client_id && b->consumer_group); /* both are required fields */
    return RMQ_OK;
}

void lock_req_lock_batch(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    struct rmq_lock_body b;
    if (parse_body(s, c, req, &b) != 0)
        return;
    int64_t now = broker_now_ms(s);
    struct rmq_mq *ok = b.nmqs ? rmq_malloc(b.nmqs * sizeof *ok) : NULL;
    size_t nok = 0;
    struct buf body;
    buf_init(&body, 0);
    int rc = (b.nmqs && !ok) ? RMQ_ENOMEM : 0;
    for (size_t i = 0; rc == 0 && i < b.nmqs; i++)
        if (queue_locks_acquire(&s->locks, b.consumer_group, b.client_id, &b.mqs[i], now,
                                s->cfg->lock_expiry_ms))
            ok[nok++] = b.mqs[i];
    assert(nok <= b.nmqs);
    /* Every queue answered as locked is the caller's (docs/protocol.md §7). */
    assert(rc != 0 || locks_held(s, b.consumer_group, b.client_id, ok, nok, true));
    if (rc == 0)
        rc = rmq_lock_ok_encode(ok, nok, &body);
    reply_body(s, c, req, rc, &body, false);
    rmq_free(ok);
    rmq_lock_body_clear(&b);
}

void lock_req_unlock_batch(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    struct rmq_lock_body b;
    /* --compat: the broker unlocks nothing and answers SUCCESS for a JSON body that lacks
     * clientId or mqSet (docs/protocol.md §12); rmqcoord names the missing field. */
    if (s->cfg->dialect.unlock_lenient && req->body_len > 0) {
        json_t *root = json_loadb((const char *)req->body, req->body_len, 0, NULL);
        bool object = json_is_object(root);
        json_decref(root);
        char err[200];
        memset(&b, 0, sizeof b);
        int bad = rmq_lock_body_parse(req->body, req->body_len, &b, err, sizeof err);
        rmq_lock_body_clear(&b);
        if (bad && object) {
            reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
            return;
        }
    }
    if (parse_body(s, c, req, &b) != 0)
        return;
    for (size_t i = 0; i < b.nmqs; i++)
        queue_locks_release(&s->locks, b.consumer_group, b.client_id, &b.mqs[i]);
    assert(locks_held(s, b.consumer_group, b.client_id, b.mqs, b.nmqs, false));
    rmq_lock_body_clear(&b);
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}
