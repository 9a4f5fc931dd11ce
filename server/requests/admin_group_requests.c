/* admin_group_requests.c — subscription-group configs set by admin tools
 * (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP 200, GET_ALL_SUBSCRIPTIONGROUP_CONFIG
 * 201, DELETE_SUBSCRIPTIONGROUP 207: stored in SQLite, schema/0004) and
 * GET_CONSUMER_RUNNING_INFO (307) from an admin, forwarded to the client and
 * its reply passed back (specs: tests/mqadmin/FINDINGS.md §3.9–3.12).
 * Loop thread only. */
#include "admin_group_requests.h"

#include "admin_body.h"

#include "conn.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "outbound.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long the client has to answer a forwarded 307 (the broker waits 10 s;
 * the tool's own timeout is 15 s). */
#define FORWARD_TIMEOUT_MS 10000
/* The oldest client version that answers 307 (V3_1_8_SNAPSHOT). */
#define RUNNING_INFO_MIN_VERSION 62

static int load_config(void *ctx, const char *group, const char *config_json)
{
    struct broker *s = ctx;
    json_t *v = json_loads(config_json, 0, NULL);
    if (!json_is_object(v) || json_object_set_new(s->group_configs, group, v) != 0) {
        if (!v)
            log_warn("store: subscription group %s: config is not JSON, skipped", group);
        else
            json_decref(v);
    }
    return 0;
}

static int load_time(void *ctx, const char *group, const char *topic, int queue_id, int64_t updated_ms)
{
    struct offset_entry *e = offsets_find(ctx, group, topic, queue_id);
    if (e)
        e->updated_ms = updated_ms;
    return 0;
}

int admin_group_req_load(struct broker *s)
{
    assert(s->store); /* at start, after store_open */
    if (!s->group_configs && !(s->group_configs = json_object()))
        return RMQ_ENOMEM;
    int rc = store_load_group_configs(s->store, load_config, s);
    if (rc == 0)
        rc = store_load_offset_times(s->store, load_time, &s->offsets);
    if (rc != 0)
        log_error("store: loading subscription groups failed: %s", store_errmsg(s->store));
    return rc;
}

void admin_group_req_free(struct broker *s)
{
    json_decref(s->group_configs);
    s->group_configs = NULL;
}

static json_t *configs(struct broker *s)
{
    if (!s->group_configs)
        s->group_configs = json_object();
    return s->group_configs;
}

/* UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): the body is the config; kept
 * whole (4.9 and 5.x tools send different fields), stored before the reply. */
void admin_group_req_update(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    json_t *cfg = req->body_len ? json_loadb((const char *)req->body, req->body_len, 0, NULL) : NULL;
    const char *group = json_string_value(json_object_get(cfg, "groupName"));
    if (!json_is_object(cfg) || !group || !*group || strlen(group) > 255) {
        json_decref(cfg);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR,
                   "the body must be a SubscriptionGroupConfig with a groupName");
        return;
    }
    char *text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
    char *name = rmq_strdup(group);
    int rc = text && name && configs(s) ? store_put_group_config(s->store, name, text, broker_now_ms(s))
                                        : RMQ_ENOMEM;
    if (rc == 0 && json_object_set(s->group_configs, name, cfg) != 0)
        rc = RMQ_ENOMEM;
    json_decref(cfg);
    free(text);
    if (rc != 0) {
        rmq_free(name);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "subscription group not stored");
        return;
    }
    assert(json_object_get(s->group_configs, name)); /* installed once stored */
    s->group_configs_version++;
    log_info("subscription group %s configured by an admin request from %s", name, c->peer);
    rmq_free(name);
    reply_ok(s, c, req, true);
}

/* The config a broker auto-creates at a group's first heartbeat. */
static json_t *default_config(const char *group)
{
    return json_pack("{s:s,s:b,s:b,s:b,s:i,s:i,s:i,s:i,s:b}", "groupName", group, "consumeEnable", 1,
                     "consumeFromMinEnable", 1, "consumeBroadcastEnable", 1, "retryQueueNums", 1,
                     "retryMaxTimes", 16, "brokerId", 0, "whichBrokerWhenConsumeSlowly", 1,
                     "notifyConsumerIdsChangedEnable", 1);
}

