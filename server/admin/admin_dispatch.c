/* admin_dispatch.c — the loop-thread side of the HTTP admin API: answers
 * mailbox messages from live state (groups, topics, allocations, counters)
 * and applies topic changes. Each reply is a new JSON value handed to the
 * HTTP thread; nothing here keeps a pointer into the message. Loop thread. */
#include "admin_dispatch.h"
#include "admin_allocation.h"
#include "admin_holdings.h"
#include "admin_offsets.h"
#include "admin_ops.h"
#include "admin_reply.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "mailbox.h"
#include "mem.h"
#include "rmq_body.h"
#include "store.h"
#include "trace_recorder.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lowercase hex of a name: how the page's last raw name travels back to
 * the HTTP side ("_nextHex"), which turns it into the cursor. */
static json_t *hex_json(const char *name)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = strlen(name);
    char *h = rmq_malloc(2 * n + 1);
    if (!h)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        h[2 * i] = digits[(unsigned char)name[i] >> 4];
        h[2 * i + 1] = digits[(unsigned char)name[i] & 15];
    }
    h[2 * n] = 0;
    assert(strlen(h) == 2 * n); /* no name byte becomes a NUL digit */
    json_t *v = json_string(h);
    rmq_free(h);
    return v;
}

/* GET /api/groups, one page: the known names after `after` (msg->arg, the
 * cursor's raw name) from the registry's sorted index, so a page costs
 * O(log n + limit) on the loop whatever the number of groups (building the
 * whole list took 215 ms at 100,000 groups and stalled every client). */
static json_t *groups_list(struct broker *s, const char *after, const json_t *body, int *status)
{
    json_int_t limit = json_integer_value(json_object_get(body, "limit"));
    if (limit < 1 || limit > 1000)
        limit = 100;
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    const struct reg_name *n = registry_known_after(&s->reg, after);
    const char *last = NULL;
    for (; n && (json_int_t)json_array_size(arr) < limit; n = n->next[0]) {
        const struct reg_group *g = registry_group(&s->reg, n->name);
        json_t *o = json_pack("{s:o,s:i,s:b}", "group", admin_json_name(n->name), "members",
                              g ? (json_int_t)g->g.nmembers : 0, "live", g != NULL);
        if (o && g) {
            json_object_set_new(o, "messageModel", json_string(rmq_message_model_name(g->g.message_model)));
            json_object_set_new(o, "consumeType", json_string(rmq_consume_type_name(g->g.consume_type)));
        }
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
        last = n->name;
    }
    assert((json_int_t)json_array_size(arr) <= limit); /* a page is at most limit names */
    json_t *next = n && last ? hex_json(last) : json_null();
    if (!next) {
        json_decref(arr);
        return NULL;
    }
    *status = 200;
    return json_pack("{s:o,s:o}", "groups", arr, "_nextHex", next);
}

static json_t *tags_json(const struct rmq_subscription *sub)
{
    json_t *tags = json_array();
    for (size_t t = 0; tags && t < sub->ntags; t++)
        json_array_append_new(tags, admin_json_name(sub->tags[t]));
    return tags;
}

/* Client ids held by more than one channel (two processes sharing an id get
 * overlapping allocations or orphaned queues). */
static json_t *duplicate_ids(const struct mship_group *g)
{
    json_t *dups = json_array();
    for (size_t i = 0; dups && i < g->nmembers; i++) {
        bool first = true, again = false;
        for (size_t k = 0; k < g->nmembers; k++) {
            if (k != i && !strcmp(g->members[k].client_id, g->members[i].client_id)) {
                again = true;
                first = first && k > i;
            }
        }
        if (again && first)
            json_array_append_new(dups, admin_json_name(g->members[i].client_id));
    }
    return dups;
}

