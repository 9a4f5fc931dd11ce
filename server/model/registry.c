/* registry.c — see registry.h. Loop thread only. */
#include "registry.h"

#include "array.h"
#include "conn.h"
#include "err.h"
#include "mem.h"
#include "notify_policy.h"
#include "topics.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

const char *reg_leave_reason_name(enum reg_leave_reason r)
{
    switch (r) {
    case REG_LEAVE_CLOSE: return "close";
    case REG_LEAVE_UNREGISTER: return "unregister";
    case REG_LEAVE_EXPIRE: return "expire";
    default: return "leave";
    }
}

/* ---- sanity (assert-only) ------------------------------------------------
 * The invariants every mutator leaves behind. The local checks cost what
 * the mutator touched; registry_sanity walks everything, in the tests and
 * where the operation walks everything anyway (free; the expiry scan of a
 * registry of up to REGISTRY_SANITY_SCAN_MAX groups and channels). */
#define REGISTRY_SANITY_SCAN_MAX 4096

#ifndef NDEBUG
/* g is on the pending list exactly when its flag says so. O(pending). */
static int pending_sanity(const struct registry *r, const struct reg_group *g)
{
    bool listed = false;
    for (const struct reg_group *p = r->pending; p && !listed; p = p->next_pending)
        listed = p == g;
    assert(listed == g->notify_pending);
    return 1;
}

/* A live group: in the map under its name, known, not empty (an emptied
 * group is removed before the mutator returns). */
static int group_sanity(const struct registry *r, const struct reg_group *g)
{
    assert(hashmap_get_str(&r->groups, g->g.name) == g);
    assert(hashmap_get_str(&r->known, g->g.name) != NULL);
    assert(g->g.nmembers > 0);
    return 1;
}

/* Whether g is a live group: first among the channel's own groups (the
 * common case), then by a walk of the map. */
static bool group_live(const struct registry *r, const struct reg_channel *ch, const struct reg_group *g)
{
    for (size_t i = 0; i < ch->ngroups; i++)
        if (hashmap_get_str(&r->groups, ch->groups[i]) == g)
            return true;
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&r->groups, &b); e; e = hashmap_next(&r->groups, e, &b))
        if (e->val == g)
            return true;
    return false;
}

/* One channel: in the map under its id, with its connection's id; every
 * group it lists is live and lists it back as a member; a remembered
 * heartbeat taken at the current groups_epoch points only at live groups
 * (the "valid while groups_epoch is unchanged" rule). */
static int channel_sanity(const struct registry *r, const struct reg_channel *ch)
{
    assert(hashmap_get(&r->channels, &ch->id, sizeof ch->id) == ch);
    assert(!ch->conn || ch->conn->id == ch->id);
    assert(ch->ngroups <= ch->groups_cap);
    for (size_t i = 0; i < ch->ngroups; i++) {
        const struct reg_group *g = hashmap_get_str(&r->groups, ch->groups[i]);
        assert(g && group_sanity(r, g));
        assert(mship_find(&g->g, ch->id) >= 0);
    }
    assert((ch->hb_refs != NULL) == (ch->hb_nrefs > 0));
    assert(ch->hb_epoch <= r->groups_epoch);
    if (ch->hb_len != 0 && ch->hb_epoch == r->groups_epoch)
        for (size_t i = 0; i < ch->hb_nrefs; i++)
            assert(group_live(r, ch, ch->hb_refs[i].group));
    return 1;
}

/* The known names in the skip list: each level in strictly increasing
 * order, every level a sublist of the one below, level 0 holding exactly
 * the known map's names. O(known * levels). */
static int names_sanity(const struct registry *r)
{
    assert(r->names_level <= REG_NAME_LEVELS);
    for (unsigned lv = r->names_level; lv < REG_NAME_LEVELS; lv++)
        assert(r->names_head[lv] == NULL);
    size_t n = 0;
    for (unsigned lv = 0; lv < r->names_level; lv++) {
        const struct reg_name *prev = NULL;
        for (const struct reg_name *x = r->names_head[lv]; x; x = x->next[lv]) {
            assert(x->level > lv && x->level <= r->names_level);
            assert(!prev || strcmp(prev->name, x->name) < 0);
            assert(hashmap_get_str(&r->known, x->name) == x);
            prev = x;
            n += lv == 0;
        }
    }
    assert(n == r->known.count);
    return 1;
}
#endif

