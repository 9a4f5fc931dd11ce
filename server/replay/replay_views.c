/* replay_views.c — the broker views of a replay: trace events reach the
 * daemon's registry (server/model/registry.c, one per broker view), whose
 * hooks here are the daemon's (change records, NOTIFY scheduling, coalesced
 * per group as notify.c does); a join creates the modeled client, a leave
 * ends it. One thread; no I/O.
 */
#include "replay_views.h"

#include "err.h"
#include "mem.h"
#include "notify_policy.h"
#include "replay_infer.h"
#include "replay_out.h"
#include "replay_own.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rp_gview *get_gview(struct replay *rp, struct rp_view *v, const char *group)
{
    char key[600];
    int n = snprintf(key, sizeof key, "%s%c%s", v->name, 0, group);
    if (n < 0 || (size_t)n >= sizeof key)
        return NULL;
    struct rp_gview *gv = hashmap_get(&rp->gviews, key, (size_t)n);
    if (gv)
        return gv;
    gv = rmq_calloc(1, sizeof *gv);
    if (!gv || !(gv->group = rmq_strdup(group)) || hashmap_put(&rp->gviews, key, (size_t)n, gv, NULL) != 0) {
        if (gv)
            rmq_free(gv->group);
        rmq_free(gv);
        return NULL;
    }
    gv->view = v;
    return gv;
}

/* cidAll of the group may have changed: every member must recompute. */
static void gview_bump(struct replay *rp, struct rp_gview *gv)
{
    gv->version++;
    for (size_t i = 0; i < gv->n; i++)
        rp_mark_stale(rp, gv->clients[i]);
}

/* ---- the daemon's registry hooks (server.c hook_*), replayed ---- */

/* The daemon's rule (notify_policy, as member_events.c asks it). */
static void schedule_notify(struct rp_view *v, struct reg_group *g, enum notify_change change)
{
    if (notify_policy_marks(&g->g, change, &v->rp->opt.dialect))
        registry_mark_notify(&v->reg, g);
}

static struct rp_client *client_new(struct replay *rp, struct rp_view *v, const struct mship_member *m,
                                    const char *group)
{
    struct rp_client *c = rmq_calloc(1, sizeof *c);
    char key[8 + 512];
    if (!c || strlen(group) > 500)
        goto fail;
    c->group = rmq_strdup(group);
    c->client_id = rmq_strdup(m->client_id);
    c->gv = get_gview(rp, v, group);
    if (!c->group || !c->client_id || !c->gv ||
        rp_ptr_push((void ***)&rp->all, &rp->nall, &rp->all_cap, c) != 0)
        goto fail;
    c->seq = rp->nall;
    assert(rp->all[c->seq - 1] == c); /* labels are C<seq>, positions in rp->all from 1 */
    c->conn = m->channel_id;
    c->view = v;
    c->alive = true;
    c->joined_ms = c->last_hb = rp->now;
    c->left_ms = c->tick_at = RP_NO_TIME;
    struct rp_conn *conn = rp_find_conn(rp, c->conn);
    rp_client_behaviour(rp, c, conn && conn->deaf);
    /* Replacing a dead client of the same (conn, group) is fine: rp->all owns it. */
    if (hashmap_put(&rp->clients, key, rp_client_key(key, c->conn, group), c, NULL) != 0 ||
        rp_ptr_push((void ***)&c->gv->clients, &c->gv->n, &c->gv->cap, c) != 0 ||
        (conn && rp_ptr_push((void ***)&conn->clients, &conn->nclients, &conn->clients_cap, c) != 0)) {
        c->alive = false; /* owned by rp->all now: freed with it */
        return NULL;
    }
    rp->st.clients++;
    return c;
fail:
    if (c && (!rp->nall || rp->all[rp->nall - 1] != c)) {
        rmq_free(c->group);
        rmq_free(c->client_id);
        rmq_free(c);
    }
    return NULL;
}

static void hook_joined(void *ctx, struct reg_group *g, const struct mship_member *m)
{
    struct rp_view *v = ctx;
    struct replay *rp = v->rp;
    rp->st.changes++;
    rp->st.joins++;
    rp_out_change(rp, v, g->g.name, "join", m->client_id, m->channel_id, &g->g);
    struct rp_client *c = client_new(rp, v, m, g->g.name);
    if (c) {
        gview_bump(rp, c->gv);
        /* PROTOCOL: docs/protocol.md §10.1 — a client rebalances right after its first heartbeat. */
        rp_push_action(rp, rp->now, RP_ACT_START, c);
    }
    schedule_notify(v, g, NOTIFY_CHANGE_JOIN);
}

static void client_end(struct replay *rp, struct rp_client *c, const char *why)
{
    assert(c->alive); /* hook_left found it alive; a client ends once */
    rp_client_drop_all(rp, c, why);
    rp_gt_subscribers(rp, c, -1);
    c->alive = false;
    c->left_ms = rp->now;
    c->left_why = why;
    rp_ptr_remove((void **)c->gv->clients, &c->gv->n, c);
    assert(c->left_ms >= c->joined_ms);
    struct rp_conn *conn = rp_find_conn(rp, c->conn);
    if (conn)
        rp_ptr_remove((void **)conn->clients, &conn->nclients, c);
    gview_bump(rp, c->gv);
}