static json_t *group_get(struct broker *s, const char *name, int *status)
{
    const struct reg_group *rg = registry_group(&s->reg, name);
    if (!rg) {
        if (!registry_group_known(&s->reg, name))
            return admin_error_json(status, 404, "group not found",
                                    "no consumer of this group has been seen");
        *status = 200;
        return json_pack("{s:o,s:[],s:[],s:b}", "group", admin_json_name(name), "consumers", "subscriptions",
                         "live", 0);
    }
    const struct mship_group *g = &rg->g;
    json_t *consumers = json_array(), *subs = json_array();
    for (size_t i = 0; consumers && i < g->nmembers; i++) {
        const struct mship_member *m = &g->members[i];
        const struct reg_channel *ch = registry_channel(&s->reg, m->channel_id);
        json_array_append_new(
            consumers,
            json_pack("{s:o,s:s,s:s,s:i,s:I,s:I,s:I}", "clientId", admin_json_name(m->client_id),
                      "remoteAddr", ch ? ch->peer : "", "language", rmq_language_name(m->language), "version",
                      (int)m->version, "lastHeartbeatMs", (json_int_t)m->last_hb_ms, "joinedMs",
                      (json_int_t)m->joined_ms, "channelId", (json_int_t)m->channel_id));
    }
    for (size_t i = 0; subs && i < g->nsubs; i++) {
        const struct rmq_subscription *sub = &g->subs[i];
        json_array_append_new(subs, json_pack("{s:o,s:o,s:o,s:I,s:s}", "topic", admin_json_name(sub->topic),
                                              "subString", admin_json_name(sub->sub_string), "tags",
                                              tags_json(sub), "subVersion", (json_int_t)sub->sub_version,
                                              "expressionType", sub->expression_type));
    }
    *status = 200;
    return json_pack("{s:o,s:o,s:o,s:s,s:s,s:s,s:b,s:o}", "group", admin_json_name(g->name), "consumers",
                     consumers, "subscriptions", subs, "messageModel",
                     rmq_message_model_name(g->message_model), "consumeType",
                     rmq_consume_type_name(g->consume_type), "consumeFromWhere",
                     rmq_consume_from_where_name(g->consume_from_where), "live", 1, "duplicateClientIds",
                     duplicate_ids(g));
}

static json_t *topic_json(const struct topic *tp)
{
    json_t *brokers = json_array();
    for (size_t i = 0; brokers && i < tp->nbrokers; i++)
        json_array_append_new(
            brokers, json_pack("{s:o,s:i,s:i,s:i}", "brokerName", admin_json_name(tp->brokers[i].broker_name),
                               "readQueueNums", tp->brokers[i].read_queue_nums, "writeQueueNums",
                               tp->brokers[i].write_queue_nums, "perm", tp->brokers[i].perm));
    return json_pack("{s:o,s:o}", "topic", admin_json_name(tp->name), "brokers", brokers);
}

static json_t *topics_list(struct broker *s, int *status)
{
    const char **names = hashmap_sorted_keys(&s->topics.map);
    json_t *arr = json_array();
    bool ok = names && arr;
    for (size_t i = 0; ok && i < s->topics.map.count; i++)
        ok = json_array_append_new(arr, topic_json(topics_get(&s->topics, names[i]))) == 0;
    rmq_free(names);
    if (!ok) {
        json_decref(arr);
        return NULL;
    }
    *status = 200;
    return json_pack("{s:o}", "topics", arr);
}

static json_t *topic_get(struct broker *s, const char *name, int *status)
{
    const struct topic *tp = topics_get(&s->topics, name);
    if (!tp)
        return admin_error_json(status, 404, "topic not found",
                                "no such topic; PUT /api/topics/{topic} creates one");
    struct buf b;
    buf_init(&b, 0);
    json_t *route = NULL;
    if (topics_route_encode(tp, s->cfg->cluster_name, s->advertise, true, &b) == 0)
        route = json_loadb((const char *)buf_head(&b), buf_live(&b), 0, NULL);
    buf_free(&b);
    json_t *out = topic_json(tp);
    if (out && route)
        json_object_set_new(out, "route", route);
    else
        json_decref(route); /* not kept: was leaked (~2.8 KB a request) when out failed */
    *status = 200;
    return out;
}

