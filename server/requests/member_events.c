/* member_events.c — what the daemon does when the registry reports a
 * membership change: persist it (member rows, subscriptions, an event row),
 * log one line, and schedule the group's NOTIFY when the rules say so
 * (notify_policy, common/broker). Loop thread only. */
#include "member_events.h"

#include "buf.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "notify_policy.h"
#include "pull_requests.h"
#include "rmq_body.h"
#include "store.h"

#include <assert.h>
#include <string.h>

#define HEARTBEAT_STORE_MS 1000

/* Appends the JSON array of g's member client ids to out; with extra/at,
 * also inserts extra at index at (to rebuild the list before a leave). */
static int members_json(const struct mship_group *g, const char *extra, size_t at, struct buf *out)
{
    int rc = buf_append_u8(out, '[');
    size_t n = g->nmembers + (extra ? 1 : 0);
    for (size_t i = 0, k = 0; rc == 0 && i < n; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        const char *id = (extra && i == at) ? extra : g->members[k++].client_id;
        if (rc == 0)
            rc = rmq_json_append_string(out, id);
    }
    if (rc == 0)
        rc = buf_append_u8(out, ']');
    if (rc == 0)
        rc = buf_terminate(out);
    return rc;
}

/* Member lists go into an event in full for groups of up to this many
 * members; a bigger group's events keep only the position of the change
 * (store.h, delta), with full lists again every event_snapshot_every()
 * events so a reader rebuilds any list from a bounded number of deltas. A
 * mass join or expiry of n members so writes O(n) bytes per snapshot and
 * O(1) per event instead of O(n) per event. */
#define EVENT_FULL_MEMBERS 64
#define EVENT_SNAPSHOT_MAX_GAP 1024

static uint32_t event_snapshot_every(size_t members)
{
    size_t gap = members / 4;
    return gap < EVENT_SNAPSHOT_MAX_GAP ? (uint32_t)gap : EVENT_SNAPSHOT_MAX_GAP;
}

/* The next event of every group stores full lists: after a batch was lost,
 * the snapshot the deltas would refer to may be gone. */
void member_events_need_snapshots(struct broker *s)
{
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&s->reg.groups, &b); e;
         e = hashmap_next(&s->reg.groups, e, &b))
        ((struct reg_group *)e->val)->events_since_full = UINT32_MAX;
}

/* The member lists of an event, as JSON array text, into before and after
 * (see record_event for before_extra / before_at / before_skip). */
static int event_lists(const struct mship_group *g, const char *before_extra, size_t before_at,
                       long before_skip, struct buf *before, struct buf *after)
{
    int rc = members_json(g, NULL, 0, after);
    if (rc == 0 && before_skip >= 0) {
        /* A join: the list before is the list after without the new member. */
        struct mship_group tmp = *g;
        struct mship_member *copy = NULL;
        if (tmp.nmembers > 0) {
            copy = rmq_malloc(tmp.nmembers * sizeof *copy);
            rc = copy ? 0 : RMQ_ENOMEM;
            if (copy) {
                size_t k = 0;
                for (size_t i = 0; i < tmp.nmembers; i++)
                    if ((long)i != before_skip)
                        copy[k++] = tmp.members[i];
                tmp.members = copy;
                tmp.nmembers = k;
            }
        }
        if (rc == 0)
            rc = members_json(&tmp, NULL, 0, before);
        rmq_free(copy);
    } else if (rc == 0) {
        rc = members_json(g, before_extra, before_at, before);
    }
    return rc;
}

/* Records a membership event: store row, one info log line. before_extra /
 * before_skip describe how the member list looked before the change:
 * before_skip >= 0, a join at that position; before_extra, a member that
 * was at before_at; neither (before_skip -2), an unchanged list. */
