/* membership.c — see membership.h. */
#include "membership.h"

#include "array.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <string.h>

#ifndef NDEBUG
static size_t idx_slot(uint64_t key, size_t cap);
static long seq_position(const struct mship_group *g, uint32_t seq);

/* The cheap part, after every heartbeat: member storage has room, the
 * index is at most half full, a subscription table has room. */
static int shape_sanity(const struct mship_group *g)
{
    assert(g->name);
    assert(g->nmembers <= g->members_cap && g->nsubs <= g->subs_cap);
    assert(g->idx_cap == 0 || (g->idx_cap & (g->idx_cap - 1)) == 0);
    assert(g->nmembers * 2 <= g->idx_cap || (g->nmembers == 0 && g->idx_cap == 0));
    assert(g->nmembers == 0 || g->members[g->nmembers - 1].join_seq <= g->next_join_seq);
    return 1;
}

/* Member i is where the index says: its channel's slot holds its join_seq,
 * and the seqs on either side keep join order. */
static int member_sanity(const struct mship_group *g, size_t i)
{
    const struct mship_member *m = &g->members[i];
    assert(m->client_id && m->join_seq != 0);
    assert(i == 0 || g->members[i - 1].join_seq < m->join_seq);
    assert(seq_position(g, m->join_seq) == (long)i);
    size_t k = idx_slot(m->channel_id, g->idx_cap);
    while (g->idx_vals[k] != 0 && g->idx_keys[k] != m->channel_id)
        k = (k + 1) & (g->idx_cap - 1);
    assert(g->idx_vals[k] == m->join_seq);
    return 1;
}

/* The members: every one indexed at its position, the index holding
 * nothing else. O(members + index); run where the operation is linear in
 * the members anyway. */
static int members_sanity(const struct mship_group *g)
{
    assert(shape_sanity(g));
    for (size_t i = 0; i < g->nmembers; i++)
        assert(member_sanity(g, i));
    size_t used = 0;
    for (size_t k = 0; k < g->idx_cap; k++)
        used += g->idx_vals[k] != 0;
    assert(used == g->nmembers);
    return 1;
}

/* The subscription table holds each topic once (PROTOCOL: one table per
 * group, keyed by topic). O(subs^2), as the update that precedes it. */
static int subs_sanity(const struct mship_group *g)
{
    for (size_t i = 0; i < g->nsubs; i++) {
        assert(g->subs[i].topic);
        for (size_t k = 0; k < i; k++)
            assert(strcmp(g->subs[k].topic, g->subs[i].topic) != 0);
    }
    return 1;
}
#endif

int mship_group_init(struct mship_group *g, const char *name)
{
    memset(g, 0, sizeof *g);
    g->name = rmq_strdup(name);
    g->message_model = RMQ_MODEL_CLUSTERING;
    g->consume_type = RMQ_CONSUME_PASSIVELY;
    return g->name ? RMQ_OK : RMQ_ENOMEM;
}

void mship_group_clear(struct mship_group *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nmembers; i++)
        rmq_free(g->members[i].client_id);
    for (size_t i = 0; i < g->nsubs; i++)
        rmq_subscription_clear(&g->subs[i]);
    rmq_free(g->members);
    rmq_free(g->subs);
    rmq_free(g->name);
    rmq_free(g->idx_keys);
    rmq_free(g->idx_vals);
    memset(g, 0, sizeof *g);
}

long mship_find_client(const struct mship_group *g, const char *client_id)
{
    for (size_t i = 0; i < g->nmembers; i++)
        if (!strcmp(g->members[i].client_id, client_id))
            return (long)i;
    return -1;
}

static size_t idx_slot(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

/* Position of the member with join_seq seq (members are in seq order). */
static long seq_position(const struct mship_group *g, uint32_t seq)
{
    size_t lo = 0, hi = g->nmembers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->members[mid].join_seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->nmembers && g->members[lo].join_seq == seq ? (long)lo : -1;
}

long mship_find(const struct mship_group *g, uint64_t channel_id)
{
    if (g->idx_cap == 0)
        return -1;
    for (size_t i = idx_slot(channel_id, g->idx_cap);; i = (i + 1) & (g->idx_cap - 1)) {
        if (g->idx_vals[i] == 0)
            return -1;
        if (g->idx_keys[i] == channel_id)
            return seq_position(g, g->idx_vals[i]);
    }
}

/* Sets key -> seq, overwriting an existing key. The table has room. */
static void idx_set(struct mship_group *g, uint64_t key, uint32_t seq)
{
    assert(seq != 0 && g->idx_cap > 0); /* 0 marks an empty slot */
    size_t i = idx_slot(key, g->idx_cap);
    while (g->idx_vals[i] != 0 && g->idx_keys[i] != key)
        i = (i + 1) & (g->idx_cap - 1);
    g->idx_keys[i] = key;
    g->idx_vals[i] = seq;
}

/* Keeps the table at most half full; 0 or RMQ_ENOMEM (table unchanged). */
static int idx_reserve(struct mship_group *g, size_t members)
{
    if (members * 2 <= g->idx_cap)
        return RMQ_OK;
    size_t cap = g->idx_cap ? g->idx_cap * 2 : 8;
    while (members * 2 > cap)
        cap *= 2;
    uint64_t *keys = rmq_malloc(cap * sizeof *keys);
    uint32_t *vals = rmq_calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        rmq_free(keys);
        rmq_free(vals);
        return RMQ_ENOMEM;
    }
    rmq_free(g->idx_keys);
    rmq_free(g->idx_vals);
    g->idx_keys = keys;
    g->idx_vals = vals;
    g->idx_cap = cap;
    for (size_t m = 0; m < g->nmembers; m++)
        idx_set(g, g->members[m].channel_id, g->members[m].join_seq);
    assert(members * 2 <= g->idx_cap && members_sanity(g)); /* the rehash walked them all */
    return RMQ_OK;
}