bool registry_sanity(const struct registry *r)
{
    assert(hashmap_sanity(&r->groups) && hashmap_sanity(&r->channels) && hashmap_sanity(&r->known));
    size_t memberships = 0, members = 0, flagged = 0, pending = 0, b;
    for (struct hashmap_entry *e = hashmap_first(&r->channels, &b); e;
         e = hashmap_next(&r->channels, e, &b)) {
        assert(channel_sanity(r, e->val));
        memberships += ((const struct reg_channel *)e->val)->ngroups;
    }
    for (struct hashmap_entry *e = hashmap_first(&r->groups, &b); e; e = hashmap_next(&r->groups, e, &b)) {
        const struct reg_group *g = e->val;
        assert(group_sanity(r, g));
        for (size_t i = 0; i < g->g.nmembers; i++) {
            /* The member's channel is open (that it lists the group back
             * follows from the counts below); registry_expire keeps
             * expiry_floor_ms a lower bound. */
            assert(hashmap_get(&r->channels, &g->g.members[i].channel_id, sizeof(uint64_t)));
            assert(g->g.members[i].last_hb_ms >= g->expiry_floor_ms);
        }
        members += g->g.nmembers;
        flagged += g->notify_pending;
    }
    for (const struct reg_group *g = r->pending; g; g = g->next_pending) {
        assert(g->notify_pending && group_sanity(r, g));
        pending++;
        assert(pending <= r->groups.count); /* no cycle */
    }
    /* Counts match the lists: each membership is on both sides once. */
    assert(memberships == members);
    assert(pending == flagged);
    assert(names_sanity(r));
    return memberships == members && pending == flagged;
}

void registry_init(struct registry *r, const struct registry_hooks *hooks)
{
    memset(r, 0, sizeof *r);
    hashmap_init(&r->groups);
    hashmap_init(&r->channels);
    hashmap_init(&r->known);
    r->names_rand = 0x9e3779b9u;
    r->hooks = *hooks;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rmq_free(v[i]);
    rmq_free(v);
}

static void forget_repeat(struct reg_channel *ch)
{
    rmq_free(ch->hb_refs);
    ch->hb_refs = NULL;
    ch->hb_nrefs = 0;
    ch->hb_len = 0;
}

static void free_channel(void *p)
{
    struct reg_channel *ch = p;
    forget_repeat(ch);
    free_strv(ch->groups, ch->ngroups);
    free_strv(ch->producers, ch->nproducers);
    rmq_free(ch->client_id);
    rmq_free(ch);
}

static void free_group(void *p)
{
    struct reg_group *g = p;
    mship_group_clear(&g->g);
    rmq_free(g);
}

void registry_free(struct registry *r)
{
    assert(registry_sanity(r)); /* freeing walks everything anyway */
    hashmap_free(&r->channels, free_channel);
    hashmap_free(&r->groups, free_group);
    hashmap_free(&r->known, rmq_free); /* the reg_name nodes */
    memset(r->names_head, 0, sizeof r->names_head);
    r->names_level = 0;
    r->pending = NULL;
}

int registry_channel_open(struct registry *r, uint64_t id, struct conn *conn, const char *peer,
                          int64_t now_ms)
{
    struct reg_channel *ch = rmq_calloc(1, sizeof *ch);
    if (!ch)
        return RMQ_ENOMEM;
    assert(!conn || conn->id == id);                    /* the channel id is its connection's */
    assert(!hashmap_get(&r->channels, &id, sizeof id)); /* ids are never reused */
    ch->id = id;
    ch->conn = conn;
    ch->opened_ms = now_ms;
    strncpy(ch->peer, peer, sizeof ch->peer - 1);
    if (hashmap_put(&r->channels, &id, sizeof id, ch, NULL) != 0) {
        rmq_free(ch);
        return RMQ_ENOMEM;
    }
    assert(channel_sanity(r, ch));
    return RMQ_OK;
}

struct reg_channel *registry_channel(const struct registry *r, uint64_t id)
{
    return hashmap_get(&r->channels, &id, sizeof id);
}

struct reg_group *registry_group(const struct registry *r, const char *name)
{
    return hashmap_get_str(&r->groups, name);
}

bool registry_group_known(const struct registry *r, const char *name)
{
    return hashmap_get_str(&r->known, name) != NULL;
}

