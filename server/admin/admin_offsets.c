/* admin_offsets.c — see admin_offsets.h. Loop thread only. */
#include "admin_offsets.h"

#include "admin_allocation.h"
#include "admin_offset_requests.h"
#include "admin_reply.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "metrics_text.h"
#include "offset_requests.h"
#include "offset_table.h"
#include "store.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
    const char *topic; /* borrowed from the offsets table for the call */
    int32_t qid;
    const struct offset_entry *e;
};

struct rows {
    const char *group, *topic;
    struct row *r;
    size_t n, cap;
    bool oom;
};

static void collect(void *ctx, const char *group, const char *topic, int32_t qid, struct offset_entry *e)
{
    struct rows *rs = ctx;
    if (strcmp(group, rs->group) != 0 || (rs->topic && strcmp(topic, rs->topic) != 0))
        return;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 16;
        struct row *r = rmq_realloc(rs->r, cap * sizeof *r);
        if (!r) {
            rs->oom = true;
            return;
        }
        rs->r = r;
        rs->cap = cap;
    }
    assert(rs->n < rs->cap);
    rs->r[rs->n++] = (struct row){topic, qid, e};
}

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->qid > y->qid) - (x->qid < y->qid);
}

/* The live client id of channel id, or NULL. */
static const char *channel_client(const struct broker *s, uint64_t id)
{
    const struct reg_channel *ch = id ? registry_channel(&s->reg, id) : NULL;
    return ch && ch->conn ? ch->client_id : NULL;
}

/* Client ids long-polling (group, topic, qid) now, as a JSON array. */
static json_t *pulling(const struct broker *s, const char *group, const char *topic, int32_t qid)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < s->pulls.n; i++) {
        const struct held_pull *h = &s->pulls.items[i];
        if (!h->conn || h->queue_id != qid || strcmp(h->group, group) != 0 || strcmp(h->topic, topic) != 0)
            continue;
        const char *id = channel_client(s, h->conn->id);
        if (id)
            json_array_append_new(a, admin_json_name(id));
    }
    return a;
}

/* Expected owners of one topic's queues: an array of client ids per queue
 * id (queues of every broker of the topic share ids in the offsets table). */
static json_t *expected_owners(struct broker *s, const char *group, const char *topic, const json_t *query)
{
    json_t *q = json_is_object(query) ? json_deep_copy(query) : json_object();
    json_t *owners = json_object(), *err = NULL;
    struct alloc_view *v = NULL;
    int st = 0;
    if (!q || !owners || json_object_set_new(q, "topic", json_string(topic)) != 0 ||
        admin_alloc_view_new(s, group, q, &v, &st, &err) != 0) {
        json_decref(err);
        json_decref(q);
        return owners; /* no live member or no such topic: no expected owner */
    }
    const struct allocate_result *r = v->result;
    for (size_t i = 0; r && i < r->n_queues; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", (int)r->queues[i].queue_id);
        json_t *list = json_object_get(owners, key);
        if (!list) {
            list = json_array();
            json_object_set_new(owners, key, list);
        }
        for (size_t k = r->owner_start[i]; list && k < r->owner_start[i + 1]; k++)
            json_array_append_new(list, admin_json_name(r->consumers[r->owners[k]]));
    }
    admin_alloc_view_free(v);
    json_decref(q);
    return owners;
}