static void record_event(struct broker *s, struct reg_group *g, const char *kind, const char *client_id,
                         uint64_t channel_id, const char *before_extra, size_t before_at, long before_skip)
{
    size_t n = g->g.nmembers;
    /* A joiner stands in the list after, a leaver stood in the one before (n + 1 places). */
    assert(before_skip < 0 || (size_t)before_skip < n);
    assert(!before_extra || before_at <= n);
    bool full = n <= EVENT_FULL_MEMBERS || g->events_since_full >= event_snapshot_every(n);
    struct buf after, before;
    buf_init(&after, 0);
    buf_init(&before, 0);
    int rc = full ? event_lists(&g->g, before_extra, before_at, before_skip, &before, &after) : 0;
    int64_t delta_index = before_skip >= 0 ? before_skip : before_extra ? (int64_t)before_at : -1;
    if (rc != 0) {
        log_error("event %s for group %s not recorded: out of memory", kind, g->g.name);
        g->events_since_full = UINT32_MAX;
    } else {
        struct store_event ev = {broker_now_ms(s),
                                 g->g.name,
                                 kind,
                                 client_id,
                                 (int64_t)channel_id,
                                 full ? (const char *)buf_head(&before) : NULL,
                                 full ? (const char *)buf_head(&after) : NULL,
                                 !full,
                                 delta_index};
        if (store_append_event(s->store, &ev, NULL) != 0) {
            log_error("store: event for group %s failed: %s", g->g.name, store_errmsg(s->store));
            g->events_since_full = UINT32_MAX; /* later deltas would miss this one */
        } else {
            g->events_since_full = full ? 0 : g->events_since_full + 1;
        }
        if (full)
            log_info("group %s: %s %s -> members %s", g->g.name, kind,
                     client_id ? client_id : "(table changed)", (const char *)buf_head(&after));
        else
            log_info("group %s: %s %s -> %zu members", g->g.name, kind,
                     client_id ? client_id : "(table changed)", n);
    }
    buf_free(&after);
    buf_free(&before);
    s->stats.changes++;
    int k = stats_change_kind(kind);
    if (k >= 0)
        s->stats.changes_by_kind[k]++;
}

/* Store writes from hooks cannot fail the request that caused them; a failed
 * one is logged, and the commit that follows reports the batch's fate. */
static void check_store(struct broker *s, int rc, const char *what, const char *group)
{
    if (rc != 0)
        log_error("store: %s for group %s failed: %s (%s)", what, group, rmq_strerror(rc),
                  store_errmsg(s->store));
}

static void schedule_notify(struct broker *s, struct reg_group *g, enum notify_change change)
{
    /* The dialect's rule, which replay shares (a 4.9 broker notifies broadcast groups too, §12). */
    if (notify_policy_marks(&g->g, change, &s->cfg->dialect)) {
        registry_mark_notify_at(&s->reg, g, loop_now_ms(s->loop));
        assert(g->notify_pending); /* owed until notify_flush takes it */
    }
}

void member_events_mark_notify(struct broker *s, struct reg_group *g)
{
    schedule_notify(s, g, NOTIFY_CHANGE_LEAVE);
}

static void hook_joined(void *ctx, struct reg_group *g, const struct mship_member *m)
{
    struct broker *s = ctx;
    assert(m >= g->g.members && m < g->g.members + g->g.nmembers); /* the joiner is in the group */
    int64_t now = broker_now_ms(s);
    check_store(s,
                store_put_group(s->store, g->g.name, rmq_consume_type_name(g->g.consume_type),
                                rmq_message_model_name(g->g.message_model),
                                rmq_consume_from_where_name(g->g.consume_from_where), now),
                "saving the group", g->g.name);
    check_store(s, store_member_join(s->store, g->g.name, (int64_t)m->channel_id, m->client_id, now),
                "recording a join", g->g.name);
    record_event(s, g, "join", m->client_id, m->channel_id, NULL, 0, (long)(m - g->g.members));
    schedule_notify(s, g, NOTIFY_CHANGE_JOIN);
}

static void hook_left(void *ctx, struct reg_group *g, const struct mship_member *m, size_t index,
                      enum reg_leave_reason why)
{
    struct broker *s = ctx;
    const char *kind = reg_leave_reason_name(why);
    check_store(s, store_member_leave(s->store, g->g.name, (int64_t)m->channel_id, kind, broker_now_ms(s)),
                "recording a leave", g->g.name);
    record_event(s, g, kind, m->client_id, m->channel_id, m->client_id, index, -1);
    if (why == REG_LEAVE_EXPIRE)
        s->stats.expirations++;
    schedule_notify(s, g, why == REG_LEAVE_EXPIRE ? NOTIFY_CHANGE_EXPIRE : NOTIFY_CHANGE_LEAVE);
}

