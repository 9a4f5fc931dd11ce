/* broker_state.c — a struct broker's starting state, reset, virtual clock
 * and teardown (see broker_state.h). Loop thread only. */
#include "broker_state.h"

#include "acl.h"
#include "admin_group_requests.h"
#include "clocks.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "member_events.h"
#include "outbound.h"
#include "pull_requests.h"
#include "reply.h"
#include "store.h"
#include "trace_recorder.h"

#include <assert.h>

int broker_init_state(struct broker *s, const struct config *cfg)
{
    assert(cfg && !s->loop && !s->conns); /* s is zeroed by the caller */
    s->cfg = cfg;
    s->next_opaque = 1000000;
    s->wall_base_ms = rmq_wall_ms();
    int rc = loop_new(&s->loop);
    if (rc != 0)
        return rc;
    s->mono_base_ms = loop_now_ms(s->loop);
    s->started_ms = s->wall_base_ms;
    struct registry_hooks hooks;
    member_events_hooks(s, &hooks);
    registry_init(&s->reg, &hooks);
    topics_init(&s->topics);
    offsets_init(&s->offsets);
    queue_locks_init(&s->locks);
    message_queues_init(&s->mqs);
    return outbound_init(s);
}

void broker_reset_live(struct broker *s)
{
    for (struct conn *c = conn_set_first(s->conns); c; c = c->next)
        conn_close_async(c, "reset by the admin API");
    /* Reap now so the closes run against the old state before it is wiped. */
    conn_set_reap(s->conns);
    pull_free_all(s);
    queue_locks_free(&s->locks);
    queue_locks_init(&s->locks);
    offsets_free(&s->offsets);
    offsets_init(&s->offsets);
    int64_t next_id = s->mqs.next_physical_id; /* physical ids are never reused */
    message_queues_free(&s->mqs);
    message_queues_init(&s->mqs);
    s->mqs.next_physical_id = next_id;
    admin_group_req_free(s); /* the store's subscription_groups rows go with store_reset */
    s->group_configs_version++;
    uint64_t gen = s->topics.generation; /* keeps counting: a broker re-registers after a reset */
    topics_free(&s->topics);
    topics_init(&s->topics);
    s->topics.generation = gen + 1;
    struct registry_hooks hooks = s->reg.hooks;
    registry_free(&s->reg);
    registry_init(&s->reg, &hooks);
    assert(s->pulls.n == 0 && s->reg.groups.count == 0 && !s->group_configs); /* nothing live survives */
    /* The --topic topics are part of the daemon's configuration, not state. */
    for (size_t i = 0; i < s->cfg->ntopics; i++)
        if (!broker_create_topic(s, s->cfg->topics[i].name, s->cfg->topics[i].queues))
            log_error("reset: topic %s could not be re-created", s->cfg->topics[i].name);
}

int broker_clock_advance(struct broker *s, int64_t ms)
{
    if (!s->cfg->virtual_clock)
        return RMQ_ESTATE;
    if (ms < 0)
        return RMQ_EINVAL;
    s->clock_offset_ms += ms;
    broker_expire(s);
    pull_on_timer(s);
    return RMQ_OK;
}

void broker_close_conns(struct broker *s)
{
    if (!s->conns)
        return;
    pull_free_all(s);
    conn_set_free(s->conns);
    s->conns = NULL;
    assert(s->pulls.n == 0);
}

int broker_fini_state(struct broker *s)
{
    assert(!s->conns); /* broker_close_conns ran: no close may touch what is freed here */
    int rc = RMQ_OK;
    if (s->store && store_commit_due(s->store) && (rc = store_commit(s->store)) != 0)
        log_error("store: final commit failed: %s", store_errmsg(s->store));
    reply_release_held(s, false);
    rmq_free(s->acks);
    s->acks = NULL;
    s->acks_cap = 0;
    store_close(s->store);
    s->store = NULL;
    trace_recorder_close(s->trace);
    s->trace = NULL;
    acl_free(s->acl);
    s->acl = NULL;
    queue_locks_free(&s->locks);
    registry_free(&s->reg);
    topics_free(&s->topics);
    offsets_free(&s->offsets);
    message_queues_free(&s->mqs);
    admin_group_req_free(s);
    loop_free(s->loop);
    s->loop = NULL;
    return rc;
}