static void note_group(void *ctx, const char *group, const char *topic, int32_t qid, struct offset_entry *e)
{
    (void)topic;
    (void)qid;
    (void)e;
    (void)json_object_set_new(ctx, group, json_true());
}

/* GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): the stored configs, and a default
 * one for every other group that is live or has committed offsets (what a
 * broker auto-creates at a heartbeat or commit; a deleted config stays
 * deleted until then). */
void admin_group_req_get_all(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    json_t *table = configs(s) ? json_deep_copy(s->group_configs) : NULL, *seen = json_object();
    if (seen)
        offsets_each(&s->offsets, note_group, seen);
    for (const struct reg_name *n = registry_known_after(&s->reg, NULL); table && seen && n; n = n->next[0])
        if (!json_object_get(table, n->name) &&
            (registry_group(&s->reg, n->name) || json_object_get(seen, n->name)))
            (void)json_object_set_new(table, n->name, default_config(n->name));
    json_decref(seen);
    if (table && json_object_size(table) == 0) {
        json_decref(table);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "No subscription group in this broker");
        return;
    }
    json_t *body = table ? json_pack("{s:o,s:{s:I,s:i,s:I}}", "subscriptionGroupTable", table, "dataVersion",
                                     "counter", (json_int_t)s->group_configs_version, "stateVersion", 0,
                                     "timestamp", (json_int_t)broker_now_ms(s))
                         : NULL;
    admin_body_reply(s, c, req, body, false);
}

/* DELETE_SUBSCRIPTIONGROUP (207): the stored config, and the group's
 * offsets when removeOffset (4.9) or cleanOffset (5.x) is true. */
void admin_group_req_delete(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group;
    if (reply_require_str(s, c, req, "groupName", &group) != 0)
        return;
    bool clean = false, v;
    if ((rmq_cmd_ext_get_bool(req, "removeOffset", &v) == 0 && v) ||
        (rmq_cmd_ext_get_bool(req, "cleanOffset", &v) == 0 && v))
        clean = true;
    bool had = configs(s) && json_object_get(s->group_configs, group);
    size_t noffsets = clean ? offsets_delete_group(&s->offsets, group) : 0;
    int rc = had ? store_delete_group_config(s->store, group) : 0;
    if (rc == 0 && noffsets)
        rc = store_delete_offsets(s->store, group, NULL);
    if (rc != 0) {
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, "deletion not stored: storage error");
        return;
    }
    if (had) {
        json_object_del(s->group_configs, group);
        s->group_configs_version++;
    }
    assert(!json_object_get(s->group_configs, group));
    log_info("subscription group %s deleted (%zu offset(s)) by an admin request from %s", group, noffsets,
             c->peer);
    reply_ok(s, c, req, had || noffsets);
}

/* ---- GET_CONSUMER_RUNNING_INFO forwarded ---- */

/* An admin's 307 waiting for the client's answer (keyed by the outgoing
 * opaque in outbound.c's table). */
struct forward {
    uint64_t admin_conn_id; /* the admin's connection may close first: found again by id */
    int32_t opaque, version;
    uint8_t serialize_type;
    char what[600]; /* "<group> <clientId>" for remarks */
};

/* The live connection of channel id (a hash lookup: an answer must not
 * cost a walk over every connection). */
static struct conn *conn_by_id(struct broker *s, uint64_t id)
{
    struct reg_channel *ch = registry_channel(&s->reg, id);
    struct conn *c = ch ? ch->conn : NULL;
    assert(!c || c->id == id);
    return c && !c->closing ? c : NULL;
}