json_t *admin_group_offsets(struct broker *s, const char *group, const json_t *query, int *status)
{
    const char *topic = json_string_value(json_object_get(query, "topic"));
    if (topic && !*topic)
        topic = NULL;
    struct rows rs = {group, topic, NULL, 0, 0, false};
    offsets_each(&s->offsets, collect, &rs);
    if (rs.oom) {
        rmq_free(rs.r);
        return NULL;
    }
    if (rs.n == 0 && !registry_group_known(&s->reg, group)) {
        rmq_free(rs.r);
        return admin_error_json(status, 404, "group not found",
                                "no consumer of this group has been seen and it "
                                "has no committed offset");
    }
    if (rs.n > 1)
        qsort(rs.r, rs.n, sizeof *rs.r, cmp_row);
    json_t *queues = json_array(), *owners = NULL;
    const char *owners_topic = NULL;
    for (size_t i = 0; queues && i < rs.n; i++) {
        const struct row *r = &rs.r[i];
        assert(r->e && (!topic || !strcmp(r->topic, topic))); /* collect kept only the asked topic */
        if (!owners_topic || strcmp(owners_topic, r->topic) != 0) {
            json_decref(owners);
            owners = expected_owners(s, group, r->topic, query);
            owners_topic = r->topic;
        }
        char key[16];
        snprintf(key, sizeof key, "%d", (int)r->qid);
        json_t *expected = json_object_get(owners, key);
        json_t *pull = pulling(s, group, r->topic, r->qid);
        const char *committer = channel_client(s, r->e->channel_id);
        json_t *holder = json_array_size(pull) ? json_incref(json_array_get(pull, 0))
                         : committer           ? admin_json_name(committer)
                                               : json_null();
        json_t *o =
            json_pack("{s:o,s:i,s:I,s:I,s:o,s:b,s:o,s:o,s:o,s:o}", "topic", admin_json_name(r->topic),
                      "queueId", (int)r->qid, "committedOffset", (json_int_t)r->e->offset, "maxOffset",
                      (json_int_t)offset_table_queue_end(s, r->topic, r->qid), "lastCommitMs",
                      r->e->updated_ms ? json_integer(r->e->updated_ms) : json_null(), "resetPending",
                      r->e->reset_pending, "expectedOwners", expected ? json_incref(expected) : json_array(),
                      "reportedHolder", holder, "pulling", pull ? pull : json_array(), "lastCommitter",
                      committer ? admin_json_name(committer) : json_null());
        if (!o || json_array_append_new(queues, o) != 0) {
            json_decref(queues);
            queues = NULL;
        }
    }
    json_decref(owners);
    rmq_free(rs.r);
    if (!queues)
        return NULL;
    *status = 200;
    json_t *reply = json_pack("{s:o,s:o,s:I}", "group", admin_json_name(group), "queues", queues, "nowMs",
                              (json_int_t)broker_now_ms(s));
    if (reply && topic)
        json_object_set_new(reply, "topic", admin_json_name(topic));
    return reply;
}

struct all_rows {
    struct row *r;
    const char **group;
    size_t n, cap;
    bool oom;
};

static void collect_all(void *ctx, const char *group, const char *topic, int32_t qid, struct offset_entry *e)
{
    struct all_rows *a = ctx;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        struct row *r = rmq_realloc(a->r, cap * sizeof *r);
        const char **g = r ? rmq_realloc(a->group, cap * sizeof *g) : NULL;
        if (r)
            a->r = r;
        if (!g) {
            a->oom = true;
            return;
        }
        a->group = g;
        a->cap = cap;
    }
    assert(a->n < a->cap); /* r and group grow together */
    a->group[a->n] = group;
    a->r[a->n++] = (struct row){topic, qid, e};
}

/* Appends one label pair name="value" (value escaped) with a leading comma unless first. */
static int label(struct buf *b, const char *name, const char *value, bool first)
{
    int rc = buf_append_str(b, first ? "" : ",");
    if (rc == 0)
        rc = buf_append_str(b, name);
    if (rc == 0)
        rc = buf_append_str(b, "=\"");
    if (rc == 0)
        rc = metrics_label_value(b, value);
    return rc ? rc : buf_append_str(b, "\"");
}

static const struct all_rows *sort_ctx;

static int cmp_all(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, k = *(const size_t *)b;
    assert(sort_ctx && i < sort_ctx->n && k < sort_ctx->n);
    int c = strcmp(sort_ctx->group[i], sort_ctx->group[k]);
    return c ? c : cmp_row(&sort_ctx->r[i], &sort_ctx->r[k]);
}

int admin_offsets_metrics(struct buf *b, struct broker *s)
{
    static const char name[] = "rmqcoord_consumer_offset";
    int rc = metrics_header(b, name, "gauge", "Committed consumer offset per group and queue");
    struct all_rows a = {0};
    offsets_each(&s->offsets, collect_all, &a);
    size_t *order = a.oom ? NULL : rmq_malloc((a.n ? a.n : 1) * sizeof *order);
    if (!order)
        rc = rc ? rc : RMQ_ENOMEM;
    for (size_t i = 0; order && i < a.n; i++)
        order[i] = i;
    if (order) {
        sort_ctx = &a; /* loop thread only: no concurrent use */
        qsort(order, a.n, sizeof *order, cmp_all);
        sort_ctx = NULL;
    }
    struct buf lab;
    buf_init(&lab, 0);
    for (size_t i = 0; order && rc == 0 && i < a.n; i++) {
        const struct row *r = &a.r[order[i]];
        const struct topic *tp = topics_get(&s->topics, r->topic);
        size_t nb = tp ? tp->nbrokers : 1;
        for (size_t k = 0; rc == 0 && k < nb; k++) {
            char q[16];
            snprintf(q, sizeof q, "%d", (int)r->qid);
            buf_reset(&lab);
            rc = label(&lab, "group", a.group[order[i]], true);
            if (rc == 0)
                rc = label(&lab, "topic", r->topic, false);
            if (rc == 0)
                rc = label(&lab, "broker", tp ? tp->brokers[k].broker_name : s->cfg->broker_name, false);
            if (rc == 0)
                rc = label(&lab, "queue", q, false);
            if (rc == 0)
                rc = buf_terminate(&lab);
            if (rc == 0)
                rc = metrics_sample(b, name, (const char *)buf_head(&lab),
                                    r->e->offset > 0 ? (uint64_t)r->e->offset : 0);
        }
    }
    buf_free(&lab);
    rmq_free(order);
    rmq_free(a.r);
    rmq_free(a.group);
    return rc;
}

