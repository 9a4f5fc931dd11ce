/* admin_ops.c — loop-side handlers of the admin surface's ops (from
 * ADMIN_OP_EXTRA_FIRST on): reset, the virtual clock, group diagnostics and
 * the allocation of a given member list (for /api/groups/{g}/at). Clients
 * and evictions are in admin_clients.c, /metrics in metrics.c.
 *
 * Loop thread only. Each handler fills msg->status and a new msg->reply and
 * keeps no pointer into the message; none of them defers. */
#include "admin_ops.h"

#include "admin_allocation.h"
#include "admin_clients.h"
#include "admin_reply.h"
#include "allocate.h"
#include "broker.h"
#include "broker_state.h"
#include "cluster.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "mailbox.h"
#include "mem.h"
#include "metrics.h"
#include "rmq_body.h"
#include "store.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define CLOCK_ADVANCE_MAX_MS (366LL * 24 * 3600 * 1000)
/* A RocketMQ client heartbeats every 30 s: two missed beats is worth a look. */
#define DIAG_STALE_MS 60000

/* POST /api/reset: closes every channel (each close is recorded, then wiped
 * with the rest), forgets live state, empties the store tables. */
static json_t *reset(struct broker *s, int *status)
{
    size_t conns = conn_set_count(s->conns);
    broker_reset_live(s);
    assert(s->reg.groups.count == 0); /* no live state survives a reset */
    if (store_reset(s->store) != 0 || store_commit(s->store) != 0) {
        log_error("store: reset failed: %s", store_errmsg(s->store));
        return admin_error_json(status, 500, "storage error", "the store could not be wiped");
    }
    log_info("state reset via the admin API (%zu connection(s) closed)", conns);
    *status = 200;
    return json_pack("{s:b,s:I}", "reset", 1, "closedConnections", (json_int_t)conns);
}

static json_t *clock_json(struct broker *s)
{
    return json_pack("{s:b,s:I}", "virtual", s->cfg->virtual_clock, "nowMs", (json_int_t)broker_now_ms(s));
}

/* POST /api/clock/advance {"ms":N}: the HTTP side validated N; checked
 * again here because the loop must not trust its caller's arithmetic. */
static json_t *clock_advance(struct broker *s, const json_t *body, int *status)
{
    json_t *ms = json_object_get(body, "ms");
    if (!json_is_integer(ms) || json_integer_value(ms) < 0 || json_integer_value(ms) > CLOCK_ADVANCE_MAX_MS)
        return admin_error_json(status, 400, "bad body", "ms must be an integer from 0 to 31622400000");
    int64_t before = broker_now_ms(s);
    int rc = broker_clock_advance(s, (int64_t)json_integer_value(ms));
    assert(rc != 0 || broker_now_ms(s) >= before); /* the virtual clock only moves forward */
    (void)before;
    if (rc == RMQ_ESTATE)
        return admin_error_json(status, 409, "real clock",
                                "the clock is real; start the daemon with serve --clock virtual");
    if (rc != 0)
        return admin_error_json(status, 400, "bad body", "the clock cannot move by that amount");
    json_t *out = clock_json(s);
    if (out)
        json_object_set_new(out, "advancedMs", json_integer(json_integer_value(ms)));
    *status = 200;
    return out;
}

/* ---- diagnostics ---- */

static json_t *issue(const char *kind, const char *detail)
{
    return json_pack("{s:s,s:s}", "kind", kind, "detail", detail);
}

/* Client ids held by more than one channel of the group. */
static json_t *duplicates(const struct mship_group *g)
{
    json_t *dups = json_array();
    for (size_t i = 0; dups && i < g->nmembers; i++) {
        bool earlier = false, later = false;
        for (size_t k = 0; k < g->nmembers; k++) {
            if (k == i || strcmp(g->members[k].client_id, g->members[i].client_id))
                continue;
            if (k < i)
                earlier = true;
            else
                later = true;
        }
        if (later && !earlier)
            json_array_append_new(dups, admin_json_name(g->members[i].client_id));
    }
    return dups;
}

/* {"language","version","count"} per distinct (language, version). */
static json_t *client_kinds(const struct mship_group *g)
{
    json_t *kinds = json_array();
    for (size_t i = 0; kinds && i < g->nmembers; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = g->members[k].language == g->members[i].language &&
                   g->members[k].version == g->members[i].version;
        if (seen)
            continue;
        size_t count = 0;
        for (size_t k = i; k < g->nmembers; k++)
            count += g->members[k].language == g->members[i].language &&
                     g->members[k].version == g->members[i].version;
        assert(count >= 1); /* member i counts itself */
        json_array_append_new(kinds, json_pack("{s:s,s:i,s:I}", "language",
                                               rmq_language_name(g->members[i].language), "version",
                                               (int)g->members[i].version, "count", (json_int_t)count));
    }
    return kinds;
}