/* The last node of level lv sorting before name (NULL: the head). */
static struct reg_name *names_before(struct reg_name *const *head, unsigned lv, struct reg_name *from,
                                     const char *name)
{
    struct reg_name *const *next = from ? from->next : head;
    while (next[lv] && strcmp(next[lv]->name, name) < 0) {
        from = next[lv];
        next = from->next;
    }
    return from;
}

int registry_mark_known(struct registry *r, const char *name)
{
    if (hashmap_get_str(&r->known, name))
        return RMQ_OK;
    unsigned level = 1;
    for (;;) { /* P(level > k) = 4^-k */
        uint32_t x = r->names_rand;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        r->names_rand = x;
        if ((x & 3) != 0 || level == REG_NAME_LEVELS)
            break;
        level++;
    }
    size_t len = strlen(name);
    struct reg_name *n = rmq_malloc(sizeof *n + level * sizeof n->next[0] + len + 1);
    if (!n)
        return RMQ_ENOMEM;
    n->name = (char *)&n->next[level];
    memcpy(n->name, name, len + 1);
    n->level = level;
    if (hashmap_put_str(&r->known, name, n, NULL) != 0) {
        rmq_free(n);
        return RMQ_ENOMEM;
    }
    if (level > r->names_level)
        r->names_level = level;
    struct reg_name *prev = NULL;
    for (unsigned lv = r->names_level; lv-- > 0;) {
        prev = names_before(r->names_head, lv, prev, name);
        if (lv < level) {
            struct reg_name **slot = prev ? &prev->next[lv] : &r->names_head[lv];
            n->next[lv] = *slot;
            *slot = n;
        }
    }
    /* In order at level 0: after its predecessor, before its successor. */
    assert(!prev || strcmp(prev->name, n->name) < 0);
    assert(!n->next[0] || strcmp(n->name, n->next[0]->name) < 0);
    assert(level <= r->names_level && r->names_level <= REG_NAME_LEVELS);
    return RMQ_OK;
}

const struct reg_name *registry_known_after(const struct registry *r, const char *after)
{
    if (!after)
        return r->names_head[0];
    const struct reg_name *prev = NULL;
    for (unsigned lv = r->names_level; lv-- > 0;) {
        struct reg_name *const *next = prev ? prev->next : r->names_head;
        while (next[lv] && strcmp(next[lv]->name, after) <= 0) {
            prev = next[lv];
            next = prev->next;
        }
    }
    return prev ? prev->next[0] : r->names_head[0];
}

void registry_mark_notify(struct registry *r, struct reg_group *g)
{
    if (g->notify_pending)
        return;
    /* Only a group in the live view can owe a NOTIFY (a hook may mark one
     * its last member is leaving; removing it unlinks it again). */
    assert(hashmap_get_str(&r->groups, g->g.name) == g);
    g->notify_pending = true;
    g->next_pending = r->pending;
    r->pending = g;
}

void registry_mark_notify_at(struct registry *r, struct reg_group *g, int64_t now_ms)
{
    if (g->notify_pending)
        return;
    g->notify_marked_ms = now_ms;
    registry_mark_notify(r, g);
}

struct reg_group *registry_take_due(struct registry *r, int64_t now_ms, int64_t coalesce_ms, bool backlogged,
                                    int64_t *next_due_ms)
{
    /* The due groups keep their pending-list order (as registry_take_pending). */
    struct reg_group *due = NULL, **tail = &due, **pp = &r->pending;
    *next_due_ms = INT64_MAX;
    while (*pp) {
        struct reg_group *g = *pp;
        int64_t at = notify_policy_due_ms(g->notify_marked_ms, g->notify_sent_ms, g->g.nmembers, coalesce_ms,
                                          backlogged);
        if (at > now_ms) {
            *next_due_ms = at < *next_due_ms ? at : *next_due_ms;
            pp = &g->next_pending;
            continue;
        }
        *pp = g->next_pending;
        g->notify_pending = false;
        g->notify_sent_ms = now_ms;
        g->next_pending = NULL;
        *tail = g;
        tail = &g->next_pending;
    }
#ifndef NDEBUG
    for (const struct reg_group *g = r->pending; g; g = g->next_pending)
        assert(g->notify_pending);
    for (const struct reg_group *g = due; g; g = g->next_pending)
        assert(!g->notify_pending && g->notify_sent_ms == now_ms);
#endif
    return due;
}

