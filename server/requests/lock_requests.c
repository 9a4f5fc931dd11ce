/* lock_requests.c — LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: per-group queue locks for
 * orderly consumers. A lock is granted when the queue is free, already held
 * by the same client id, or its holder's lease (--lock-expiry-ms, the
 * broker's 60 s) has run out; unlock removes it only for its holder
 * (PROTOCOL: docs/protocol.md §7). In memory only, like the broker's. Loop thread only. */
#include "lock_requests.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "loop.h"
#include "mem.h"
#include "reply.h"
#include "request_codes.h"
#include "rmq_body.h"

#include <stdio.h>
#include <string.h>

struct queue_lock {
    char *client_id; /* owned */
    int64_t renewed_ms;
};

static size_t lock_key(char *out, size_t cap, const char *group, const struct rmq_mq *mq)
{
    int n =
        snprintf(out, cap, "%s%c%s%c%s%c%d", group, 0, mq->topic, 0, mq->broker_name, 0, (int)mq->queue_id);
    return n < 0 ? 0 : ((size_t)n >= cap ? cap - 1 : (size_t)n);
}

static void free_lock(void *p)
{
    struct queue_lock *l = p;
    if (l)
        rmq_free(l->client_id);
    rmq_free(l);
}

void lock_free_all(struct broker *s)
{
    hashmap_free(&s->locks, free_lock);
}

/* Tries to take or renew the lock; true when the client holds it after. */
static bool try_lock(struct broker *s, const char *group, const char *client, const struct rmq_mq *mq,
                     int64_t now)
{
    char key[1024];
    size_t n = lock_key(key, sizeof key, group, mq);
    struct queue_lock *l = hashmap_get(&s->locks, key, n);
    if (l) {
        bool mine = !strcmp(l->client_id, client);
        if (!mine && now - l->renewed_ms <= s->cfg->lock_expiry_ms)
            return false;
        if (!mine) {
            char *id = rmq_strdup(client);
            if (!id)
                return false;
            rmq_free(l->client_id);
            l->client_id = id;
        }
        l->renewed_ms = now;
        return true;
    }
    l = rmq_calloc(1, sizeof *l);
    if (!l)
        return false;
    l->client_id = rmq_strdup(client);
    l->renewed_ms = now;
    if (!l->client_id || hashmap_put(&s->locks, key, n, l, NULL) != 0) {
        free_lock(l);
        return false;
    }
    return true;
}

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
    return RMQ_OK;
}

void handle_lock_batch(struct broker *s, struct conn *c, struct rmq_cmd *req)
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
        if (try_lock(s, b.consumer_group, b.client_id, &b.mqs[i], now))
            ok[nok++] = b.mqs[i];
    if (rc == 0)
        rc = rmq_lock_ok_encode(ok, nok, &body);
    reply_body(s, c, req, rc, &body, false);
    rmq_free(ok);
    rmq_lock_body_clear(&b);
}

void handle_unlock_batch(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    struct rmq_lock_body b;
    if (parse_body(s, c, req, &b) != 0)
        return;
    for (size_t i = 0; i < b.nmqs; i++) {
        char key[1024];
        size_t n = lock_key(key, sizeof key, b.consumer_group, &b.mqs[i]);
        struct queue_lock *l = hashmap_get(&s->locks, key, n);
        if (l && !strcmp(l->client_id, b.client_id))
            free_lock(hashmap_remove(&s->locks, key, n));
    }
    rmq_lock_body_clear(&b);
    reply_code(s, c, req, RMQ_RESP_SUCCESS, NULL);
}