/* GET /api/groups/{group}/diagnostics, live part. The HTTP side adds what
 * the event store shows (subscription churn). What rmqcoord can see: the
 * broker keeps ONE subscription table per group and heartbeats carry no
 * allocation strategy, so members with different subscriptions show up
 * only as churn of that table, and strategy differences only through the
 * clients' running info (the consistency route). */
static json_t *diagnostics(struct broker *s, const char *name, int *status)
{
    const struct reg_group *rg = registry_group(&s->reg, name);
    if (!rg && !registry_group_known(&s->reg, name))
        return admin_error_json(status, 404, "group not found", "no consumer of this group has been seen");
    int64_t now = broker_now_ms(s);
    json_t *issues = json_array();
    *status = 200;
    if (!rg)
        return json_pack("{s:o,s:b,s:i,s:I,s:[],s:o}", "group", admin_json_name(name), "live", 0, "members",
                         0, "nowMs", (json_int_t)now, "duplicateClientIds", "issues", issues);
    const struct mship_group *g = &rg->g;
    json_t *dups = duplicates(g), *stale = json_array(), *topics = json_array();
    for (size_t i = 0; stale && i < g->nmembers; i++) {
        int64_t age = now - g->members[i].last_hb_ms;
        if (age > DIAG_STALE_MS)
            json_array_append_new(stale, json_pack("{s:o,s:I,s:I}", "clientId",
                                                   admin_json_name(g->members[i].client_id), "channelId",
                                                   (json_int_t)g->members[i].channel_id, "heartbeatAgeMs",
                                                   (json_int_t)age));
    }
    assert(json_array_size(stale) <= g->nmembers);
    for (size_t i = 0; topics && i < g->nsubs; i++)
        json_array_append_new(topics, admin_json_name(g->subs[i].topic));
    bool broadcast = g->message_model == RMQ_MODEL_BROADCASTING;
    bool notified = mship_notifies(g);
    if (json_array_size(dups) > 0)
        json_array_append_new(issues,
                              issue("duplicateClientIds",
                                    "several channels share a client id: they compute the same "
                                    "allocation, so some queues are pulled twice and others by nobody"));
    if (json_array_size(stale) > 0)
        json_array_append_new(issues, issue("staleHeartbeats",
                                            "members have not heartbeated for over 60 s (clients beat every "
                                            "30 s); they expire after --channel-expiry-ms"));
    if (broadcast && notified)
        json_array_append_new(issues, issue("broadcastNotified",
                                            "a broadcasting group is being sent NOTIFY_CONSUMER_IDS_CHANGED, "
                                            "which broadcast consumers do not need"));
    json_t *kinds = client_kinds(g);
    if (json_array_size(kinds) > 1)
        json_array_append_new(issues, issue("mixedClients",
                                            "members run different client languages or versions; their "
                                            "default allocation strategies and rebalance timing may differ"));
    return json_pack("{s:o,s:b,s:I,s:I,s:s,s:s,s:b,s:b,s:o,s:o,s:o,s:o,s:s,s:o}", "group",
                     admin_json_name(g->name), "live", 1, "members", (json_int_t)g->nmembers, "nowMs",
                     (json_int_t)now, "messageModel", rmq_message_model_name(g->message_model), "consumeType",
                     rmq_consume_type_name(g->consume_type), "broadcast", broadcast, "notified", notified,
                     "duplicateClientIds", dups, "staleMembers", stale, "clients", kinds, "subscribedTopics",
                     topics, "strategies",
                     "not reported in heartbeats; see /api/groups/{group}/consistency (client running info)",
                     "issues", issues);
}

/* ---- allocation of a given member list (/api/groups/{group}/at) ---- */

/* Reads strategy / virtualNodes / inner; *why on a bad value. */
static int read_options(const json_t *query, struct allocate_options *opt, const char **why)
{
    const char *name = json_string_value(json_object_get(query, "strategy"));
    enum allocate_strategy st = ALLOCATE_AVG;
    if (name &&
        (allocate_strategy_parse(name, &st) != 0 || st == ALLOCATE_CONFIG || st == ALLOCATE_MACHINE_ROOM)) {
        *why = "strategy must be AVG, AVG_BY_CIRCLE, MACHINE_ROOM_NEARBY or CONSISTENT_HASH here (CONFIG and "
               "MACHINE_ROOM need their lists: use /allocation for the live members)";
        return RMQ_EINVAL;
    }
    allocate_options_init(opt, st);
    opt->rooms_by_rule = 1;
    const char *vn = json_string_value(json_object_get(query, "virtualNodes"));
    if (vn) {
        long v = 0;
        for (const char *p = vn; *p && v <= 10000; p++)
            v = (*p >= '0' && *p <= '9') ? v * 10 + (*p - '0') : 100000;
        if (!*vn || v > 10000) {
            *why = "virtualNodes must be a whole number from 0 to 10000";
            return RMQ_EINVAL;
        }
        opt->virtual_nodes = v;
    }
    const char *inner = json_string_value(json_object_get(query, "inner"));
    if (inner && (allocate_strategy_parse(inner, &opt->inner) != 0 ||
                  (opt->inner != ALLOCATE_AVG && opt->inner != ALLOCATE_AVG_BY_CIRCLE))) {
        *why = "inner must be AVG or AVG_BY_CIRCLE";
        return RMQ_EINVAL;
    }
    return 0;
}