/* Removes key with backward-shift deletion, so probes never need tombstones. */
static void idx_remove(struct mship_group *g, uint64_t key)
{
    size_t mask = g->idx_cap - 1, i = idx_slot(key, g->idx_cap);
    while (g->idx_vals[i] != 0 && g->idx_keys[i] != key)
        i = (i + 1) & mask;
    if (g->idx_vals[i] == 0)
        return;
    for (size_t j = (i + 1) & mask; g->idx_vals[j] != 0; j = (j + 1) & mask) {
        size_t home = idx_slot(g->idx_keys[j], g->idx_cap);
        /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            g->idx_keys[i] = g->idx_keys[j];
            g->idx_vals[i] = g->idx_vals[j];
            i = j;
        }
    }
    g->idx_vals[i] = 0;
}

/* Gives the new last member i its join_seq and indexes it. When the seqs
 * run out (2^32 - 1 joins into one group) they are dealt again from 1, in
 * the same order. */
static int index_member(struct mship_group *g, size_t i)
{
    if (idx_reserve(g, i + 1) != 0)
        return RMQ_ENOMEM;
    if (g->next_join_seq == UINT32_MAX) {
        for (size_t m = 0; m < i; m++) {
            g->members[m].join_seq = (uint32_t)(m + 1);
            idx_set(g, g->members[m].channel_id, g->members[m].join_seq);
        }
        g->next_join_seq = (uint32_t)i;
    }
    g->members[i].join_seq = ++g->next_join_seq;
    idx_set(g, g->members[i].channel_id, g->members[i].join_seq);
    assert(i == 0 || g->members[i - 1].join_seq < g->members[i].join_seq);
    return RMQ_OK;
}

const struct rmq_subscription *mship_find_sub(const struct mship_group *g, const char *topic)
{
    for (size_t i = 0; i < g->nsubs; i++)
        if (!strcmp(g->subs[i].topic, topic))
            return &g->subs[i];
    return NULL;
}

bool mship_notifies(const struct mship_group *g)
{
    return g->message_model != RMQ_MODEL_BROADCASTING;
}

/* PROTOCOL: docs/protocol.md §4.2 step 3 — the channel is the key; a new channel is a change,
 * a known channel with another client id is replaced without one. */
static int update_channel(struct mship_group *g, const struct mship_heartbeat_in *in,
                          struct mship_outcome *out)
{
    long i = mship_find(g, in->channel_id);
    if (i >= 0) {
        struct mship_member *m = &g->members[i];
        if (strcmp(m->client_id, in->client_id) != 0) {
            char *id = rmq_strdup(in->client_id);
            if (!id)
                return RMQ_ENOMEM;
            rmq_free(m->client_id);
            m->client_id = id;
            out->flags |= MSHIP_CLIENT_ID_CHANGED;
        }
        m->language = in->language;
        m->version = in->version;
        m->last_hb_ms = in->now_ms;
        out->member_index = (size_t)i;
        return RMQ_OK;
    }
    if (RMQ_GROW(g->members, g->members_cap, g->nmembers + 1, 4) != 0)
        return RMQ_ENOMEM;
    char *id = rmq_strdup(in->client_id);
    if (!id)
        return RMQ_ENOMEM;
    struct mship_member *slot = &g->members[g->nmembers];
    *slot = (struct mship_member){
        .channel_id = in->channel_id,
        .client_id = id,
        .language = in->language,
        .version = in->version,
        .joined_ms = in->now_ms,
        .last_hb_ms = in->now_ms,
    };
    if (index_member(g, g->nmembers) != 0) {
        rmq_free(id);
        return RMQ_ENOMEM;
    }
    out->member_index = g->nmembers++;
    out->flags |= MSHIP_JOINED;
    return RMQ_OK;
}