static void forward_done(void *owner, void *ctx, const struct rmq_cmd *from_client)
{
    struct broker *s = owner;
    struct forward *f = ctx;
    struct conn *admin = conn_by_id(s, f->admin_conn_id);
    if (admin) {
        struct rmq_cmd like, resp;
        rmq_cmd_init(&like);
        like.opaque = f->opaque;
        like.version = f->version;
        like.serialize_type = f->serialize_type;
        char remark[700];
        int rc;
        if (from_client) {
            /* The client's response as it is: code, remark, extFields and body. */
            rc = rmq_cmd_init_response(&resp, &like, from_client->code, from_client->remark);
            for (size_t i = 0; rc == 0 && i < from_client->ext_len; i++)
                rc = rmq_cmd_ext_set(&resp, from_client->ext[i].key, from_client->ext[i].val);
            if (rc == 0 && from_client->body_len)
                rc = rmq_cmd_set_body_copy(&resp, from_client->body, from_client->body_len);
        } else {
            snprintf(remark, sizeof remark, "consumer %s Timeout: no answer within %d ms", f->what,
                     FORWARD_TIMEOUT_MS);
            rc = rmq_cmd_init_response(&resp, &like, RMQ_RESP_CONSUME_MSG_TIMEOUT, remark);
        }
        if (rc == 0)
            conn_send(admin, &resp);
        else
            conn_close_async(admin, "out of memory building a reply");
        rmq_cmd_clear(&resp);
    }
    rmq_free(f);
}

/* The live channel of client_id in group, or NULL. */
static struct reg_channel *member_channel(struct broker *s, const char *group, const char *client_id)
{
    const struct reg_group *g = registry_group(&s->reg, group);
    for (size_t i = 0; g && i < g->g.nmembers; i++) {
        if (strcmp(g->g.members[i].client_id, client_id) != 0)
            continue;
        struct reg_channel *ch = registry_channel(&s->reg, g->g.members[i].channel_id);
        if (ch && ch->conn && !ch->conn->closing)
            return ch;
    }
    return NULL;
}

void admin_group_req_forward_running_info(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    const char *group, *client_id;
    if (reply_require_str(s, c, req, "consumerGroup", &group) != 0 ||
        reply_require_str(s, c, req, "clientId", &client_id) != 0)
        return;
    char remark[700];
    struct reg_channel *ch = member_channel(s, group, client_id);
    if (!ch) {
        snprintf(remark, sizeof remark, "The Consumer %s %s not online", group, client_id);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        return;
    }
    if (ch->version < RUNNING_INFO_MIN_VERSION) {
        snprintf(remark, sizeof remark,
                 "The Consumer %s Version %d too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
                 client_id, (int)ch->version);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
        return;
    }
    struct forward *f = rmq_calloc(1, sizeof *f);
    struct rmq_cmd out;
    rmq_cmd_init(&out);
    out.code = RMQ_REQ_GET_CONSUMER_RUNNING_INFO;
    /* PROTOCOL: docs/protocol.md §3.8 — a new request built from the header's
     * three fields, as the broker does: never the requester's other extFields
     * or body, so a forward costs the member a few hundred bytes whatever
     * the requester sent. */
    bool jstack = false;
    (void)rmq_cmd_ext_get_bool(req, "jstackEnable", &jstack);
    int rc = f ? RMQ_OK : RMQ_ENOMEM;
    if (rc == 0)
        rc = rmq_cmd_ext_set(&out, "consumerGroup", group);
    if (rc == 0)
        rc = rmq_cmd_ext_set(&out, "clientId", client_id);
    if (rc == 0)
        rc = rmq_cmd_ext_set(&out, "jstackEnable", jstack ? "true" : "false");
    if (rc == 0) {
        *f = (struct forward){.admin_conn_id = c->id,
                              .opaque = req->opaque,
                              .version = req->version,
                              .serialize_type = req->serialize_type};
        snprintf(f->what, sizeof f->what, "%s %s", group, client_id);
        rc = outbound_send(s, ch->conn, &out, FORWARD_TIMEOUT_MS, forward_done, f);
    }
    rmq_cmd_clear(&out);
    if (rc == RMQ_E2BIG) {
        rmq_free(f);
        snprintf(remark, sizeof remark,
                 "[OVERLOAD] %d requests to consumer %s %s already wait for its answer",
                 OUTBOUND_MAX_PER_CONN, group, client_id);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_BUSY, remark);
    } else if (rc != 0) {
        rmq_free(f);
        snprintf(remark, sizeof remark, "invoke consumer %s %s Exception: the request could not be sent",
                 group, client_id);
        reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
    }
}
