/* replay.c — the replay engine's event side: trace events into the daemon's
 * registry (server/model/registry.c, one per broker view), the same hooks the
 * daemon has (change records, NOTIFY scheduling, coalesced per group as
 * notify.c does), and virtual time: client actions and expiry scans run
 * between recorded events in a fixed order — at equal times recorded events
 * first, then expiry scans, then client rebalances in the order they were
 * scheduled. Allocation and ownership are in replay_own.c, output in
 * replay_out.c. One thread; no I/O.
 */
#include "array.h"
#include "client_defaults.h"
#include "err.h"
#include "mem.h"
#include "notify_policy.h"
#include "replay_int.h"
#include "request_codes.h"
#include "topics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void replay_options_init(struct replay_options *opt)
{
    memset(opt, 0, sizeof *opt);
    allocate_options_init(&opt->alloc, ALLOCATE_AVG);
    opt->rebalance_ms = RMQ_DEFAULT_REBALANCE_MS;
    opt->notify_delay_ms = 0;
    opt->expiry_ms = RMQ_DEFAULT_CHANNEL_EXPIRY_MS;
    opt->scan_ms = 1000;
    dialect_init(&opt->dialect, DIALECT_RMQCOORD);
    opt->notify_source = REPLAY_NOTIFY_AUTO;
    opt->infer = true;
    opt->format = REPLAY_TEXT;
}

/* ---- heaps: actions by (at, seq), expiry deadlines by last heartbeat ---- */

static bool act_less(const struct rp_action *a, const struct rp_action *b)
{
    return a->at != b->at ? a->at < b->at : a->seq < b->seq;
}