static void save_subscriptions(struct broker *s, const struct reg_group *g)
{
    /* Every subscription of the group is stored (up to --max-subscriptions,
     * enforced when the heartbeat was accepted): the arrays are as long as
     * the table, not a fixed size. */
    size_t n = g->g.nsubs;
    struct store_subscription *subs = n ? rmq_calloc(n, sizeof *subs) : NULL;
    struct buf *tags = n ? rmq_calloc(n, sizeof *tags) : NULL;
    if (n && (!subs || !tags)) {
        log_error("store: subscriptions of %s not saved: out of memory", g->g.name);
        rmq_free(subs);
        rmq_free(tags);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct rmq_subscription *sub = &g->g.subs[i];
        buf_init(&tags[i], 0);
        int rc = buf_append_u8(&tags[i], '[');
        for (size_t t = 0; rc == 0 && t < sub->ntags; t++) {
            if (t)
                rc = buf_append_u8(&tags[i], ',');
            if (rc == 0)
                rc = rmq_json_append_string(&tags[i], sub->tags[t]);
        }
        if (rc == 0)
            rc = buf_append_u8(&tags[i], ']');
        if (rc == 0)
            rc = buf_terminate(&tags[i]);
        subs[i] =
            (struct store_subscription){sub->topic, sub->sub_string, sub->expression_type,
                                        rc == 0 ? (const char *)buf_head(&tags[i]) : "[]", sub->sub_version};
    }
    if (store_put_subscriptions(s->store, g->g.name, subs, n, broker_now_ms(s)) != 0)
        log_error("store: subscriptions of %s failed: %s", g->g.name, store_errmsg(s->store));
    for (size_t i = 0; i < n; i++)
        buf_free(&tags[i]);
    rmq_free(subs);
    rmq_free(tags);
}

static void hook_subscriptions(void *ctx, struct reg_group *g, unsigned flags)
{
    struct broker *s = ctx;
    save_subscriptions(s, g);
    if (!notify_policy_subscription_counts(flags))
        return;
    record_event(s, g, "subscription", NULL, 0, NULL, 0, -2 /* list unchanged */);
    schedule_notify(s, g, NOTIFY_CHANGE_SUBSCRIPTION);
}

static void hook_heartbeat(void *ctx, struct reg_group *g, const struct mship_member *m, unsigned flags)
{
    struct broker *s = ctx;
    /* Persisting every heartbeat would make SQLite the bottleneck; the
     * stored time may lag the live one by HEARTBEAT_STORE_MS (a restart
     * marks every member gone anyway). */
    struct mship_member *mm = (struct mship_member *)m;
    if (flags & MSHIP_JOINED) {
        mm->stored_hb_ms = m->last_hb_ms; /* the join row carries it */
    } else if (m->last_hb_ms - m->stored_hb_ms >= HEARTBEAT_STORE_MS) {
        mm->stored_hb_ms = m->last_hb_ms;
        store_soft_writes(s->store, true); /* a refreshed time: nobody waits for it */
        check_store(s, store_member_heartbeat(s->store, g->g.name, (int64_t)m->channel_id, m->last_hb_ms),
                    "recording a heartbeat", g->g.name);
        store_soft_writes(s->store, false);
    }
    if ((flags & MSHIP_SUB_REPLACED) && !(flags & (MSHIP_SUB_ADDED | MSHIP_SUB_REMOVED)))
        save_subscriptions(s, g);
    /* PROTOCOL: docs/protocol.md §4.3 — the broker creates %RETRY%<group> (1 queue) at the first heartbeat.
     */
    char retry[300];
    size_t n = strlen(g->g.name);
    if (n > sizeof retry - sizeof "%RETRY%")
        return; /* no valid topic name is that long */
    memcpy(retry, "%RETRY%", sizeof "%RETRY%" - 1);
    memcpy(retry + sizeof "%RETRY%" - 1, g->g.name, n + 1);
    if (!topics_get(&s->topics, retry) && topics_name_ok(retry))
        broker_create_topic(s, retry, 1);
}

static void hook_group_empty(void *ctx, struct reg_group *g)
{
    struct broker *s = ctx;
    pull_release_group(s, g->g.name);
}

/* Appends id as a JSON array element (with its comma after the first). */
static int json_push_id(struct buf *b, uint64_t id)
{
    return buf_appendf(b, "%s%llu", buf_live(b) > 1 ? "," : "", (unsigned long long)id);
}