/* An optional integer (into *num) or, num NULL, boolean (into *flag)
 * field: false (and a 400 in *err) when present with another type. */
static bool opt_field(const json_t *body, const char *key, int64_t *num, bool *flag, int *status,
                      json_t **err)
{
    const json_t *v = json_object_get(body, key);
    if (!v)
        return true;
    if (num ? !json_is_integer(v) : !json_is_boolean(v)) {
        char why[80];
        snprintf(why, sizeof why, "%s must be %s", key, num ? "an integer" : "true or false");
        *err = admin_error_json(status, 400, "bad body", why);
        return false;
    }
    if (num)
        *num = json_integer_value(v);
    else
        *flag = json_is_true(v);
    return true;
}

static bool opt_int(const json_t *body, const char *key, int64_t *out, int *status, json_t **err)
{
    return opt_field(body, key, out, NULL, status, err);
}

static bool opt_bool(const json_t *body, const char *key, bool *out, int *status, json_t **err)
{
    return opt_field(body, key, NULL, out, status, err);
}

/* Commits the open batch (fsynced) after a change the reply reports; a 500 on failure. */
static json_t *stored_or_error(struct broker *s, json_t *reply, int *status)
{
    if (store_commit(s->store) == 0)
        return reply;
    json_decref(reply);
    return admin_error_json(status, 500, "storage error", "the offsets could not be stored");
}

/* Offsets above this lose precision in the JavaScript of the dashboard
 * and of most JSON readers (2^53 - 1). */
#define RESET_MAX_OFFSET ((INT64_C(1) << 53) - 1)

/* A 400 for a queue id that is not one of the topic's queues (a negative
 * one used to reset every queue), an offset outside 0..RESET_MAX_OFFSET or
 * a timestamp below -1; NULL when the request may go on. */
static json_t *reset_bounds(struct broker *s, const struct admin_reset *r, const json_t *body, int *status)
{
    const struct topic *tp = topics_get(&s->topics, r->topic);
    int64_t nq = 0;
    for (size_t b = 0; tp && b < tp->nbrokers; b++)
        if (tp->brokers[b].write_queue_nums > nq)
            nq = tp->brokers[b].write_queue_nums;
    char why[200];
    if (tp && json_object_get(body, "queueId") && (r->queue_id < 0 || r->queue_id >= nq)) {
        snprintf(why, sizeof why, "queueId %lld is not a queue of topic %s (0..%lld)", (long long)r->queue_id,
                 r->topic, (long long)nq - 1);
        return admin_error_json(status, 400, "bad queueId", why);
    }
    if (json_object_get(body, "offset") && (r->offset < 0 || r->offset > RESET_MAX_OFFSET)) {
        snprintf(why, sizeof why, "offset %lld outside 0..%lld", (long long)r->offset,
                 (long long)RESET_MAX_OFFSET);
        return admin_error_json(status, 400, "bad offset", why);
    }
    if (r->timestamp < -1)
        return admin_error_json(status, 400, "bad timestamp",
                                "timestamp is milliseconds since 1970, or -1 (now)");
    return NULL;
}