int64_t registry_next_due(const struct registry *r, int64_t coalesce_ms, bool backlogged)
{
    int64_t next = INT64_MAX;
    for (const struct reg_group *g = r->pending; g; g = g->next_pending) {
        int64_t at = notify_policy_due_ms(g->notify_marked_ms, g->notify_sent_ms, g->g.nmembers, coalesce_ms,
                                          backlogged);
        next = at < next ? at : next;
    }
    return next;
}

struct reg_group *registry_take_pending(struct registry *r)
{
    struct reg_group *list = r->pending;
    r->pending = NULL;
    for (struct reg_group *g = list; g; g = g->next_pending)
        g->notify_pending = false;
    return list;
}

static void unlink_pending(struct registry *r, struct reg_group *g)
{
    if (!g->notify_pending)
        return;
    struct reg_group **pp = &r->pending;
    while (*pp && *pp != g)
        pp = &(*pp)->next_pending;
    assert(*pp == g); /* flagged means listed */
    if (*pp)
        *pp = g->next_pending;
    g->notify_pending = false;
    assert(pending_sanity(r, g));
}

static void channel_forget_group(struct reg_channel *ch, const char *group)
{
    for (size_t i = 0; i < ch->ngroups; i++) {
        if (!strcmp(ch->groups[i], group)) {
            rmq_free(ch->groups[i]);
            ch->groups[i] = ch->groups[--ch->ngroups];
            return;
        }
    }
}

static int channel_add_group(struct reg_channel *ch, const char *group)
{
#ifndef NDEBUG
    for (size_t i = 0; i < ch->ngroups; i++)
        assert(strcmp(ch->groups[i], group) != 0); /* only a join adds, and a channel joins once */
#endif
    if (RMQ_GROW(ch->groups, ch->groups_cap, ch->ngroups + 1, 4) != 0)
        return RMQ_ENOMEM;
    char *dup = rmq_strdup(group);
    if (!dup)
        return RMQ_ENOMEM;
    ch->groups[ch->ngroups++] = dup;
    return RMQ_OK;
}

/* Drops an empty group from the live view. */
static void maybe_remove_group(struct registry *r, struct reg_group *g)
{
    if (g->g.nmembers > 0)
        return;
    if (r->hooks.group_empty)
        r->hooks.group_empty(r->hooks.ctx, g);
    unlink_pending(r, g);
    assert(!g->notify_pending);
    struct reg_group *gone = hashmap_remove_str(&r->groups, g->g.name);
    assert(gone == g);
    (void)gone;
    free_group(g);
    r->groups_epoch++; /* remembered heartbeats may point at it */
}

/* Removes channel id from group g, reporting the leave. Returns 1 if removed. */
static int leave_group(struct registry *r, struct reg_group *g, uint64_t id, enum reg_leave_reason why)
{
    struct mship_member m;
    size_t index;
    if (!mship_remove_channel(&g->g, id, &m, &index))
        return 0;
    if (r->hooks.left)
        r->hooks.left(r->hooks.ctx, g, &m, index, why);
    rmq_free(m.client_id);
    maybe_remove_group(r, g);
    return 1;
}

void registry_channel_close(struct registry *r, uint64_t id)
{
    struct reg_channel *ch = hashmap_remove(&r->channels, &id, sizeof id);
    if (!ch)
        return;
    for (size_t i = 0; i < ch->ngroups; i++) {
        struct reg_group *g = registry_group(r, ch->groups[i]);
        if (g)
            leave_group(r, g, id, REG_LEAVE_CLOSE);
    }
#ifndef NDEBUG
    /* No group it was in lists it any more. */
    for (size_t i = 0; i < ch->ngroups; i++) {
        const struct reg_group *g = registry_group(r, ch->groups[i]);
        assert(!g || (mship_find(&g->g, id) < 0 && group_sanity(r, g)));
    }
#endif
    free_channel(ch);
}

int registry_unregister(struct registry *r, uint64_t id, const char *group)
{
    struct reg_channel *ch = registry_channel(r, id);
    struct reg_group *g = registry_group(r, group);
    if (!ch || !g)
        return 0;
    channel_forget_group(ch, group);
    int left = leave_group(r, g, id, REG_LEAVE_UNREGISTER);
    assert(channel_sanity(r, ch));
    return left;
}