static bool listed(const struct rmq_consumer_data *cd, const char *topic)
{
    for (size_t i = 0; i < cd->nsubs; i++)
        if (!strcmp(cd->subs[i].topic, topic))
            return true;
    return false;
}

/* PROTOCOL: docs/protocol.md §4.2 step 4 — insert new topics (change), replace on a higher
 * subVersion (no change), then drop topics the heartbeat no longer lists
 * (change). */
static int update_subscriptions(struct mship_group *g, const struct rmq_consumer_data *cd,
                                struct mship_outcome *out)
{
    for (size_t i = 0; i < cd->nsubs; i++) {
        const struct rmq_subscription *s = &cd->subs[i];
        struct rmq_subscription *old = (struct rmq_subscription *)mship_find_sub(g, s->topic);
        if (old) {
            if (s->sub_version > old->sub_version) {
                struct rmq_subscription copy;
                if (rmq_subscription_copy(&copy, s) != 0)
                    return RMQ_ENOMEM;
                rmq_subscription_clear(old);
                *old = copy;
                out->flags |= MSHIP_SUB_REPLACED;
                g->state_version++;
            }
            continue;
        }
        if (RMQ_GROW(g->subs, g->subs_cap, g->nsubs + 1, 4) != 0)
            return RMQ_ENOMEM;
        if (rmq_subscription_copy(&g->subs[g->nsubs], s) != 0)
            return RMQ_ENOMEM;
        g->nsubs++;
        out->flags |= MSHIP_SUB_ADDED;
        g->state_version++;
    }
    size_t w = 0;
    for (size_t r = 0; r < g->nsubs; r++) {
        if (listed(cd, g->subs[r].topic)) {
            g->subs[w++] = g->subs[r];
        } else {
            rmq_subscription_clear(&g->subs[r]);
            out->flags |= MSHIP_SUB_REMOVED;
            g->state_version++;
        }
    }
    g->nsubs = w;
    assert(subs_sanity(g));
    return RMQ_OK;
}

int mship_apply_heartbeat(struct mship_group *g, const struct mship_heartbeat_in *in,
                          struct mship_outcome *out)
{
    memset(out, 0, sizeof *out);
    const struct rmq_consumer_data *cd = in->cd;
    if (g->consume_type != cd->consume_type || g->message_model != cd->message_model ||
        g->consume_from_where != cd->consume_from_where)
        g->state_version++;
    g->consume_type = cd->consume_type;
    g->message_model = cd->message_model;
    g->consume_from_where = cd->consume_from_where;
    assert(!strcmp(in->cd->group, g->name));
    int rc = update_channel(g, in, out);
    if (rc != 0)
        return rc;
    if (in->fingerprint != 0 && in->without_sub) {
        /* PROTOCOL: docs/protocol.md §3.2 — v2 without subscriptions only refreshes the
         * channel; the client resends them in full when told they differ. */
        out->sub_change = !g->has_fingerprint || g->fingerprint != in->fingerprint;
    } else {
        rc = update_subscriptions(g, cd, out);
        if (rc != 0)
            return rc;
        if (in->fingerprint != 0) {
            if (!g->has_fingerprint || g->fingerprint != in->fingerprint)
                g->state_version++;
            g->fingerprint = in->fingerprint;
            g->has_fingerprint = true;
            out->sub_change = false;
        } else {
            /* A v1 heartbeat: tell a v2-capable client to keep sending full ones. */
            out->sub_change = true;
        }
    }
    out->changed = (out->flags & MSHIP_CHANGE_MASK) != 0;
    assert(shape_sanity(g));
    assert(out->member_index < g->nmembers && g->members[out->member_index].channel_id == in->channel_id);
    assert(member_sanity(g, out->member_index));
    return RMQ_OK;
}

int mship_remove_channel(struct mship_group *g, uint64_t channel_id, struct mship_member *removed,
                         size_t *index_out)
{
    long i = mship_find(g, channel_id);
    if (i < 0)
        return 0;
    if (removed)
        *removed = g->members[i];
    else
        rmq_free(g->members[i].client_id);
    idx_remove(g, channel_id);
    /* The members after it keep their seqs, so their index slots stay right. */
    memmove(&g->members[i], &g->members[i + 1], (g->nmembers - (size_t)i - 1) * sizeof g->members[0]);
    g->nmembers--;
    if (index_out)
        *index_out = (size_t)i;
    assert(mship_find(g, channel_id) < 0);
    assert(members_sanity(g)); /* the memmove was linear in the members already */
    return 1;
}

size_t mship_collect_expired(const struct mship_group *g, int64_t now_ms, int64_t expiry_ms, uint64_t *ids,
                             size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < g->nmembers && n < max; i++)
        if (now_ms - g->members[i].last_hb_ms > expiry_ms)
            ids[n++] = g->members[i].channel_id;
    return n;
}
