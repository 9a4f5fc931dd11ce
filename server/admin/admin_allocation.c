/* admin_allocation.c — GET /api/groups/{group}/allocation: which queue every live
 * member takes under a strategy, computed on the loop thread from the
 * consumer list GET_CONSUMER_LIST_BY_GROUP returns right now and the
 * topic's subscribe set as clients derive it from the route (readable
 * brokers' read queues). The engine is common/alloc/allocate.c, the same code the
 * `allocate` subcommand and the vectors test use.
 *
 * Query: topic (required), strategy (default AVG), virtualNodes,
 * consumerIdcs=A,B (MACHINE_ROOM), inner=AVG|AVG_BY_CIRCLE and
 * brokerRooms=broker:room,... consumerRooms=clientId:room,... (NEARBY; with
 * neither map, rooms follow the rule "text after the last '-'"), and
 * config=brokerName:queueId,... (CONFIG). Loop thread only. */
#include "admin_allocation.h"
#include "admin_reply.h"

#include "broker.h"
#include "err.h"
#include "mailbox.h"
#include "mem.h"
#include "parse_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 4096

/* Everything borrowed by the allocate input lives here until the reply is built. */
struct alloc_args {
    char *scratch; /* owned copies of the list parameters, split in place */
    struct allocate_queue *queues;
    const char **consumers;
    const char *idcs[MAX_LIST];
    struct allocate_room broker_rooms[MAX_LIST], consumer_rooms[MAX_LIST];
    struct allocate_queue config[MAX_LIST];
    size_t n_queues, n_consumers;
};

static void free_args(struct alloc_args *a)
{
    if (!a)
        return;
    rmq_free(a->scratch);
    rmq_free(a->queues);
    rmq_free(a->consumers);
    rmq_free(a);
}

static const char *param(const json_t *query, const char *key)
{
    return json_string_value(json_object_get(query, key));
}

/* Splits a comma list (in place, in scratch memory) into items; returns the
 * count or -1 when over MAX_LIST. */
static long split_list(char *text, char **items)
{
    long n = 0;
    for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ",")) {
        if (n == MAX_LIST)
            return -1;
        items[n++] = tok;
    }
    assert(n <= MAX_LIST); /* items, and the arrays it fills, hold MAX_LIST */
    return n;
}

/* "name:value" at the last ':' (client ids may hold ':' in an IPv6 address). */
static int split_pair(char *item, const char **name, const char **value)
{
    char *colon = strrchr(item, ':');
    if (!colon || colon == item || !colon[1])
        return RMQ_EINVAL;
    *colon = 0;
    *name = item;
    *value = colon + 1;
    assert(**name && **value); /* both halves non-empty */
    return RMQ_OK;
}

static int parse_rooms(char *text, struct allocate_room *rooms, size_t *n)
{
    char *items[MAX_LIST];
    long k = split_list(text, items);
    if (k < 0)
        return RMQ_E2BIG;
    for (long i = 0; i < k; i++)
        if (split_pair(items[i], &rooms[i].name, &rooms[i].room) != 0)
            return RMQ_EINVAL;
    *n = (size_t)k;
    return RMQ_OK;
}

static int parse_config(char *text, const char *topic, struct allocate_queue *cfg, size_t *n)
{
    char *items[MAX_LIST];
    long k = split_list(text, items);
    if (k < 0)
        return RMQ_E2BIG;
    for (long i = 0; i < k; i++) {
        const char *broker, *qid;
        if (split_pair(items[i], &broker, &qid) != 0)
            return RMQ_EINVAL;
        int64_t v;
        if (rmq_parse_i64_range(qid, 0, INT32_MAX, &v) != 0)
            return RMQ_EINVAL;
        cfg[i] = (struct allocate_queue){topic, broker, (int32_t)v};
    }
    *n = (size_t)k;
    return RMQ_OK;
}

/* Copies the list parameters into one scratch buffer so they can be split. */
static char *scratch_copy(struct alloc_args *a, const char *v, size_t *used, size_t cap)
{
    size_t n = strlen(v) + 1;
    assert(*used + n <= cap); /* cap was summed over the same parameters */
    if (*used + n > cap)
        return NULL;
    char *p = a->scratch + *used;
    memcpy(p, v, n);
    *used += n;
    return p;
}