static int get_or_create_group(struct registry *r, const char *name, struct reg_group **out)
{
    struct reg_group *g = registry_group(r, name);
    if (g) {
        *out = g;
        return RMQ_OK;
    }
    g = rmq_calloc(1, sizeof *g);
    if (!g)
        return RMQ_ENOMEM;
    g->notify_sent_ms = INT64_MIN;
    if (mship_group_init(&g->g, name) != 0 || registry_mark_known(r, name) != 0 ||
        hashmap_put_str(&r->groups, name, g, NULL) != 0) {
        free_group(g);
        return RMQ_ENOMEM;
    }
    assert(registry_group_known(r, name));
    *out = g;
    return RMQ_OK;
}

static int set_producers(struct reg_channel *ch, const struct rmq_heartbeat *hb)
{
    char **p = NULL;
    if (hb->nproducers) {
        p = rmq_calloc(hb->nproducers, sizeof *p);
        if (!p)
            return RMQ_ENOMEM;
        for (size_t i = 0; i < hb->nproducers; i++) {
            p[i] = rmq_strdup(hb->producer_groups[i]);
            if (!p[i]) {
                free_strv(p, i);
                return RMQ_ENOMEM;
            }
        }
    }
    free_strv(ch->producers, ch->nproducers);
    ch->producers = p;
    ch->nproducers = hb->nproducers;
    return RMQ_OK;
}

/* A fast 64-bit hash of a heartbeat body, 8 bytes a step: it only has to
 * tell this channel's repeated heartbeat from a changed one (a collision
 * could only make the sender's own heartbeat look unchanged). */
static uint64_t hash_body(const uint8_t *p, size_t n)
{
    /* Four independent lanes: a single multiply chain over a 3 KB body was
     * latency-bound (5% of the daemon under a heartbeat load). */
    uint64_t l[4] = {0x243F6A8885A308D3ULL ^ n, 0x13198A2E03707344ULL, 0xA4093822299F31D0ULL,
                     0x082EFA98EC4E6C89ULL};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * (size_t)k, 8);
            l[k] = (l[k] ^ w) * 0x9E3779B97F4A7C15ULL;
            l[k] ^= l[k] >> 29;
        }
    }
    uint64_t h = l[0] ^ (l[1] * 0xC2B2AE3D27D4EB4FULL) ^ (l[2] * 0x165667B19E3779F9ULL) ^
                 (l[3] * 0x27D4EB2F165667C5ULL);
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, n - i);
    h = (h ^ tail) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 32);
}

/* Remembers what a full heartbeat left behind, for registry_heartbeat_repeat.
 * Failing to remember only costs the fast path next time. */
static void remember_repeat(struct registry *r, struct reg_channel *ch, const struct rmq_heartbeat *hb,
                            const uint8_t *body, size_t len, bool sub_change)
{
    forget_repeat(ch);
    if (!body || len == 0)
        return;
    struct reg_hb_ref *refs = hb->nconsumers ? rmq_calloc(hb->nconsumers, sizeof *refs) : NULL;
    if (hb->nconsumers && !refs)
        return;
    for (size_t i = 0; i < hb->nconsumers; i++) {
        struct reg_group *g = registry_group(r, hb->consumers[i].group);
        if (!g) {
            rmq_free(refs);
            return;
        }
        refs[i].group = g;
        refs[i].state_version = g->g.state_version;
    }
    ch->hb_refs = refs;
    ch->hb_nrefs = hb->nconsumers;
    ch->hb_epoch = r->groups_epoch;
    ch->hb_hash = hash_body(body, len);
    ch->hb_len = len;
    ch->hb_language = ch->language;
    ch->hb_version = ch->version;
    ch->hb_sub_change = sub_change;
}

bool registry_heartbeat_repeat(struct registry *r, uint64_t id, int32_t language, int32_t version,
                               const uint8_t *body, size_t len, int64_t now_ms,
                               struct registry_hb_result *res)
{
    struct reg_channel *ch = registry_channel(r, id);
    /* A group freed since the heartbeat was remembered leaves its reference dangling. */
    if (!ch || ch->hb_len == 0 || ch->hb_epoch != r->groups_epoch || ch->hb_len != len ||
        ch->hb_language != language || ch->hb_version != version || hash_body(body, len) != ch->hb_hash)
        return false;
    struct mship_member *ms[64];
    struct reg_group *gs[64];
    if (ch->hb_nrefs > 64)
        return false;
    for (size_t i = 0; i < ch->hb_nrefs; i++) {
        gs[i] = ch->hb_refs[i].group;
        long k = mship_find(&gs[i]->g, id);
        if (k < 0 || gs[i]->g.state_version != ch->hb_refs[i].state_version)
            return false;
        ms[i] = &gs[i]->g.members[k];
    }
    ch->last_hb_ms = now_ms;
    for (size_t i = 0; i < ch->hb_nrefs; i++) {
        assert(ms[i]->channel_id == id && group_sanity(r, gs[i]));
        ms[i]->last_hb_ms = now_ms;
        if (r->hooks.heartbeat)
            r->hooks.heartbeat(r->hooks.ctx, gs[i], ms[i], 0);
    }
    res->sub_change = ch->hb_sub_change;
    return true;
}