static void hook_left(void *ctx, struct reg_group *g, const struct mship_member *m, size_t index,
                      enum reg_leave_reason why)
{
    (void)index;
    struct rp_view *v = ctx;
    struct replay *rp = v->rp;
    const char *kind = rp->restarting ? "restart" : reg_leave_reason_name(why);
    rp->st.changes++;
    if (rp->restarting)
        rp->st.restarts++;
    else if (why == REG_LEAVE_CLOSE)
        rp->st.leaves_close++;
    else if (why == REG_LEAVE_UNREGISTER)
        rp->st.leaves_unregister++;
    else
        rp->st.leaves_expire++;
    rp_out_change(rp, v, g->g.name, kind, m->client_id, m->channel_id, &g->g);
    struct rp_client *c = rp_find_client(rp, m->channel_id, g->g.name);
    if (c)
        client_end(rp, c, kind);
    schedule_notify(v, g, why == REG_LEAVE_EXPIRE ? NOTIFY_CHANGE_EXPIRE : NOTIFY_CHANGE_LEAVE);
}

static void hook_subscriptions(void *ctx, struct reg_group *g, unsigned flags)
{
    struct rp_view *v = ctx;
    if (!notify_policy_subscription_counts(flags))
        return;
    v->rp->st.changes++;
    v->rp->st.sub_changes++;
    rp_out_change(v->rp, v, g->g.name, "subscription", NULL, 0, &g->g);
    schedule_notify(v, g, NOTIFY_CHANGE_SUBSCRIPTION);
}

static void hook_heartbeat(void *ctx, struct reg_group *g, const struct mship_member *m, unsigned flags)
{
    struct rp_view *v = ctx;
    if (!(flags & MSHIP_CLIENT_ID_CHANGED))
        return;
    /* A known channel reporting a new id is no change to the broker, but cidAll differs. */
    struct rp_client *c = rp_find_client(v->rp, m->channel_id, g->g.name);
    char *id = c ? rmq_strdup(m->client_id) : NULL;
    if (id) {
        rmq_free(c->client_id);
        c->client_id = id;
        gview_bump(v->rp, c->gv);
    }
}

struct rp_view *rp_get_view(struct replay *rp, const char *name)
{
    for (size_t i = 0; i < rp->nviews; i++)
        if (!strcmp(rp->views[i]->name, name))
            return rp->views[i];
    struct rp_view *v = rmq_calloc(1, sizeof *v);
    if (!v || !(v->name = rmq_strdup(name)) ||
        rp_ptr_push((void ***)&rp->views, &rp->nviews, &rp->views_cap, v) != 0) {
        if (v)
            rmq_free(v->name);
        rmq_free(v);
        return NULL;
    }
    struct registry_hooks hooks = {
        .ctx = v,
        .joined = hook_joined,
        .left = hook_left,
        .subscriptions_changed = hook_subscriptions,
        .heartbeat = hook_heartbeat,
    };
    v->rp = rp;
    registry_init(&v->reg, &hooks);
    assert(rp->views[rp->nviews - 1] == v);
    return v;
}

/* ---- NOTIFY fan-out (notify.c), coalesced per group per event ---- */

static int cmp_group_name(const void *a, const void *b)
{
    return strcmp((*(struct reg_group *const *)a)->g.name, (*(struct reg_group *const *)b)->g.name);
}

static void notify_group(struct replay *rp, struct rp_view *v, struct reg_group *g)
{
    if (!notify_policy_sends(&g->g, &rp->opt.dialect))
        return;
    size_t delivered = 0, deaf = 0;
    for (size_t i = 0; i < g->g.nmembers; i++) {
        struct rp_client *c = rp_find_client(rp, g->g.members[i].channel_id, g->g.name);
        if (!c)
            continue;
        if (c->deaf) {
            deaf++;
            continue;
        }
        delivered++;
        if (rp->opt.notify_source != REPLAY_NOTIFY_TRACE)
            rp_push_action(rp, rp->now + rp->opt.notify_delay_ms, RP_ACT_NOTIFY, c);
    }
    assert(delivered + deaf <= g->g.nmembers);
    rp->st.notify_groups++;
    rp->st.notify_deliveries += delivered;
    rp->st.notify_skipped_deaf += deaf;
    rp_out_notify(rp, v, g->g.name, delivered, deaf);
}

void rp_flush_notifies(struct replay *rp)
{
    for (size_t vi = 0; vi < rp->nviews; vi++) {
        struct rp_view *v = rp->views[vi];
        struct reg_group *list = registry_take_pending(&v->reg), *arr[64];
        while (list) {
            size_t n = 0;
            for (; list && n < 64; list = list->next_pending)
                arr[n++] = list;
            assert(n > 0 && n <= sizeof arr / sizeof arr[0]);
            qsort(arr, n, sizeof arr[0], cmp_group_name); /* output order must not depend on marking order */
            for (size_t i = 0; i < n; i++)
                notify_group(rp, v, arr[i]);
        }
    }
}