/* One group's part of member_events_resync: its row, members,
 * subscriptions, the end of members the store has and the registry does
 * not, and an event with the full list (a snapshot later deltas refer to). */
static int resync_group(struct broker *s, struct reg_group *g, int64_t now)
{
    const struct mship_group *mg = &g->g;
    int rc = store_put_group(s->store, mg->name, rmq_consume_type_name(mg->consume_type),
                             rmq_message_model_name(mg->message_model),
                             rmq_consume_from_where_name(mg->consume_from_where), now);
    struct buf chans, list;
    buf_init(&chans, 0);
    buf_init(&list, 0);
    int e = buf_append_u8(&chans, '[');
    for (size_t i = 0; i < mg->nmembers; i++) {
        const struct mship_member *m = &mg->members[i];
        if (rc == 0)
            rc = store_member_join(s->store, mg->name, (int64_t)m->channel_id, m->client_id, now);
        if (e == 0)
            e = json_push_id(&chans, m->channel_id);
    }
    if (e == 0 && (e = buf_append_u8(&chans, ']')) == 0)
        e = buf_terminate(&chans);
    if (rc == 0 && e == 0)
        rc = store_resync_group(s->store, mg->name, (const char *)buf_head(&chans), now);
    if (rc == 0)
        save_subscriptions(s, g);
    if (e == 0)
        e = members_json(mg, NULL, 0, &list);
    if (rc == 0 && e == 0) {
        const char *l = (const char *)buf_head(&list);
        struct store_event ev = {now, mg->name, "resync", NULL, 0, l, l, false, -1};
        rc = store_append_event(s->store, &ev, NULL);
    }
    g->events_since_full = rc == 0 && e == 0 ? 0 : UINT32_MAX;
    buf_free(&chans);
    buf_free(&list);
    return rc ? rc : e;
}

void member_events_resync(struct broker *s)
{
    int64_t now = broker_now_ms(s);
    if (!store_resync_due(s->store, now))
        return;
    log_warn("store: writes were lost; re-writing the membership of %zu group(s)", s->reg.groups.count);
    struct buf chans, groups;
    buf_init(&chans, 0);
    buf_init(&groups, 0);
    int rc = 0, e = buf_append_u8(&chans, '[');
    if (e == 0)
        e = buf_append_u8(&groups, '[');
    size_t b;
    for (struct hashmap_entry *h = hashmap_first(&s->reg.channels, &b); h;
         h = hashmap_next(&s->reg.channels, h, &b)) {
        const struct reg_channel *ch = h->val;
        if (!ch->stored)
            continue;
        if (rc == 0)
            rc = store_resync_channel(s->store, (int64_t)ch->id, ch->peer, ch->opened_ms);
        if (e == 0)
            e = json_push_id(&chans, ch->id);
    }
    for (struct hashmap_entry *h = hashmap_first(&s->reg.groups, &b); h;
         h = hashmap_next(&s->reg.groups, h, &b)) {
        struct reg_group *g = h->val;
        if (rc == 0)
            rc = resync_group(s, g, now);
        if (e == 0 && buf_live(&groups) > 1)
            e = buf_append_u8(&groups, ',');
        if (e == 0)
            e = rmq_json_append_string(&groups, g->g.name);
    }
    if (e == 0 && (e = buf_append_u8(&chans, ']')) == 0 && (e = buf_terminate(&chans)) == 0 &&
        (e = buf_append_u8(&groups, ']')) == 0)
        e = buf_terminate(&groups);
    if (rc == 0 && e == 0)
        rc = store_resync_finish(s->store, (const char *)buf_head(&groups), (const char *)buf_head(&chans),
                                 now);
    if (rc != 0 || e != 0)
        log_error("store: re-writing membership failed: %s", e ? rmq_strerror(e) : store_errmsg(s->store));
    buf_free(&chans);
    buf_free(&groups);
}

void member_events_hooks(struct broker *s, struct registry_hooks *out)
{
    *out = (struct registry_hooks){
        .ctx = s,
        .joined = hook_joined,
        .left = hook_left,
        .subscriptions_changed = hook_subscriptions,
        .heartbeat = hook_heartbeat,
        .group_empty = hook_group_empty,
    };
}