int registry_heartbeat(struct registry *r, uint64_t id, int32_t language, int32_t version,
                       const struct rmq_heartbeat *hb, const uint8_t *body, size_t len, int64_t now_ms,
                       struct registry_hb_result *res)
{
    struct reg_channel *ch = registry_channel(r, id);
    if (!ch)
        return RMQ_ENOTFOUND;
    forget_repeat(ch);
    res->sub_change = false;
    char *cid = rmq_strdup(hb->client_id);
    if (!cid)
        return RMQ_ENOMEM;
    rmq_free(ch->client_id);
    ch->client_id = cid;
    ch->language = language;
    ch->version = version;
    ch->last_hb_ms = now_ms;
    if (set_producers(ch, hb) != 0)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < hb->nconsumers; i++) {
        const struct rmq_consumer_data *cd = &hb->consumers[i];
        struct reg_group *g;
        if (get_or_create_group(r, cd->group, &g) != 0)
            return RMQ_ENOMEM;
        struct mship_heartbeat_in in = {
            .channel_id = id,
            .client_id = hb->client_id,
            .language = language,
            .version = version,
            .cd = cd,
            .fingerprint = hb->fingerprint,
            .without_sub = hb->without_sub,
            .now_ms = now_ms,
        };
        struct mship_outcome out;
        int rc = mship_apply_heartbeat(&g->g, &in, &out);
        if (rc == 0 && (out.flags & MSHIP_JOINED))
            rc = channel_add_group(ch, cd->group);
        if (rc != 0) {
            /* Keep channel and group consistent: undo a half-made join. */
            if (out.flags & MSHIP_JOINED)
                mship_remove_channel(&g->g, id, NULL, NULL);
            maybe_remove_group(r, g);
            assert(channel_sanity(r, ch)); /* the half-made join left no trace */
            return rc;
        }
        const struct mship_member *m = &g->g.members[out.member_index];
        if ((out.flags & MSHIP_JOINED) && r->hooks.joined)
            r->hooks.joined(r->hooks.ctx, g, m);
        if ((out.flags & (MSHIP_SUB_ADDED | MSHIP_SUB_REMOVED)) && r->hooks.subscriptions_changed)
            r->hooks.subscriptions_changed(r->hooks.ctx, g, out.flags);
        if (r->hooks.heartbeat)
            r->hooks.heartbeat(r->hooks.ctx, g, m, out.flags);
        res->sub_change = res->sub_change || out.sub_change;
    }
    remember_repeat(r, ch, hb, body, len, res->sub_change);
    assert(channel_sanity(r, ch)); /* and, through it, every group it is in */
    return RMQ_OK;
}

size_t registry_expire(struct registry *r, int64_t now_ms, int64_t expiry_ms, uint64_t *ids, size_t max)
{
    size_t n = 0;
    /* Collect first: leaving may remove groups, which must not happen mid-iteration. */
    struct expired {
        char *group;
        uint64_t id;
    } *todo = NULL;
    size_t ntodo = 0, cap = 0;
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&r->groups, &b); e; e = hashmap_next(&r->groups, e, &b)) {
        struct reg_group *g = e->val;
        if (now_ms - g->expiry_floor_ms <= expiry_ms)
            continue;
        int64_t floor = now_ms; /* a member joining later heartbeats at or after now */
        for (size_t i = 0; i < g->g.nmembers; i++) {
            if (now_ms - g->g.members[i].last_hb_ms <= expiry_ms) {
                if (g->g.members[i].last_hb_ms < floor)
                    floor = g->g.members[i].last_hb_ms;
                continue;
            }
            if (RMQ_GROW(todo, cap, ntodo + 1, 16) != 0)
                goto apply; /* expire what fits; the next scan gets the rest */
            todo[ntodo].group = rmq_strdup(g->g.name);
            if (!todo[ntodo].group)
                goto apply;
            todo[ntodo++].id = g->g.members[i].channel_id;
        }
        g->expiry_floor_ms = floor;
    }
