/* notify.c — NOTIFY_CONSUMER_IDS_CHANGED fan-out. Groups flagged during an
 * iteration get one NOTIFY each (coalesced) when it is due
 * (notify_policy_due_ms: at once when the loop is idle, after a backlog or
 * a --notify-coalesce-ms window otherwise), encoded once and queued to every
 * live channel of the group, the new member included (PROTOCOL: docs/protocol.md §4.4). It is
 * oneway: no reply is expected or awaited. Held pulls of the group are
 * answered at the same time so clients re-pull against the new view.
 * Loop thread only. */
#include "notify.h"
#include "broker.h"
#include "conn.h"
#include "log.h"
#include "loop.h"
#include "notify_policy.h"
#include "pull_requests.h"
#include "remoting_frame.h"
#include "request_codes.h"
#include "trace_recorder.h"

#include <assert.h>

static void notify_group(struct broker *s, struct reg_group *g)
{
    /* --release-pulls-on-change off: held to their deadline, as the broker does (§12). */
    if (s->cfg->release_pulls_on_change)
        pull_release_group(s, g->g.name);
    /* The dialect's rule, which replay shares (a 4.9 broker notifies broadcast groups too, §12). */
    if (!notify_policy_sends(&g->g, &s->cfg->dialect))
        return;
    struct rmq_cmd cmd;
    rmq_cmd_init_request(&cmd, RMQ_REQ_NOTIFY_CONSUMER_IDS_CHANGED, s->next_opaque++, RMQ_FLAG_ONEWAY);
    assert(rmq_cmd_is_oneway(&cmd)); /* no reply is expected or awaited (§4.4) */
    struct buf frame;
    buf_init(&frame, 0);
    if (rmq_cmd_ext_set(&cmd, "consumerGroup", g->g.name) != 0 || rmq_frame_encode(&cmd, &frame) != 0) {
        log_error("NOTIFY for group %s not sent: out of memory", g->g.name);
    } else {
        for (size_t i = 0; i < g->g.nmembers; i++) {
            const struct reg_channel *ch = registry_channel(&s->reg, g->g.members[i].channel_id);
            if (ch && ch->conn && conn_send_bytes(ch->conn, buf_head(&frame), buf_live(&frame)) == 0) {
                s->stats.notifications_sent++;
                trace_record_notify(s->trace, broker_now_ms(s), ch->id, g->g.name);
            }
        }
    }
    buf_free(&frame);
    rmq_cmd_clear(&cmd);
}

void notify_flush(struct broker *s)
{
    int64_t next_due; /* before_sleep asks registry_next_due after every round */
    struct reg_group *g = registry_take_due(&s->reg, loop_now_ms(s->loop), s->cfg->notify_coalesce_ms,
                                            loop_backlogged(s->loop), &next_due);
    while (g) {
        struct reg_group *next = g->next_pending;
        /* Taken off the pending list: a change from here on owes a NOTIFY of its own. */
        assert(!g->notify_pending);
        notify_group(s, g);
        g = next;
    }
}
