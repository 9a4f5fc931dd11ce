/* replay_state.c — the primitives every file of the replay engine uses on
 * its state (see replay_state.h): the action heap, the heartbeat order that
 * finds the next expiry, the lookups, and the timer a change arms. One
 * thread; no I/O.
 */
#include "replay_state.h"

#include "array.h"
#include "err.h"

#include <assert.h>
#include <string.h>

/* ---- heaps: actions by (at, seq), expiry deadlines by last heartbeat ---- */

static bool act_less(const struct rp_action *a, const struct rp_action *b)
{
    return a->at != b->at ? a->at < b->at : a->seq < b->seq;
}

int rp_push_action(struct replay *rp, int64_t at, int kind, struct rp_client *c)
{
    assert(kind == RP_ACT_START || kind == RP_ACT_NOTIFY || kind == RP_ACT_TIMER);
    assert(c != NULL);
    assert(at >= rp->now); /* virtual time only moves forward: nothing is due in the past */
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
    assert(rp->nheap > 0);
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
    assert(n == 0 || !act_less(&rp->heap[0], &top)); /* the heap gave its least action */
    return top;
}

void rp_heartbeat_seen(struct replay *rp, struct rp_client *c)
{
    assert(c->alive);
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
    /* The list stays in last-heartbeat order because now never goes back. */
    assert(!c->hb_prev || c->hb_prev->last_hb <= c->last_hb);
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
    assert(s > 0); /* replay_new refuses a non-positive scan period */
    int64_t k = d >= rp->scan_base ? (d - rp->scan_base) / s + 1 : 1;
    assert(rp->scan_base + k * s > d); /* the first tick strictly past the deadline */
    return rp->scan_base + k * s; /* PROTOCOL: docs/protocol.md §4.5 — removed when now - last > expiry */
}

/* ---- lookups ---- */

size_t rp_client_key(char *key, uint64_t conn, const char *group)
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
    struct rp_client *c = hashmap_get(&rp->clients, key, rp_client_key(key, conn, group));
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
    assert(!c || c->id == id);
    return c;
}

int rp_ptr_push(void ***arr, size_t *n, size_t *cap, void *p)
{
    if (RMQ_GROW(*arr, *cap, *n + 1, 4) != 0)
        return RMQ_ENOMEM;
    assert(*n < *cap);
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

void rp_mark_stale(struct replay *rp, struct rp_client *c)
{
    if (!c->alive || c->tick_at != RP_NO_TIME)
        return;
    /* The client's timer keeps its phase from its join (PROTOCOL: docs/protocol.md §10.1, a 20 s period); the
     * next tick strictly after now, so a tick that coincides with the change does not pre-empt the NOTIFY the
     * same change sends. */
    int64_t p = c->rebalance_ms > 0 ? c->rebalance_ms : rp->opt.rebalance_ms,
            k = (rp->now - c->joined_ms) / p + 1;
    assert(p > 0 && rp->now >= c->joined_ms);
    c->tick_at = c->joined_ms + k * p;
    assert(c->tick_at > rp->now);
    if (rp_push_action(rp, c->tick_at, RP_ACT_TIMER, c) != 0)
        c->tick_at = RP_NO_TIME;
}

bool rp_in_window(const struct replay *rp, int64_t ts)
{
    return (!rp->opt.has_from || ts >= rp->from_abs) && (!rp->opt.has_to || ts <= rp->to_abs);
}
