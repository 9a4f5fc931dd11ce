/* outbound.c — see outbound.h. Loop thread only. The waiting requests live
 * in one pending table (core/pending.c): an answer is matched by hash, a
 * timeout by the deadline heap, a close by the connection's own list, so
 * none of them costs a scan of every request. */
#include "outbound.h"

#include "broker.h"
#include "conn.h"
#include "err.h"
#include "loop.h"

#include <assert.h>

int outbound_init(struct broker *s)
{
    return pending_init(&s->outbound, s, OUTBOUND_MAX_PER_CONN);
}

size_t outbound_count(const struct broker *s)
{
    return pending_count(&s->outbound);
}

int outbound_send(struct broker *s, struct conn *c, struct rmq_cmd *req, int64_t timeout_ms, outbound_cb cb,
                  void *ctx)
{
    assert(c && !c->closing && timeout_ms >= 0);
    /* Our opaques count up from a large base so they are easy to tell from
     * the client's own numbers in captures; matching is by flag anyway.
     * Unsigned arithmetic: the counter wraps like Java's int, never overflows. */
    int32_t opaque = (int32_t)(uint32_t)s->next_opaque;
    s->next_opaque = (int32_t)((uint32_t)s->next_opaque + 1u);
    int rc = pending_add(&s->outbound, c, opaque, loop_now_ms(s->loop) + timeout_ms, cb, ctx);
    if (rc == RMQ_E2BIG)
        s->stats.limit_hits++;
    if (rc != 0)
        return rc;
    req->opaque = opaque;
    req->flag = 0;
    req->serialize_type = RMQ_SERIALIZE_JSON;
    rc = conn_send(c, req);
    if (rc != 0) {
        /* Not sent: take it back without its callback (the caller hears rc). */
        bool gone = pending_cancel(&s->outbound, c, opaque);
        assert(gone);
        (void)gone;
        return rc;
    }
    return RMQ_OK;
}

bool outbound_on_response(struct broker *s, struct conn *c, const struct rmq_cmd *resp)
{
    return pending_complete(&s->outbound, c, resp->opaque, resp);
}

void outbound_on_timer(struct broker *s)
{
    (void)pending_expire(&s->outbound, loop_now_ms(s->loop));
}

void outbound_drop_conn(struct broker *s, const struct conn *c)
{
    (void)pending_drop_conn(&s->outbound, c);
    assert(pending_count_conn(&s->outbound, c) == 0);
}

void outbound_free_all(struct broker *s)
{
    pending_free(&s->outbound);
    assert(pending_count(&s->outbound) == 0);
}