/* Reads one broker entry of a PUT body. */
static int read_broker(const json_t *o, const char *default_name, struct topic_broker *b, char *why,
                       size_t len)
{
    json_t *name = json_object_get(o, "brokerName"), *r = json_object_get(o, "readQueueNums"),
           *w = json_object_get(o, "writeQueueNums"), *perm = json_object_get(o, "perm");
    if (name && !json_is_string(name)) {
        snprintf(why, len, "brokerName must be a string");
        return RMQ_EINVAL;
    }
    if (!json_is_integer(r) || (w && !json_is_integer(w)) || (perm && !json_is_integer(perm))) {
        snprintf(why, len, "readQueueNums must be an integer (writeQueueNums and perm too, when given)");
        return RMQ_EINVAL;
    }
    b->broker_name = (char *)(name ? json_string_value(name) : default_name);
    json_int_t rv = json_integer_value(r), wv = w ? json_integer_value(w) : rv,
               pv = perm ? json_integer_value(perm) : 6;
    if (rv < 0 || rv > TOPIC_MAX_QUEUES || wv < 0 || wv > TOPIC_MAX_QUEUES || pv < 0 || pv > 15) {
        snprintf(why, len, "queue counts must be 0..%d and perm 0..15", TOPIC_MAX_QUEUES);
        return RMQ_EINVAL;
    }
    b->read_queue_nums = (int)rv;
    b->write_queue_nums = (int)wv;
    b->perm = (int)pv;
    return RMQ_OK;
}

static json_t *topic_put(struct broker *s, const char *name, const json_t *body, int *status)
{
    if (!name || !topics_name_ok(name))
        return admin_error_json(status, 400, "bad topic name", "a topic name is 1 to 255 printable bytes");
    if (!json_is_object(body))
        return admin_error_json(status, 400, "bad body", "expected a JSON object");
    struct topic_broker brokers[TOPIC_MAX_BROKERS];
    size_t n = 0;
    char why[200];
    const json_t *list = json_object_get(body, "brokers");
    if (list) {
        if (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > TOPIC_MAX_BROKERS)
            return admin_error_json(status, 400, "bad body",
                                    "brokers must be a non-empty array of at most 64 entries");
        for (n = 0; n < json_array_size(list); n++) {
            assert(n < TOPIC_MAX_BROKERS); /* the size was checked above */
            const json_t *o = json_array_get(list, n);
            if (!json_is_object(o) || !json_is_string(json_object_get(o, "brokerName")))
                return admin_error_json(status, 400, "bad body", "each broker needs a brokerName string");
            if (read_broker(o, NULL, &brokers[n], why, sizeof why) != 0)
                return admin_error_json(status, 400, "bad body", why);
        }
    } else {
        if (read_broker(body, s->cfg->broker_name, &brokers[0], why, sizeof why) != 0)
            return admin_error_json(status, 400, "bad body", why);
        n = 1;
    }
    assert(n >= 1 && n <= TOPIC_MAX_BROKERS);
    int rc = broker_put_topic(s, name, brokers, n);
    if (rc == RMQ_EINVAL)
        return admin_error_json(status, 400, "bad body",
                                "invalid broker names (empty, too long or duplicated)");
    if (rc != 0 || store_commit(s->store) != 0)
        return admin_error_json(status, 500, "storage error", "the topic could not be stored");
    log_info("topic %s defined over %zu broker(s) via the admin API", name, n);
    *status = 200;
    return topic_json(topics_get(&s->topics, name));
}

static json_t *topic_delete(struct broker *s, const char *name, int *status)
{
    if (!name || topics_delete(&s->topics, name) != 0)
        return admin_error_json(status, 404, "topic not found", "no such topic");
    trace_record_route(s->trace, broker_now_ms(s), name, NULL);
    if (store_delete_topic(s->store, name) != 0 || store_commit(s->store) != 0)
        return admin_error_json(status, 500, "storage error", "the deletion could not be stored");
    log_info("topic %s deleted via the admin API", name);
    *status = 200;
    return json_pack("{s:o}", "deleted", admin_json_name(name));
}