json_t *admin_group_offsets_reset(struct broker *s, const char *group, const json_t *body, int *status)
{
    struct admin_reset r = {.group = group, .timestamp = -1, .queue_id = -1, .offset = -1, .force = true};
    r.topic = json_string_value(json_object_get(body, "topic"));
    json_t *err = NULL;
    if (!*group || !r.topic || !*r.topic)
        return admin_error_json(status, 400, "bad body", "expected {\"topic\": T, ...}");
    if (!opt_int(body, "timestamp", &r.timestamp, status, &err) ||
        !opt_int(body, "queueId", &r.queue_id, status, &err) ||
        !opt_int(body, "offset", &r.offset, status, &err) ||
        !opt_bool(body, "force", &r.force, status, &err) ||
        !opt_bool(body, "dryRun", &r.dry_run, status, &err))
        return err;
    if ((err = reset_bounds(s, &r, body, status)) != NULL)
        return err;
    struct admin_reset_row *rows;
    size_t n;
    int rc = admin_offset_reset(s, &r, &rows, &n);
    if (rc == RMQ_ENOTFOUND)
        return admin_error_json(status, 404, "topic not found", "no such topic");
    if (rc != 0)
        return admin_error_json(status, 500, "storage error", "the offsets could not be stored");
    json_t *queues = json_array();
    for (size_t i = 0; queues && i < n; i++)
        json_array_append_new(queues, json_pack("{s:o,s:i,s:o,s:I}", "brokerName",
                                                admin_json_name(rows[i].broker_name), "queueId",
                                                (int)rows[i].queue_id, "from",
                                                rows[i].had ? json_integer(rows[i].from) : json_null(), "to",
                                                (json_int_t)rows[i].to));
    rmq_free(rows);
    json_t *reply = queues ? json_pack("{s:o,s:o,s:b,s:o}", "group", admin_json_name(group), "topic",
                                       admin_json_name(r.topic), "dryRun", r.dry_run, "queues", queues)
                           : NULL;
    if (!reply)
        return NULL;
    *status = 200;
    if (!r.dry_run)
        log_info("offsets of %s on %s reset via the admin API", group, r.topic);
    return r.dry_run ? reply : stored_or_error(s, reply, status);
}

json_t *admin_group_offsets_clone(struct broker *s, const char *group, const json_t *body, int *status)
{
    const char *from = json_string_value(json_object_get(body, "from"));
    const char *topic = json_string_value(json_object_get(body, "topic"));
    bool dry = false;
    json_t *err = NULL;
    if (!*group || !from || !*from || (json_object_get(body, "topic") && (!topic || !*topic)))
        return admin_error_json(status, 400, "bad body", "expected {\"from\": G, \"topic\": T (optional)}");
    if (!opt_bool(body, "dryRun", &dry, status, &err))
        return err;
    if (!strcmp(from, group))
        return admin_error_json(status, 400, "bad body", "from is the group itself");
    struct rows rs = {from, topic, NULL, 0, 0, false};
    offsets_each(&s->offsets, collect, &rs);
    if (rs.oom) {
        rmq_free(rs.r);
        return NULL;
    }
    if (rs.n > 1)
        qsort(rs.r, rs.n, sizeof *rs.r, cmp_row);
    /* Copy the source values first: committing into the table may move its entries. */
    int64_t *vals = rmq_malloc((rs.n ? rs.n : 1) * sizeof *vals);
    json_t *queues = vals ? json_array() : NULL;
    for (size_t i = 0; queues && i < rs.n; i++) {
        vals[i] = rs.r[i].e->offset;
        int64_t before = 0;
        bool had = offsets_get(&s->offsets, group, rs.r[i].topic, rs.r[i].qid, &before) == 0;
        json_array_append_new(queues,
                              json_pack("{s:o,s:i,s:o,s:I}", "topic", admin_json_name(rs.r[i].topic),
                                        "queueId", (int)rs.r[i].qid, "from",
                                        had ? json_integer(before) : json_null(), "to", (json_int_t)vals[i]));
    }
    int rc = queues ? 0 : RMQ_ENOMEM;
    for (size_t i = 0; rc == 0 && !dry && i < rs.n; i++) {
        /* The topic name lives in the source's key: copy it before the table changes. */
        char *t = rmq_strdup(rs.r[i].topic);
        rc = t ? offset_table_commit(s, group, t, rs.r[i].qid, vals[i]) : RMQ_ENOMEM;
        rmq_free(t);
    }
    rmq_free(vals);
    rmq_free(rs.r);
    if (rc != 0) {
        json_decref(queues);
        return rc == RMQ_ENOMEM
                   ? NULL
                   : admin_error_json(status, 500, "storage error", "the offsets could not be stored");
    }
    json_t *reply = json_pack("{s:o,s:o,s:b,s:o}", "group", admin_json_name(group), "from",
                              admin_json_name(from), "dryRun", dry, "queues", queues);
    if (!reply)
        return NULL;
    *status = 200;
    if (!dry)
        log_info("offsets of %s cloned to %s via the admin API (%zu queue(s))", from, group,
                 json_array_size(queues));
    return dry ? reply : stored_or_error(s, reply, status);
}