/* Fills opt from the query; on a bad parameter returns non-zero with *why set. */
static int read_options(struct alloc_args *a, const json_t *query, const char *topic,
                        struct allocate_options *opt, const char **why)
{
    const char *name = param(query, "strategy");
    enum allocate_strategy st = ALLOCATE_AVG;
    if (name && allocate_strategy_parse(name, &st) != 0) {
        *why = "strategy must be AVG, AVG_BY_CIRCLE, CONFIG, MACHINE_ROOM, MACHINE_ROOM_NEARBY or "
               "CONSISTENT_HASH";
        return RMQ_EINVAL;
    }
    allocate_options_init(opt, st);
    const char *vn = param(query, "virtualNodes");
    if (vn) {
        int64_t v;
        if (rmq_parse_i64_range(vn, 0, 10000, &v) != 0) {
            *why = "virtualNodes must be a whole number from 0 to 10000";
            return RMQ_EINVAL;
        }
        opt->virtual_nodes = v;
    }
    const char *inner = param(query, "inner");
    if (inner && (allocate_strategy_parse(inner, &opt->inner) != 0 ||
                  (opt->inner != ALLOCATE_AVG && opt->inner != ALLOCATE_AVG_BY_CIRCLE))) {
        *why = "inner must be AVG or AVG_BY_CIRCLE";
        return RMQ_EINVAL;
    }
    size_t used = 0, cap = 0;
    const char *keys[] = {"consumerIdcs", "brokerRooms", "consumerRooms", "config"};
    for (size_t i = 0; i < 4; i++)
        cap += param(query, keys[i]) ? strlen(param(query, keys[i])) + 1 : 0;
    a->scratch = rmq_malloc(cap ? cap : 1);
    if (!a->scratch)
        return RMQ_ENOMEM;
    const char *v;
    if ((v = param(query, "consumerIdcs"))) {
        char *items[MAX_LIST];
        long k = split_list(scratch_copy(a, v, &used, cap), items);
        if (k < 0) {
            *why = "too many consumerIdcs";
            return RMQ_EINVAL;
        }
        for (long i = 0; i < k; i++)
            a->idcs[i] = items[i];
        opt->idcs = a->idcs;
        opt->n_idcs = (size_t)k;
    }
    bool maps = false;
    if ((v = param(query, "brokerRooms"))) {
        maps = true;
        if (parse_rooms(scratch_copy(a, v, &used, cap), a->broker_rooms, &opt->n_broker_rooms) != 0) {
            *why = "brokerRooms must be brokerName:room,...";
            return RMQ_EINVAL;
        }
        opt->broker_rooms = a->broker_rooms;
    }
    if ((v = param(query, "consumerRooms"))) {
        maps = true;
        if (parse_rooms(scratch_copy(a, v, &used, cap), a->consumer_rooms, &opt->n_consumer_rooms) != 0) {
            *why = "consumerRooms must be clientId:room,...";
            return RMQ_EINVAL;
        }
        opt->consumer_rooms = a->consumer_rooms;
    }
    opt->rooms_by_rule = !maps;
    if ((v = param(query, "config"))) {
        if (parse_config(scratch_copy(a, v, &used, cap), topic, a->config, &opt->n_config) != 0) {
            *why = "config must be brokerName:queueId,...";
            return RMQ_EINVAL;
        }
        opt->config = a->config;
    }
    return RMQ_OK;
}

/* Whether q is among the first n (the route's) queues. */
static bool has_queue(const struct alloc_args *a, size_t n, const struct allocate_queue *q)
{
    assert(n <= a->n_queues);
    for (size_t i = 0; i < n; i++)
        if (a->queues[i].queue_id == q->queue_id && !strcmp(a->queues[i].broker_name, q->broker_name) &&
            !strcmp(a->queues[i].topic, q->topic))
            return true;
    return false;
}

/* mqAll as clients derive it from the route (PROTOCOL: docs/protocol.md §8.2, perm & 4), plus extra
 * (queues of other brokers, --role broker) when not already there. */
