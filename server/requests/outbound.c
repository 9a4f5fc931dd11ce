/* outbound.c — see outbound.h. Loop thread only. */
#include "outbound.h"

#include "broker.h"
#include "conn.h"
#include "err.h"
#include "loop.h"
#include "mem.h"
#include "array.h"

#include <string.h>

int outbound_send(struct broker *s, struct conn *c, struct rmq_cmd *req, int64_t timeout_ms, outbound_cb cb,
                  void *ctx)
{
    if (RMQ_GROW(s->outbound, s->outbound_cap, s->noutbound + 1, 16) != 0)
        return RMQ_ENOMEM;
    /* Our opaques count up from a large base so they are easy to tell from
     * the client's own numbers in captures; matching is by flag anyway. */
    req->opaque = s->next_opaque++;
    req->flag = 0;
    req->serialize_type = RMQ_SERIALIZE_JSON;
    int rc = conn_send(c, req);
    if (rc != 0)
        return rc;
    s->outbound[s->noutbound++] = (struct outbound_pending){.conn = c,
                                                            .opaque = req->opaque,
                                                            .deadline_ms = loop_now_ms(s->loop) + timeout_ms,
                                                            .cb = cb,
                                                            .ctx = ctx};
    return RMQ_OK;
}

/* Removes entry i (order kept: callbacks run in send order) and returns it. */
static struct outbound_pending take(struct broker *s, size_t i)
{
    struct outbound_pending p = s->outbound[i];
    memmove(&s->outbound[i], &s->outbound[i + 1], (s->noutbound - i - 1) * sizeof p);
    s->noutbound--;
    return p;
}

bool outbound_on_response(struct broker *s, struct conn *c, const struct rmq_cmd *resp)
{
    for (size_t i = 0; i < s->noutbound; i++) {
        if (s->outbound[i].conn == c && s->outbound[i].opaque == resp->opaque) {
            struct outbound_pending p = take(s, i);
            p.cb(s, p.ctx, resp);
            return true;
        }
    }
    return false;
}

/* Runs (with NULL) and removes every entry pick() selects. A callback may
 * send new requests, so entries are taken one at a time. */
static void fail_where(struct broker *s, bool (*pick)(const struct outbound_pending *, const void *),
                       const void *arg)
{
    for (size_t i = 0; i < s->noutbound;) {
        if (!pick(&s->outbound[i], arg)) {
            i++;
            continue;
        }
        struct outbound_pending p = take(s, i);
        p.cb(s, p.ctx, NULL);
    }
}

static bool is_due(const struct outbound_pending *p, const void *arg)
{
    return p->deadline_ms <= *(const int64_t *)arg;
}
static bool on_conn(const struct outbound_pending *p, const void *arg)
{
    return p->conn == arg;
}
static bool every(const struct outbound_pending *p, const void *arg)
{
    (void)p;
    (void)arg;
    return true;
}

void outbound_on_timer(struct broker *s)
{
    int64_t now = loop_now_ms(s->loop);
    fail_where(s, is_due, &now);
}

void outbound_drop_conn(struct broker *s, const struct conn *c)
{
    fail_where(s, on_conn, c);
}

void outbound_free_all(struct broker *s)
{
    fail_where(s, every, NULL);
    rmq_free(s->outbound);
    s->outbound = NULL;
    s->noutbound = s->outbound_cap = 0;
}
