/* store_members.c — the writer's membership rows: clients, channels,
 * consumer groups, members, subscriptions, the event history, and the
 * ending of what earlier runs left live (store_members.h; store_recover in
 * store.c runs it at start and commits).
 *
 * Owned by the loop thread, on the writer's connection (store.c). Foreign
 * keys are on, so the natural order is store_open_channel at accept, then
 * per heartbeat store_put_client, store_put_group, store_member_join,
 * subscriptions. Writes made of several statements run in a savepoint so a
 * failing call leaves the batch as it was.
 */
#include "store_members.h"

#include "err.h"
#include "mem.h"
#include "store_exec.h"

#include <assert.h>
#include <sqlite3.h>
#include <string.h>

/* Ends every member and channel of the runs before before_run (reason and
 * event kind: kind), one event per group that had live members. */
int store_end_runs_before(struct store *s, int64_t before_run, const char *kind, int64_t now_ms, int *groups)
{
    int err = store_write_begin(s);
    if (err)
        return err;
    err = store_exec_st(s, ST_RECOVER_EVENTS, groups, "IIs", now_ms, before_run, kind);
    if (!err)
        err = store_exec_st(s, ST_RECOVER_MEMBERS, NULL, "IIs", now_ms, before_run, kind);
    if (!err)
        err = store_exec_st(s, ST_RECOVER_CHANNELS, NULL, "IIs", now_ms, before_run, kind);
    err = store_write_end(s, err);
    assert(store_batch_sanity(s));
    return err;
}

int store_put_client(struct store *s, const char *client_id, const char *language, int version,
                     int64_t now_ms)
{
    return store_write_one(s, NULL, ST_CLIENT_PUT, "ssdI", client_id, language, version, now_ms);
}

int store_open_channel(struct store *s, int64_t channel_id, const char *remote_addr, int64_t now_ms)
{
    return store_write_one(s, NULL, ST_CHANNEL_OPEN, "IIsI", channel_id, s->run_id, remote_addr, now_ms);
}

/* Also ends any member still live on the channel (same reason), so a
 * closed channel never keeps live members even if the caller missed one.
 * RMQ_ENOTFOUND if the channel is unknown or already closed. */
int store_close_channel(struct store *s, int64_t channel_id, const char *reason, int64_t now_ms)
{
    int changes = 0;
    int err = store_write_begin(s);
    if (err)
        return err;
    err = store_exec_st(s, ST_CHANNEL_CLOSE, &changes, "IIs", channel_id, now_ms, reason);
    if (!err && changes == 0)
        err = store_refuse(s, RMQ_ENOTFOUND, "close channel");
    if (!err)
        err = store_exec_st(s, ST_CHANNEL_MEMBERS_LEAVE, NULL, "IIs", channel_id, now_ms, reason);
    err = store_write_end(s, err);
    assert(store_batch_sanity(s));
    return err;
}

int store_put_group(struct store *s, const char *group, const char *consume_type, const char *message_model,
                    const char *consume_from_where, int64_t now_ms)
{
    return store_write_one(s, NULL, ST_GROUP_PUT, "ssssI", group, consume_type, message_model,
                           consume_from_where, now_ms);
}

int store_member_join(struct store *s, const char *group, int64_t channel_id, const char *client_id,
                      int64_t now_ms)
{
    return store_write_one(s, NULL, ST_MEMBER_JOIN, "sIsI", group, channel_id, client_id, now_ms);
}

/* RMQ_ENOTFOUND when the (group, channel) has no live member. */
int store_member_heartbeat(struct store *s, const char *group, int64_t channel_id, int64_t now_ms)
{
    int changes = 0;
    int err = store_write_one(s, &changes, ST_MEMBER_HEARTBEAT, "sII", group, channel_id, now_ms);
    return err ? err : changes ? 0 : store_refuse(s, RMQ_ENOTFOUND, "member heartbeat");
}

/* RMQ_ENOTFOUND when the (group, channel) has no live member. */
int store_member_leave(struct store *s, const char *group, int64_t channel_id, const char *reason,
                       int64_t now_ms)
{
    int changes = 0;
    int err = store_write_one(s, &changes, ST_MEMBER_LEAVE, "sIIs", group, channel_id, now_ms, reason);
    return err ? err : changes ? 0 : store_refuse(s, RMQ_ENOTFOUND, "member leave");
}

/* A NULL tags_json stores "[]"; a repeated topic in subs keeps the last. */
int store_put_subscriptions(struct store *s, const char *group, const struct store_subscription *subs,
                            size_t n, int64_t now_ms)
{
    if (n && !subs)
        return store_refuse(s, RMQ_EINVAL, "put subscriptions");
    int err = store_write_begin(s);
    if (err)
        return err;
    err = store_exec_st(s, ST_SUBS_CLEAR, NULL, "s", group);
    for (size_t i = 0; i < n && !err; i++) {
        const struct store_subscription *u = &subs[i];
        err = store_exec_st(s, ST_SUB_PUT, NULL, "sssssII", group, u->topic, u->sub_string,
                            u->expression_type, u->tags_json ? u->tags_json : "[]", u->sub_version, now_ms);
    }
    err = store_write_end(s, err);
    assert(store_batch_sanity(s));
    return err;
}

/* NULL before/after store "[]"; channel_id 0 and a NULL client_id are
 * stored as SQL NULL. */
int store_append_event(struct store *s, const struct store_event *ev, int64_t *id_out)
{
    if (!ev)
        return store_refuse(s, RMQ_EINVAL, "append event");
    if (ev->delta && ev->delta_index < -1)
        return store_refuse(s, RMQ_EINVAL, "append event (delta index)");
    int err = store_write_one(s, NULL, ST_EVENT_APPEND, ev->delta ? "IsssNssI" : "IsssNssn", ev->ts_ms,
                              ev->group, ev->kind, ev->client_id, ev->channel_id,
                              !ev->delta && ev->before_json ? ev->before_json : "[]",
                              !ev->delta && ev->after_json ? ev->after_json : "[]", ev->delta_index);
    if (!err && id_out)
        *id_out = sqlite3_last_insert_rowid(s->db);
    return err;
}