static int collect_queues(struct alloc_args *a, const struct topic *tp, const struct allocate_queue *extra,
                          size_t n_extra)
{
    size_t n = n_extra;
    for (size_t b = 0; b < tp->nbrokers; b++)
        if (tp->brokers[b].perm & TOPIC_PERM_READ)
            n += (size_t)tp->brokers[b].read_queue_nums;
    a->queues = rmq_malloc((n ? n : 1) * sizeof *a->queues);
    if (!a->queues)
        return RMQ_ENOMEM;
    for (size_t b = 0; b < tp->nbrokers; b++) {
        if (!(tp->brokers[b].perm & TOPIC_PERM_READ))
            continue;
        for (int q = 0; q < tp->brokers[b].read_queue_nums; q++)
            a->queues[a->n_queues++] = (struct allocate_queue){tp->name, tp->brokers[b].broker_name, q};
    }
    /* Extras have no duplicates, so only the route is searched: a client
     * can report thousands of queues, and searching the extras too made
     * this quadratic in them. */
    size_t n_route = a->n_queues;
    for (size_t i = 0; i < n_extra; i++)
        if (!strcmp(extra[i].topic, tp->name) && !has_queue(a, n_route, &extra[i]))
            a->queues[a->n_queues++] =
                (struct allocate_queue){tp->name, extra[i].broker_name, extra[i].queue_id};
    assert(a->n_queues <= n); /* sized for the route and every extra */
    return RMQ_OK;
}

json_t *admin_alloc_queue_json(const struct allocate_queue *q)
{
    return json_pack("{s:s,s:s,s:i}", "topic", q->topic, "brokerName", q->broker_name, "queueId",
                     (int)q->queue_id);
}

json_t *admin_alloc_result_json(const struct allocate_result *r)
{
    json_t *alloc = json_object(), *owners = json_array(), *unassigned = json_array(),
           *overlaps = json_array();
    for (size_t i = 0; alloc && i < r->n_consumers; i++) {
        if (r->consumer_first[i] != i)
            continue; /* a duplicated id holds the same queues as its first copy */
        json_t *list = json_array();
        const struct allocate_assignment *as = allocate_result_queues_of(r, i);
        for (size_t k = 0; list && k < allocate_result_count_of(r, i); k++)
            json_array_append_new(list, admin_alloc_queue_json(&as[k].queue));
        json_object_set_new(alloc, r->consumers[i], list);
    }
    for (size_t q = 0; owners && q < r->n_queues; q++) {
        assert(r->owner_start[q] <= r->owner_start[q + 1]);
        json_t *who = json_array();
        for (size_t k = r->owner_start[q]; who && k < r->owner_start[q + 1]; k++)
            json_array_append_new(who, json_string(r->consumers[r->owners[k]]));
        json_t *entry = json_pack("{s:o,s:o}", "queue", admin_alloc_queue_json(&r->queues[q]), "owners", who);
        if (allocate_result_owner_count(r, q) > 1)
            json_array_append(overlaps, entry);
        json_array_append_new(owners, entry);
    }
    for (size_t i = 0; unassigned && i < r->n_unassigned; i++)
        json_array_append_new(unassigned, admin_alloc_queue_json(&r->queues[r->unassigned[i]]));
    return json_pack("{s:o,s:o,s:o,s:o}", "allocation", alloc, "owners", owners, "unassigned", unassigned,
                     "overlaps", overlaps);
}

static json_t *result_json(const struct alloc_view *v, const char *group)
{
    const struct allocate_result *r = v->result;
    json_t *out = admin_alloc_result_json(r);
    if (out && v->broadcast) /* every member takes every queue: by design, not an overlap */
        json_object_set_new(out, "overlaps", json_array());
    json_t *head =
        json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "group", group, "topic", v->topic, "strategy",
                  allocate_strategy_name(v->strategy), "consumers", (json_int_t)r->n_consumers, "queues",
                  (json_int_t)r->n_queues, "messageModel", v->broadcast ? "BROADCASTING" : "CLUSTERING");
    /* json_object_update copies the members: head stays ours to release. */
    if (!out || !head || json_object_update(out, head) != 0) {
        json_decref(out);
        out = NULL;
    }
    json_decref(head);
    return out;
}

/* Builds the view; on failure returns NULL with *error set (or NULL for
 * out of memory) and *status. */