apply:
    for (size_t i = 0; i < ntodo; i++) {
        bool seen = false;
        for (size_t k = 0; k < n; k++)
            seen = seen || ids[k] == todo[i].id;
        struct reg_group *g = registry_group(r, todo[i].group);
        if (!seen && n == max) {
            /* ids is full: a membership removed now could not be reported,
             * and its channel would stay open without it. Leave it for the
             * next call, and make that call scan the group again. */
            if (g)
                g->expiry_floor_ms = INT64_MIN / 2;
            rmq_free(todo[i].group);
            continue;
        }
        struct reg_channel *ch = registry_channel(r, todo[i].id);
        if (g && leave_group(r, g, todo[i].id, REG_LEAVE_EXPIRE)) {
            if (ch)
                channel_forget_group(ch, todo[i].group);
            if (!seen)
                ids[n++] = todo[i].id;
        }
        rmq_free(todo[i].group);
    }
    rmq_free(todo);
    assert(n <= max);
    /* The scan walks every group already, but the check costs more per
     * group: above a small registry it would stall the loop (a debug
     * daemon under a load test), so only small ones get it every scan. */
    assert(r->groups.count + r->channels.count > REGISTRY_SANITY_SCAN_MAX || registry_sanity(r));
    return n;
}

int registry_heartbeat_check(const struct rmq_heartbeat *hb, const struct registry_limits *lim, char *why,
                             size_t len)
{
    if ((int64_t)strlen(hb->client_id) > lim->max_client_id_bytes) {
        snprintf(why, len, "bad heartbeat body: clientID longer than %lld bytes (--max-client-id-bytes)",
                 (long long)lim->max_client_id_bytes);
        return RMQ_E2BIG;
    }
    if (!topics_name_ok(hb->client_id)) {
        /* The same rule as names: a client id is shown, logged and stored. */
        snprintf(why, len, "bad heartbeat body: clientID must be 1 to 255 printable UTF-8 bytes");
        return RMQ_EINVAL;
    }
    if ((int64_t)hb->nconsumers > lim->max_groups_per_client) {
        snprintf(why, len, "heartbeat names %zu consumer groups, more than --max-groups-per-client %lld",
                 hb->nconsumers, (long long)lim->max_groups_per_client);
        return RMQ_E2BIG;
    }
    size_t total_subs = 0;
    for (size_t i = 0; i < hb->nconsumers; i++)
        total_subs += hb->consumers[i].nsubs;
    if ((int64_t)total_subs > lim->max_heartbeat_subscriptions) {
        snprintf(why, len,
                 "heartbeat carries %zu subscriptions, more than --max-heartbeat-subscriptions %lld",
                 total_subs, (long long)lim->max_heartbeat_subscriptions);
        return RMQ_E2BIG;
    }
    for (size_t i = 0; i < hb->nconsumers; i++) {
        const struct rmq_consumer_data *cd = &hb->consumers[i];
        if (!topics_name_ok(cd->group)) {
            snprintf(why, len, "bad heartbeat body: consumer group name must be 1 to 255 printable bytes");
            return RMQ_EINVAL;
        }
        if ((int64_t)cd->nsubs > lim->max_subscriptions) {
            snprintf(why, len, "group %s subscribes %zu topics, more than --max-subscriptions %lld",
                     cd->group, cd->nsubs, (long long)lim->max_subscriptions);
            return RMQ_E2BIG;
        }
        for (size_t k = 0; k < cd->nsubs; k++) {
            if (!topics_name_ok(cd->subs[k].topic)) {
                snprintf(why, len, "bad heartbeat body: topic names must be 1 to 255 printable bytes");
                return RMQ_EINVAL;
            }
        }
    }
    return RMQ_OK;
}

size_t registry_channel_groups_after(const struct registry *r, uint64_t id, const struct rmq_heartbeat *hb)
{
    const struct reg_channel *ch = hashmap_get(&r->channels, &id, sizeof id);
    size_t n = ch ? ch->ngroups : 0;
    for (size_t i = 0; i < hb->nconsumers; i++) {
        bool member = false;
        for (size_t k = 0; ch && k < ch->ngroups && !member; k++)
            member = !strcmp(ch->groups[k], hb->consumers[i].group);
        n += !member;
    }
    return n;
}