static json_t *allocate_members(struct broker *s, const json_t *query, const json_t *body, int *status)
{
    const char *topic = json_string_value(json_object_get(query, "topic"));
    const json_t *members = json_object_get(body, "members");
    if (!topic || !*topic || !json_is_array(members))
        return admin_error_json(status, 400, "missing parameter", "topic is required");
    const struct topic *tp = topics_get(&s->topics, topic);
    if (!tp)
        return admin_error_json(status, 404, "topic not found", "the topic has no route (now)");
    struct allocate_options opt;
    const char *why = NULL;
    if (read_options(query, &opt, &why) != 0)
        return admin_error_json(status, 400, "bad parameter", why);
    size_t nq = 0, nc = json_array_size(members);
    for (size_t b = 0; b < tp->nbrokers; b++)
        if (tp->brokers[b].perm & TOPIC_PERM_READ)
            nq += (size_t)tp->brokers[b].read_queue_nums;
    struct allocate_queue *queues = rmq_malloc((nq ? nq : 1) * sizeof *queues);
    const char **consumers = rmq_malloc((nc ? nc : 1) * sizeof *consumers);
    json_t *out = NULL;
    if (!queues || !consumers)
        goto done;
    nq = 0;
    for (size_t b = 0; b < tp->nbrokers; b++) {
        if (!(tp->brokers[b].perm & TOPIC_PERM_READ))
            continue;
        for (int q = 0; q < tp->brokers[b].read_queue_nums; q++)
            queues[nq++] = (struct allocate_queue){tp->name, tp->brokers[b].broker_name, q};
    }
    size_t k = 0;
    for (size_t i = 0; i < nc; i++) {
        const char *id = json_string_value(json_array_get(members, i));
        if (id && *id)
            consumers[k++] = id;
    }
    assert(k <= nc);
    if (k == 0 || nq == 0) {
        json_t *unassigned = json_array();
        for (size_t q = 0; unassigned && q < nq; q++)
            json_array_append_new(unassigned, admin_alloc_queue_json(&queues[q]));
        out = json_pack("{s:{},s:[],s:o,s:[]}", "allocation", "owners", "unassigned", unassigned, "overlaps");
        *status = 200;
        goto done;
    }
    struct allocate_input in = {queues, nq, consumers, k};
    struct allocate_result *r = NULL;
    char err[256] = "";
    int rc = allocate_group(&opt, &in, &r, err, sizeof err);
    if (rc == 0) {
        out = admin_alloc_result_json(r);
        if (out)
            json_object_set_new(out, "strategy", json_string(allocate_strategy_name(opt.strategy)));
        *status = 200;
    } else if (rc != RMQ_ENOMEM) {
        out = admin_error_json(status, 400, "cannot allocate", err);
    }
    allocate_result_free(r);
done:
    rmq_free(queues);
    rmq_free(consumers);
    return out;
}

/* See admin_ops.h. */
void admin_ops_handle(struct broker *s, struct mailbox_msg *msg)
{
    assert(msg->op >= ADMIN_OP_EXTRA_FIRST); /* admin_dispatch.c handles the ops below */
    int status = 500;
    json_t *reply = NULL;
    const char *arg = msg->arg ? msg->arg : "";
    switch ((int)msg->op) {
    case ADMIN_OP_CLIENTS_LIST: reply = admin_clients_list(s, &status); break;
    case ADMIN_OP_CLIENT_GET: reply = admin_client_get(s, arg, &status); break;
    case ADMIN_OP_GROUP_EVICT:
        reply =
            admin_group_evict(s, arg, json_string_value(json_object_get(msg->query, "clientId")), &status);
        break;
    case ADMIN_OP_RESET: reply = reset(s, &status); break;
    case ADMIN_OP_CLOCK_GET:
        status = 200;
        reply = clock_json(s);
        break;
    case ADMIN_OP_CLOCK_ADVANCE: reply = clock_advance(s, msg->body, &status); break;
    case ADMIN_OP_GROUP_DIAGNOSTICS: reply = diagnostics(s, arg, &status); break;
    case ADMIN_OP_ALLOCATE_MEMBERS: reply = allocate_members(s, msg->query, msg->body, &status); break;
    case ADMIN_OP_METRICS: reply = metrics_loop_snapshot(s, &status); break;
    case ADMIN_OP_CLUSTER: reply = cluster_admin_json(s, msg->query, &status); break;
    default: reply = admin_error_json(&status, 404, "unknown operation", "not served by this build"); break;
    }
    if (!reply)
        reply = admin_error_json(&status, 500, "internal error", "out of memory building the reply");
    msg->status = status;
    msg->reply = reply;
}