static struct alloc_view *compute(struct broker *s, struct alloc_args *a, const char *group,
                                  const json_t *query, const struct allocate_queue *extra, size_t n_extra,
                                  int *status, json_t **error)
{
    const char *topic = param(query, "topic");
    *error = NULL;
    if (!topic || !*topic) {
        *error = admin_error_json(status, 400, "missing parameter",
                                  "topic is required, e.g. ?topic=TopicTest&strategy=AVG");
        return NULL;
    }
    const struct topic *tp = topics_get(&s->topics, topic);
    if (!tp) {
        *error = admin_error_json(
            status, 404, "topic not found",
            "no such topic: define it with PUT /api/topics/{topic}, or query its route with auto-create on");
        return NULL;
    }
    const struct reg_group *g = registry_group(&s->reg, group);
    if (!g && !registry_group_known(&s->reg, group)) {
        *error = admin_error_json(status, 404, "group not found", "no consumer of this group has been seen");
        return NULL;
    }
    struct alloc_view *v = rmq_calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->args = a;
    v->topic = tp->name;
    const char *why = NULL;
    int rc = read_options(a, query, topic, &v->opt, &why);
    if (rc == 0)
        rc = collect_queues(a, tp, extra, n_extra);
    v->strategy = v->opt.strategy;
    /* BROADCASTING: each member consumes every queue, whatever its strategy
     * (RebalanceImpl.rebalanceByTopic takes mqSet whole): CONFIG with the
     * whole queue set gives exactly that. */
    v->broadcast = g && g->g.message_model == RMQ_MODEL_BROADCASTING;
    if (rc == 0 && v->broadcast) {
        v->opt.strategy = ALLOCATE_CONFIG;
        v->opt.config = a->queues;
        v->opt.n_config = a->n_queues;
    }
    a->n_consumers = g ? g->g.nmembers : 0;
    if (rc == 0) {
        a->consumers = rmq_malloc((a->n_consumers ? a->n_consumers : 1) * sizeof *a->consumers);
        rc = a->consumers ? 0 : RMQ_ENOMEM;
    }
    assert(a->n_consumers == 0 || g != NULL);
    for (size_t i = 0; rc == 0 && i < a->n_consumers; i++)
        a->consumers[i] = g->g.members[i].client_id;
    char err[256] = "";
    if (rc == 0 && a->n_consumers > 0 && a->n_queues > 0) {
        struct allocate_input in = {a->queues, a->n_queues, a->consumers, a->n_consumers};
        rc = allocate_group(&v->opt, &in, &v->result, err, sizeof err);
    }
    if (rc != 0) {
        if (why)
            *error = admin_error_json(status, 400, "bad parameter", why);
        else if (rc != RMQ_ENOMEM)
            *error = admin_error_json(status, 400, "cannot allocate", err);
        v->args = NULL;
        admin_alloc_view_free(v);
        return NULL;
    }
    assert(v->result || a->n_consumers == 0 || a->n_queues == 0); /* computed whenever both lists exist */
    *status = 200;
    return v;
}

int admin_alloc_view_new(struct broker *s, const char *group, const json_t *query, struct alloc_view **out,
                         int *status, json_t **error)
{
    return admin_alloc_view_new_ex(s, group, query, NULL, 0, out, status, error);
}

int admin_alloc_view_new_ex(struct broker *s, const char *group, const json_t *query,
                            const struct allocate_queue *extra, size_t n_extra, struct alloc_view **out,
                            int *status, json_t **error)
{
    struct alloc_args *a = rmq_calloc(1, sizeof *a);
    *out = NULL;
    *error = NULL;
    if (!a)
        return RMQ_ENOMEM;
    *out = compute(s, a, group, query, extra, n_extra, status, error);
    assert(!*out || !*error); /* a view or an error, not both */
    if (!*out) {
        free_args(a);
        return *error ? RMQ_EINVAL : RMQ_ENOMEM;
    }
    return RMQ_OK;
}

void admin_alloc_view_free(struct alloc_view *v)
{
    if (!v)
        return;
    allocate_result_free(v->result);
    free_args(v->args);
    rmq_free(v);
}

json_t *admin_alloc_view_json(const struct alloc_view *v, const char *group)
{
    if (v->result)
        return result_json(v, group);
    return json_pack("{s:s,s:s,s:s,s:I,s:I,s:s,s:{},s:[],s:[],s:[]}", "group", group, "topic", v->topic,
                     "strategy", allocate_strategy_name(v->strategy), "consumers",
                     (json_int_t)v->args->n_consumers, "queues", (json_int_t)v->args->n_queues,
                     "messageModel", v->broadcast ? "BROADCASTING" : "CLUSTERING", "allocation", "owners",
                     "unassigned", "overlaps");
}

json_t *admin_allocation(struct broker *s, const char *group, const json_t *query, int *status)
{
    struct alloc_view *v;
    json_t *error;
    if (admin_alloc_view_new(s, group, query, &v, status, &error) != 0)
        return error;
    json_t *out = admin_alloc_view_json(v, group);
    admin_alloc_view_free(v);
    return out;
}