static json_t *stats(struct broker *s, int *status)
{
    *status = 200;
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "status", "ok", "uptimeMs",
                     (json_int_t)(broker_now_ms(s) - s->started_ms), "connections",
                     (json_int_t)conn_set_count(s->conns), "liveGroups", (json_int_t)s->reg.groups.count,
                     "topics", (json_int_t)topics_count(&s->topics), "requests",
                     (json_int_t)s->stats.requests, "heartbeats", (json_int_t)s->stats.heartbeats,
                     "notificationsSent", (json_int_t)s->stats.notifications_sent, "changes",
                     (json_int_t)s->stats.changes, "advertise", s->advertise);
}

void admin_dispatch_handle(void *ctx, struct mailbox_msg *msg)
{
    struct broker *s = ctx;
    int status = 500;
    json_t *reply = NULL;
    assert(!msg->reply); /* a message is answered once */
    switch (msg->op) {
    case ADMIN_OP_GROUPS_LIST: reply = groups_list(s, msg->arg, msg->body, &status); break;
    case ADMIN_OP_GROUP_GET: reply = group_get(s, msg->arg ? msg->arg : "", &status); break;
    case ADMIN_OP_GROUP_ALLOCATION:
        reply = admin_allocation(s, msg->arg ? msg->arg : "", msg->query, &status);
        /* Without a strategy, the clients are asked which one they run
         * (running info) and the view is computed under it. */
        if (status == 200 && !json_object_get(msg->query, "strategy") &&
            registry_group(&s->reg, msg->arg ? msg->arg : "")) {
            json_decref(reply);
            if (admin_holdings_handle(s, msg))
                return;
            status = msg->status;
            reply = msg->reply;
        }
        break;
    case ADMIN_OP_TOPICS_LIST: reply = topics_list(s, &status); break;
    case ADMIN_OP_TOPIC_GET: reply = topic_get(s, msg->arg ? msg->arg : "", &status); break;
    case ADMIN_OP_TOPIC_PUT: reply = topic_put(s, msg->arg, msg->body, &status); break;
    case ADMIN_OP_TOPIC_DELETE: reply = topic_delete(s, msg->arg, &status); break;
    case ADMIN_OP_STATS: reply = stats(s, &status); break;
    case ADMIN_OP_GROUP_OFFSETS:
        reply = admin_group_offsets(s, msg->arg ? msg->arg : "", msg->query, &status);
        break;
    case ADMIN_OP_GROUP_OFFSETS_RESET:
    case ADMIN_OP_GROUP_OFFSETS_CLONE:
        /* The same name rule as every other door (topics_name_ok): these two
         * store rows for a group named only by the path. */
        if (!msg->arg || !topics_name_ok(msg->arg))
            reply =
                admin_error_json(&status, 400, "bad group name",
                                 "a group name is 1 to 255 printable UTF-8 bytes, no control or bidi mark");
        else if (msg->op == ADMIN_OP_GROUP_OFFSETS_RESET)
            reply = admin_group_offsets_reset(s, msg->arg, msg->body, &status);
        else
            reply = admin_group_offsets_clone(s, msg->arg, msg->body, &status);
        break;
    case ADMIN_OP_CLIENT_RUNNING_INFO:
    case ADMIN_OP_GROUP_CONSISTENCY:
    case ADMIN_OP_GROUP_CONVERGED:
        if (admin_holdings_handle(s, msg))
            return; /* deferred: completed when the clients answer */
        status = msg->status;
        reply = msg->reply;
        break;
    default:
        if (msg->op >= ADMIN_OP_EXTRA_FIRST) {
            admin_ops_handle(s, msg);
            return;
        }
        reply = admin_error_json(&status, 404, "unknown operation", "the loop does not handle this request");
        break;
    }
    if (!reply)
        reply = admin_error_json(&status, 500, "internal error", "out of memory building the reply");
    assert(status >= 100 && status <= 599 && status != MAILBOX_DEFERRED);
    msg->status = status;
    msg->reply = reply;
}