int rp_push_action(struct replay *rp, int64_t at, int kind, struct rp_client *c)
{
    if (RMQ_GROW(rp->heap, rp->heap_cap, rp->nheap + 1, 256) != 0)
        return RMQ_ENOMEM;
    size_t i = rp->nheap++;
    struct rp_action a = {at, rp->seq++, kind, c};
    while (i > 0 && act_less(&a, &rp->heap[(i - 1) / 2])) {
        rp->heap[i] = rp->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    rp->heap[i] = a;
    return RMQ_OK;
}

struct rp_action rp_pop_action(struct replay *rp)
{
    struct rp_action top = rp->heap[0], last = rp->heap[--rp->nheap];
    size_t i = 0, n = rp->nheap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const struct rp_action *best = &last;
        if (l < n && act_less(&rp->heap[l], best))
            m = l, best = &rp->heap[l];
        if (l + 1 < n && act_less(&rp->heap[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        rp->heap[i] = rp->heap[m];
        i = m;
    }
    if (n > 0)
        rp->heap[i] = last;
    return top;
}

void rp_heartbeat_seen(struct replay *rp, struct rp_client *c)
{
    c->last_hb = rp->now;
    if (c->in_hb_order) {
        if (rp->hb_last == c)
            return;
        if (c->hb_prev)
            c->hb_prev->hb_next = c->hb_next;
        else
            rp->hb_first = c->hb_next;
        c->hb_next->hb_prev = c->hb_prev; /* not the last, so it has a next */
    }
    c->hb_prev = rp->hb_last;
    c->hb_next = NULL;
    if (rp->hb_last)
        rp->hb_last->hb_next = c;
    else
        rp->hb_first = c;
    rp->hb_last = c;
    c->in_hb_order = true;
}

/* The first expiry-scan tick that will remove someone, or INT64_MAX. Only
 * such ticks run: a scan that removes nobody changes nothing, so skipping
 * it keeps virtual time cheap without changing the result. */
int64_t rp_next_scan(struct replay *rp)
{
    /* Heartbeats are appended at the virtual now, which never goes back, so
     * the list is in last-heartbeat order; clients that left are dropped
     * from its head. */
    struct rp_client *c;
    while ((c = rp->hb_first) != NULL && !c->alive) {
        rp->hb_first = c->hb_next;
        if (rp->hb_first)
            rp->hb_first->hb_prev = NULL;
        else
            rp->hb_last = NULL;
        c->hb_next = c->hb_prev = NULL;
        c->in_hb_order = false;
    }
    if (!c)
        return INT64_MAX;
    int64_t d = c->last_hb + rp->opt.expiry_ms, s = rp->opt.scan_ms;
    int64_t k = d >= rp->scan_base ? (d - rp->scan_base) / s + 1 : 1;
    return rp->scan_base + k * s; /* PROTOCOL: docs/protocol.md §4.5 — removed when now - last > expiry */
}

/* ---- lookups ---- */

static size_t client_key(char *key, uint64_t conn, const char *group)
{
    size_t n = strlen(group);
    memcpy(key, &conn, sizeof conn);
    memcpy(key + sizeof conn, group, n);
    return sizeof conn + n;
}

struct rp_client *rp_find_client(struct replay *rp, uint64_t conn, const char *group)
{
    char key[8 + 512];
    if (strlen(group) > 500)
        return NULL;
    struct rp_client *c = hashmap_get(&rp->clients, key, client_key(key, conn, group));
    return c && c->alive ? c : NULL;
}

struct rp_conn *rp_find_conn(struct replay *rp, uint64_t id)
{
    size_t slot = (size_t)(id ^ id >> 10) % (sizeof rp->conn_front / sizeof rp->conn_front[0]);
    struct rp_conn *c = rp->conn_front[slot];
    if (c && c->id == id)
        return c;
    if ((c = hashmap_get(&rp->conns, &id, sizeof id)) != NULL)
        rp->conn_front[slot] = c;
    return c;
}

int rp_ptr_push(void ***arr, size_t *n, size_t *cap, void *p)
{
    if (RMQ_GROW(*arr, *cap, *n + 1, 4) != 0)
        return RMQ_ENOMEM;
    (*arr)[(*n)++] = p;
    return RMQ_OK;
}

void rp_ptr_remove(void **arr, size_t *n, const void *p)
{
    for (size_t i = 0; i < *n; i++) {
        if (arr[i] == p) {
            memmove(&arr[i], &arr[i + 1], (*n - i - 1) * sizeof *arr);
            (*n)--;
            return;
        }
    }
}

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

void rp_mark_stale(struct replay *rp, struct rp_client *c)
{
    if (!c->alive || c->tick_at != RP_NO_TIME)
        return;
    /* The client's timer keeps its phase from its join (PROTOCOL: docs/protocol.md §10.1, a 20 s period); the
     * next tick strictly after now, so a tick that coincides with the change does not pre-empt the NOTIFY the
     * same change sends. */
    int64_t p = c->rebalance_ms > 0 ? c->rebalance_ms : rp->opt.rebalance_ms,
            k = (rp->now - c->joined_ms) / p + 1;
    c->tick_at = c->joined_ms + k * p;
    if (rp_push_action(rp, c->tick_at, RP_ACT_TIMER, c) != 0)
        c->tick_at = RP_NO_TIME;
}

/* cidAll of the group may have changed: every member must recompute. */
static void gview_bump(struct replay *rp, struct rp_gview *gv)
{
    gv->version++;
    for (size_t i = 0; i < gv->n; i++)
        rp_mark_stale(rp, gv->clients[i]);
}

bool rp_in_window(const struct replay *rp, int64_t ts)
{
    return (!rp->opt.has_from || ts >= rp->from_abs) && (!rp->opt.has_to || ts <= rp->to_abs);
}

/* ---- the daemon's registry hooks (server.c hook_*), replayed ---- */

/* The daemon's rule (notify_policy in the daemon's dialect, as member_events.c asks it). */
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
    c->conn = m->channel_id;
    c->view = v;
    c->alive = true;
    c->joined_ms = c->last_hb = rp->now;
    c->left_ms = c->tick_at = RP_NO_TIME;
    struct rp_conn *conn = rp_find_conn(rp, c->conn);
    rp_client_behaviour(rp, c, conn && conn->deaf);
    /* Replacing a dead client of the same (conn, group) is fine: rp->all owns it. */
    if (hashmap_put(&rp->clients, key, client_key(key, c->conn, group), c, NULL) != 0 ||
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
    rp_client_drop_all(rp, c, why);
    rp_gt_subscribers(rp, c, -1);
    c->alive = false;
    c->left_ms = rp->now;
    c->left_why = why;
    rp_ptr_remove((void **)c->gv->clients, &c->gv->n, c);
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
            qsort(arr, n, sizeof arr[0], cmp_group_name); /* output order must not depend on marking order */
            for (size_t i = 0; i < n; i++)
                notify_group(rp, v, arr[i]);
        }
    }
}

/* ---- lifecycle ---- */

int replay_new(const struct replay_options *opt, struct replay **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *bad = NULL;
    if (opt->rebalance_ms <= 0 || opt->scan_ms <= 0)
        bad = "--client-rebalance-ms and --expiry-scan-ms must be positive";
    else if (opt->expiry_ms < 0 || opt->notify_delay_ms < 0)
        bad = "--channel-expiry-ms and --notify-delay-ms must not be negative";
    else if (opt->alloc.strategy == ALLOCATE_CONFIG)
        bad = "CONFIG allocates each consumer's own configured list, which a trace does not carry";
    else if (opt->alloc.strategy == ALLOCATE_MACHINE_ROOM && opt->alloc.n_idcs == 0)
        bad = "MACHINE_ROOM needs --idcs ROOM[,ROOM...]";
    else if (opt->alloc.virtual_nodes < 0)
        bad = "--virtual-nodes must not be negative";
    if (bad) {
        snprintf(err, errlen, "%s", bad);
        return RMQ_EINVAL;
    }
    struct replay *rp = rmq_calloc(1, sizeof *rp);
    if (!rp)
        return RMQ_ENOMEM;
    rp->opt = *opt;
    buf_init(&rp->out, 0);
    buf_init(&rp->explain, 0);
    hashmap_init(&rp->conns);
    hashmap_init(&rp->clients);
    hashmap_init(&rp->gviews);
    hashmap_init(&rp->gts);
    hashmap_init(&rp->routes);
    hashmap_init(&rp->caches);
    hashmap_init(&rp->notified);
    hashmap_init(&rp->obs);
    hashmap_init(&rp->truth);
    if (!rp_get_view(rp, "")) {
        replay_free(rp);
        return RMQ_ENOMEM;
    }
    *out = rp;
    return RMQ_OK;
}

static void free_conn(void *p)
{
    struct rp_conn *c = p;
    rmq_heartbeat_clear(&c->hb);
    rmq_free(c->last_body);
    rmq_free(c->clients);
    rmq_free(c);
}

static void free_gview(void *p)
{
    struct rp_gview *gv = p;
    rmq_free(gv->clients);
    rmq_free(gv->group);
    rmq_free(gv);
}

void replay_free(struct replay *rp)
{
    if (!rp)
        return;
    rp_truth_free(rp);
    rp_own_free(rp);
    for (size_t i = 0; i < rp->nall; i++) {
        rmq_free(rp->all[i]->group);
        rmq_free(rp->all[i]->client_id);
        rmq_free(rp->all[i]);
    }
    rmq_free(rp->all);
    for (size_t i = 0; i < rp->nviews; i++) {
        registry_free(&rp->views[i]->reg);
        rmq_free(rp->views[i]->name);
        rmq_free(rp->views[i]);
    }
    rmq_free(rp->views);
    hashmap_free(&rp->conns, free_conn);
    hashmap_free(&rp->clients, NULL);
    hashmap_free(&rp->gviews, free_gview);
    hashmap_free(&rp->notified, NULL);
    rp_obs_free(rp);
    rmq_free(rp->heap);
    buf_free(&rp->out);
    buf_free(&rp->explain);
    rmq_free(rp);
}

int replay_note_recorded_notify(struct replay *rp, uint64_t conn)
{
    rp->any_recorded_notify = true;
    return hashmap_get(&rp->notified, &conn, sizeof conn)
               ? RMQ_OK
               : hashmap_put(&rp->notified, &conn, sizeof conn, rp, NULL);
}

struct buf *replay_output(struct replay *rp)
{
    return &rp->out;
}

const struct replay_stats *replay_get_stats(const struct replay *rp)
{
    return &rp->st;
}
