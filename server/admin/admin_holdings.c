/* admin_holdings.c — what clients really hold, checked against what they
 * should hold. The loop asks each member with GET_CONSUMER_RUNNING_INFO (307)
 * on its own channel (outbound.c: by opaque, with a timeout, never blocking),
 * parses each reply's queues (running_info_body.c), and answers the deferred
 * HTTP request once every member has answered or timed out:
 *   running-info  one client's holdings as it reports them;
 *   consistency   every client's holdings vs the expected allocation
 *                 (admin_allocation.c), with overlaps, gaps and unresponsive clients;
 *   converged     consistency every 100 ms until it holds or timeout_ms
 *                 passes (tests wait for convergence instead of sleeping);
 *   allocation    (GET /allocation without strategy) the expected allocation
 *                 under the strategy the clients report;
 *   recording     (--record-holdings-ms, no HTTP request) every period, one
 *                 round per group: each answer (or its absence) becomes a
 *                 holdings line of the trace as it arrives, the ground truth
 *                 replay compares its model with.
 * Without a strategy parameter the expected allocation uses the strategy the
 * clients report (properties.allocateMessageQueueStrategy), AVG when none
 * reports one we know. timeout_ms bounds each ask (and, for converged, the
 * whole wait). Loop thread only. */
#include "admin_holdings.h"
#include "admin_allocation.h"
#include "admin_reply.h"
#include "array.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mailbox.h"
#include "mem.h"
#include "outbound.h"
#include "parse_int.h"
#include "request_codes.h"
#include "running_info_body.h"
#include "trace_recorder.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define ASK_TIMEOUT_MS 3000       /* default wait for one client's answer */
#define ALLOC_ASK_TIMEOUT_MS 1000 /* /allocation without strategy: default wait for the strategies */
#define CONVERGE_TIMEOUT_MS 10000 /* default timeout_ms of /converged */
#define CONVERGE_POLL_MS 100
#define CONVERGE_MAX_MS 60000
#define RECORD_ASK_MAX_MS 3000 /* recording: one ask waits half the period, at most this */
#define MAX_CHECKS 8           /* HTTP checks at once: each asks every member and parses on the loop */
#define CODE_UNREADABLE (-1)   /* h->code: the body did not parse */
#define CODE_TOO_BIG (-2)      /* h->code: the body is over a running-info bound */

enum holding_state { HOLDING_PENDING, HOLDING_ANSWERED, HOLDING_SILENT };

struct holding {
    struct holdings_round *round;
    uint64_t channel_id;
    char *client_id; /* owned */
    char peer[64];
    enum holding_state state;
    int32_t code;
    char *remark; /* owned */
    struct rmq_running_info ri;
    /* Owned, or NULL (then holds() scans): ri.mqs sorted, so holds() is a binary
     * search; under --role broker each claimed queue is also judged, a scan made it quadratic. */
    const struct rmq_mq **index;
};

struct holdings_round {
    struct broker *s;        /* borrowed: timers carry only the round */
    struct mailbox_msg *msg; /* NULL for a recording round */
    int64_t asked_ms;        /* recording: wall clock of the asks, the round's name in the trace */
    char *group;             /* owned */
    char *client_id;         /* owned: running-info target, else NULL */
    struct holding *h;       /* owned */
    size_t n, pending;
    int64_t started_ms, deadline_ms; /* loop clock */
    int64_t ask_ms;                  /* timeout of one ask */
    int timer_id;
    unsigned rounds;
    struct holdings_round *next;
};

static void clear_holdings(struct holdings_round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        rmq_free(r->h[i].client_id);
        rmq_free(r->h[i].remark);
        rmq_running_info_clear(&r->h[i].ri);
        rmq_free(r->h[i].index);
    }
    rmq_free(r->h);
    r->h = NULL;
    r->n = r->pending = 0;
}

static void unlink_round(struct broker *s, struct holdings_round *r)
{
    struct holdings_round **pp = &s->rounds;
    while (*pp && *pp != r)
        pp = &(*pp)->next;
    assert(*pp == r); /* every round is linked from its start until complete() */
    if (*pp)
        *pp = r->next;
}

/* Hands the reply to the HTTP side (a recording round has none) and frees the round. */
static void complete(struct broker *s, struct holdings_round *r, int status, json_t *reply)
{
    assert(!r->msg || r->msg->status == MAILBOX_DEFERRED); /* the HTTP side waits until now */
    unlink_round(s, r);
    if (r->timer_id)
        loop_timer_cancel(s->loop, r->timer_id);
    if (!r->msg) {
        json_decref(reply);
        clear_holdings(r);
        rmq_free(r->group);
        rmq_free(r);
        return;
    }
    if (!reply)
        reply = admin_error_json(&status, 500, "internal error", "out of memory building the reply");
    r->msg->status = status;
    r->msg->reply = reply;
    mailbox_complete(r->msg);
    clear_holdings(r);
    rmq_free(r->group);
    rmq_free(r->client_id);
    rmq_free(r);
}

static json_t *mq_json(const char *topic, const char *broker, int32_t qid)
{
    return json_pack("{s:s,s:s,s:i}", "topic", topic, "brokerName", broker, "queueId", (int)qid);
}

static json_t *holding_json(const struct holding *h, const char *topic)
{
    json_t *queues = json_array();
    for (size_t i = 0; queues && i < h->ri.nmqs; i++)
        if (!topic || !strcmp(h->ri.mqs[i].topic, topic))
            json_array_append_new(
                queues, mq_json(h->ri.mqs[i].topic, h->ri.mqs[i].broker_name, h->ri.mqs[i].queue_id));
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:b,s:o}", "clientId", h->client_id, "remoteAddr", h->peer, "channelId",
                  (json_int_t)h->channel_id, "answered", h->state == HOLDING_ANSWERED, "queues", queues);
    if (o && h->state == HOLDING_ANSWERED) {
        json_object_set_new(o, "code", json_integer(h->code));
        if (h->remark)
            json_object_set_new(o, "remark", json_string(h->remark));
        if (h->code == CODE_TOO_BIG || h->code == CODE_UNREADABLE)
            json_object_set_new(o, "error", json_string(h->code == CODE_TOO_BIG ? "too big" : "unreadable"));
        if (h->ri.strategy)
            json_object_set_new(o, "strategy", json_string(h->ri.strategy));
        if (h->ri.client_version)
            json_object_set_new(o, "clientVersion", json_string(h->ri.client_version));
    }
    return o;
}

static int mq_order(const char *topic, const char *broker, int32_t qid, const struct rmq_mq *m)
{
    int c = strcmp(topic, m->topic);
    if (c == 0)
        c = strcmp(broker, m->broker_name);
    return c ? c : (qid > m->queue_id) - (qid < m->queue_id);
}

static int index_cmp(const void *a, const void *b)
{
    const struct rmq_mq *x = *(const struct rmq_mq *const *)a;
    return mq_order(x->topic, x->broker_name, x->queue_id, *(const struct rmq_mq *const *)b);
}

static int holds_cmp(const void *key, const void *elem)
{
    const struct allocate_queue *q = key;
    return mq_order(q->topic, q->broker_name, q->queue_id, *(const struct rmq_mq *const *)elem);
}

/* Sorts h's queues into h->index; without memory h->index stays NULL. */
static void build_index(struct holding *h)
{
    if (h->ri.nmqs < 2 || !(h->index = rmq_malloc(h->ri.nmqs * sizeof *h->index)))
        return;
    for (size_t i = 0; i < h->ri.nmqs; i++)
        h->index[i] = &h->ri.mqs[i];
    qsort(h->index, h->ri.nmqs, sizeof *h->index, index_cmp);
}

static bool holds(const struct holding *h, const struct allocate_queue *q)
{
    if (h->index)
        return bsearch(q, h->index, h->ri.nmqs, sizeof *h->index, holds_cmp) != NULL;
    for (size_t i = 0; i < h->ri.nmqs; i++)
        if (mq_order(q->topic, q->broker_name, q->queue_id, &h->ri.mqs[i]) == 0)
            return true;
    return false;
}

static size_t held_count(const struct holding *h, const char *topic)
{
    size_t n = 0;
    for (size_t i = 0; i < h->ri.nmqs; i++)
        n += !strcmp(h->ri.mqs[i].topic, topic);
    return n;
}

/* Whether queue q is expected for a client that did not answer. */
static bool expected_for_silent(const struct holdings_round *r, const struct allocate_result *res, size_t q)
{
    assert(q < res->n_queues);
    for (size_t k = res->owner_start[q]; k < res->owner_start[q + 1]; k++)
        for (size_t i = 0; i < r->n; i++)
            if (r->h[i].state != HOLDING_ANSWERED &&
                !strcmp(r->h[i].client_id, res->consumers[res->owners[k]]))
                return true;
    return false;
}

/* Whether client_id is one of the owners the strategy gives queue q. */
static bool expected_owner(const struct allocate_result *res, size_t q, const char *client_id)
{
    assert(q < res->n_queues && res->owner_start[q] <= res->owner_start[q + 1]);
    for (size_t k = res->owner_start[q]; k < res->owner_start[q + 1]; k++)
        if (!strcmp(res->consumers[res->owners[k]], client_id))
            return true;
    return false;
}

/* Overlaps and gaps are judged against the strategy's own result: a queue
 * held by several clients is an overlap only when one of them is not an
 * expected owner (CONFIG hands every client the same queues, broadcast
 * groups hold every queue: both intended), and a queue nobody holds is a
 * gap only when the strategy gives it to someone (CONFIG's unconfigured
 * queues, MACHINE_ROOM's other rooms are nobody's by design). */
static void judge_queues(const struct holdings_round *r, const struct allocate_result *res, json_t *overlaps,
                         json_t *gaps)
{
    for (size_t q = 0; res && q < res->n_queues; q++) {
        json_t *who = json_array();
        bool unexpected = false;
        for (size_t i = 0; i < r->n; i++)
            if (r->h[i].state == HOLDING_ANSWERED && holds(&r->h[i], &res->queues[q])) {
                json_array_append_new(who, json_string(r->h[i].client_id));
                unexpected = unexpected || !expected_owner(res, q, r->h[i].client_id);
            }
        const struct allocate_queue *mq = &res->queues[q];
        if (json_array_size(who) > 1 && unexpected)
            json_array_append_new(overlaps, json_pack("{s:o,s:O}", "queue",
                                                      mq_json(mq->topic, mq->broker_name, mq->queue_id),
                                                      "holders", who));
        else if (json_array_size(who) == 0 && allocate_result_owner_count(res, q) > 0 &&
                 !expected_for_silent(r, res, q))
            json_array_append_new(gaps, mq_json(mq->topic, mq->broker_name, mq->queue_id));
        json_decref(who);
    }
}

/* Compares holdings with the expected allocation; *converged says whether
 * at least one client answered and every answering client holds exactly
 * its queues with no overlap or gap. consistent is null when nobody
 * answered: nothing was checked. */
static json_t *evaluate(struct holdings_round *r, const struct alloc_view *v, bool *converged)
{
    const struct allocate_result *res = v->result;
    json_t *clients = json_array(), *overlaps = json_array(), *gaps = json_array(), *silent = json_array(),
           *unassigned = json_array();
    bool ok = true;
    size_t answered = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct holding *h = &r->h[i];
        json_t *o = holding_json(h, v->topic), *expected = json_array();
        size_t idx, nexp = 0;
        bool matches = h->state == HOLDING_ANSWERED && h->code == 0;
        if (res && allocate_result_find(res, h->client_id, &idx) == 0) {
            const struct allocate_assignment *as = allocate_result_queues_of(res, idx);
            nexp = allocate_result_count_of(res, idx);
            for (size_t k = 0; k < nexp; k++) {
                json_array_append_new(
                    expected, mq_json(as[k].queue.topic, as[k].queue.broker_name, as[k].queue.queue_id));
                matches = matches && holds(h, &as[k].queue);
            }
        }
        matches = matches && held_count(h, v->topic) == nexp;
        json_object_set_new(o, "expected", expected);
        json_object_set_new(o, "matches", json_boolean(matches));
        json_array_append_new(clients, o);
        if (h->state != HOLDING_ANSWERED) {
            json_array_append_new(silent, json_string(h->client_id));
        } else {
            answered++;
            ok = ok && matches;
        }
    }
    assert(answered <= r->n);
    judge_queues(r, res, overlaps, gaps);
    for (size_t i = 0; res && i < res->n_unassigned; i++) {
        const struct allocate_queue *mq = &res->queues[res->unassigned[i]];
        json_array_append_new(unassigned, mq_json(mq->topic, mq->broker_name, mq->queue_id));
    }
    ok = ok && answered > 0 && json_array_size(overlaps) == 0 && json_array_size(gaps) == 0;
    *converged = ok;
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "topic", v->topic, "strategy",
                     allocate_strategy_name(v->strategy), "messageModel",
                     v->broadcast ? "BROADCASTING" : "CLUSTERING", "clients", clients, "overlaps", overlaps,
                     "gaps", gaps, "unassigned", unassigned, "unresponsive", silent, "consistent",
                     answered ? json_boolean(ok) : json_null());
}

/* The strategy a client reports: Java's property is the strategy object's
 * toString(), "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@1b2c3d".
 * 0 with *out, or RMQ_ENOTFOUND for a strategy we do not model. */
static int reported_strategy(const char *prop, enum allocate_strategy *out)
{
    static const struct {
        const char *cls;
        enum allocate_strategy st;
    } known[] = {
        {"AllocateMessageQueueAveragely", ALLOCATE_AVG},
        {"AllocateMessageQueueAveragelyByCircle", ALLOCATE_AVG_BY_CIRCLE},
        {"AllocateMessageQueueByConfig", ALLOCATE_CONFIG},
        {"AllocateMessageQueueByMachineRoom", ALLOCATE_MACHINE_ROOM},
        {"AllocateMachineRoomNearby", ALLOCATE_MACHINE_ROOM_NEARBY},
        {"AllocateMessageQueueConsistentHash", ALLOCATE_CONSISTENT_HASH},
    };
    if (!prop)
        return RMQ_ENOTFOUND;
    if (allocate_strategy_parse(prop, out) == 0)
        return RMQ_OK;
    const char *dot = strrchr(prop, '.');
    const char *name = dot ? dot + 1 : prop;
    size_t len = strcspn(name, "@");
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strlen(known[i].cls) == len && !strncmp(known[i].cls, name, len)) {
            *out = known[i].st;
            return RMQ_OK;
        }
    return RMQ_ENOTFOUND;
}

/* The strategy to check against: the query's, else the one the first
 * answering client (in member order) reports, else AVG. *reported gets
 * {clientId: strategy name or the raw property}; *source says which. */
static enum allocate_strategy pick_strategy(const struct holdings_round *r, const json_t *query,
                                            json_t *reported, const char **source)
{
    enum allocate_strategy st = ALLOCATE_AVG, cur;
    bool found = false;
    for (size_t i = 0; i < r->n; i++) {
        const struct holding *h = &r->h[i];
        if (h->state != HOLDING_ANSWERED || !h->ri.strategy)
            continue;
        bool known = reported_strategy(h->ri.strategy, &cur) == 0;
        json_object_set_new(reported, h->client_id,
                            json_string(known ? allocate_strategy_name(cur) : h->ri.strategy));
        if (known && !found) {
            st = cur;
            found = true;
        }
    }
    const char *asked = json_string_value(json_object_get(query, "strategy"));
    if (asked && allocate_strategy_parse(asked, &cur) == 0) {
        *source = "query";
        return cur;
    }
    *source = found ? "clients" : "default";
    return st;
}

static int queue_cmp(const void *a, const void *b)
{
    const struct allocate_queue *x = a, *y = b;
    int c = strcmp(x->broker_name, y->broker_name);
    return c ? c : (x->queue_id > y->queue_id) - (x->queue_id < y->queue_id);
}

/* Queues of other brokers the answering clients hold (--role broker only).
 * A broker's topic table knows only its own queues, but clients allocate
 * over every queue of the route (all brokers). Two ways to learn the rest:
 * ask the name server for the route (GET_ROUTEINFO_BY_TOPIC over the
 * registration client), or take the queues the clients themselves report in
 * the running info this round already asked for. We take the clients':
 * no second round trip or name server dependency while the HTTP request
 * waits, and they are exactly the brokers the clients' own route held.
 * The cost: a queue of another broker that nobody holds is not seen, so it
 * cannot show as a gap here (that broker's own /consistency shows it). */
static struct allocate_queue *foreign_queues(const struct holdings_round *r, const char *topic, size_t *n)
{
    *n = 0;
    if (!r->s->breg || !topic)
        return NULL;
    size_t total = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->h[i].state == HOLDING_ANSWERED)
            total += r->h[i].ri.nmqs;
    struct allocate_queue *q = total ? rmq_malloc(total * sizeof *q) : NULL;
    for (size_t i = 0; q && i < r->n; i++)
        for (size_t k = 0; r->h[i].state == HOLDING_ANSWERED && k < r->h[i].ri.nmqs; k++)
            if (!strcmp(r->h[i].ri.mqs[k].topic, topic))
                q[(*n)++] = (struct allocate_queue){r->h[i].ri.mqs[k].topic, r->h[i].ri.mqs[k].broker_name,
                                                    r->h[i].ri.mqs[k].queue_id};
    assert(*n <= total);
    /* Several clients report the same queue: once each, as the view wants. */
    if (*n > 1)
        qsort(q, *n, sizeof *q, queue_cmp);
    size_t u = 0;
    for (size_t i = 0; i < *n; i++)
        if (u == 0 || queue_cmp(&q[u - 1], &q[i]) != 0)
            q[u++] = q[i];
    *n = u;
    return q;
}

static int ask_all(struct holdings_round *r);

static void ignore_reply(void *owner, void *ctx, const struct rmq_cmd *resp)
{
    (void)owner;
    (void)ctx;
    (void)resp;
}

static void converge_timer(struct loop *l, int id, void *ctx)
{
    (void)l;
    (void)id;
    struct holdings_round *r = ctx;
    assert(r->msg && r->msg->op == ADMIN_OP_GROUP_CONVERGED); /* only converged polls again */
    r->timer_id = 0;
    if (ask_all(r) != 0)
        complete(r->s, r, 500, NULL);
}

static json_t *running_info_reply(struct holdings_round *r, int *status)
{
    json_t *channels = json_array();
    bool any = false;
    for (size_t i = 0; i < r->n; i++) {
        json_array_append_new(channels, holding_json(&r->h[i], NULL));
        any = any || r->h[i].state == HOLDING_ANSWERED;
    }
    *status = any ? 200 : 504;
    return json_pack("{s:s,s:s,s:o,s:b}", "group", r->group, "clientId", r->client_id, "channels", channels,
                     "answered", any);
}

/* Every member has answered or timed out: reply, or (converged) try again later. */
static void finish(struct holdings_round *r)
{
    struct broker *s = r->s;
    int status = 200;
    assert(r->pending == 0); /* every ask answered or timed out */
    if (!r->msg) {
        complete(s, r, 0, NULL); /* recording: every answer is already in the trace */
        return;
    }
    if (r->msg->op == ADMIN_OP_CLIENT_RUNNING_INFO) {
        json_t *out = running_info_reply(r, &status);
        complete(s, r, status, out);
        return;
    }
    json_t *reported = json_object(), *query = json_copy(r->msg->query);
    const char *source = "default";
    enum allocate_strategy st = pick_strategy(r, r->msg->query, reported, &source);
    if (!reported || !query ||
        (!json_object_get(query, "strategy") &&
         json_object_set_new(query, "strategy", json_string(allocate_strategy_name(st))) != 0)) {
        json_decref(reported);
        json_decref(query);
        complete(s, r, 500, NULL);
        return;
    }
    size_t n_extra = 0;
    struct allocate_queue *extra =
        foreign_queues(r, json_string_value(json_object_get(r->msg->query, "topic")), &n_extra);
    struct alloc_view *v;
    json_t *error;
    if (admin_alloc_view_new_ex(s, r->group, query, extra, n_extra, &v, &status, &error) != 0) {
        rmq_free(extra);
        json_decref(reported);
        json_decref(query);
        complete(s, r, status, error);
        return;
    }
    bool converged = false;
    json_t *out = r->msg->op == ADMIN_OP_GROUP_ALLOCATION ? admin_alloc_view_json(v, r->group)
                                                          : evaluate(r, v, &converged);
    admin_alloc_view_free(v);
    rmq_free(extra);
    json_decref(query);
    if (out) {
        json_object_set_new(out, "strategySource", json_string(source));
        json_object_set(out, "reportedStrategies", reported);
    }
    json_decref(reported);
    int64_t now = loop_now_ms(s->loop);
    if (r->msg->op == ADMIN_OP_GROUP_CONVERGED) {
        if (!converged && now + CONVERGE_POLL_MS < r->deadline_ms &&
            loop_add_timer(s->loop, CONVERGE_POLL_MS, 0, converge_timer, r, &r->timer_id) == 0) {
            json_decref(out);
            clear_holdings(r);
            return;
        }
        if (out) {
            json_object_set_new(out, "converged", json_boolean(converged));
            json_object_set_new(out, "elapsedMs", json_integer(now - r->started_ms));
            json_object_set_new(out, "checks", json_integer(r->rounds));
        }
        status = converged ? 200 : 408;
    }
    complete(s, r, status, out);
}

/* Recording: h's answer (or its absence) as a holdings line, now; none for a
 * client that left (its close line says so, "no answer" would not). */
static void record_answer(struct broker *s, struct holdings_round *r, const struct holding *h)
{
    char why[48];
    const char *reason = NULL;
    assert(!r->msg && h->round == r); /* recording rounds only */
    if (h->state != HOLDING_ANSWERED) {
        const struct reg_channel *ch = registry_channel(&s->reg, h->channel_id);
        if (!ch || !ch->conn || ch->conn->closing)
            return;
        reason = "no answer";
        s->stats.holdings_unanswered++;
    } else if (h->code != 0) {
        snprintf(why, sizeof why, "code %d", (int)h->code);
        reason = h->code == CODE_UNREADABLE ? "unreadable" : h->code == CODE_TOO_BIG ? "too big" : why;
        s->stats.holdings_unanswered++;
    } else {
        s->stats.holdings_answers++;
    }
    trace_record_holdings(s->trace, broker_now_ms(s), h->channel_id, h->peer, r->group, h->client_id,
                          r->asked_ms, h->ri.mqs, h->ri.nmqs, reason);
}

/* Loop thread only, like the rest of this file: one line a second at most,
 * as a hostile member can answer every ask with an oversized or broken body. */
static struct log_limit answer_log;

static void on_reply(void *owner, void *ctx, const struct rmq_cmd *resp)
{
    struct broker *s = owner;
    struct holding *h = ctx;
    struct holdings_round *r = h->round;
    assert(h->state == HOLDING_PENDING); /* one answer or one timeout per ask */
    assert(r->pending > 0);
    if (resp) {
        h->state = HOLDING_ANSWERED;
        h->code = resp->code;
        h->remark = resp->remark ? rmq_strdup(resp->remark) : NULL;
        char err[160];
        /* The byte bound is checked here, before any scan, so a huge body
         * costs the loop nothing but its read. */
        int rc = resp->code != 0 ? 0
                 : resp->body_len > RMQ_RUNNING_INFO_MAX_BYTES
                     ? RMQ_E2BIG
                     : rmq_running_info_parse(resp->body, resp->body_len, &h->ri, err, sizeof err);
        if (rc == RMQ_E2BIG) {
            log_limited(&answer_log, loop_now_ms(s->loop), LOG_WARN,
                        "running info from %s (%s) refused: %zu bytes, over %d bytes or %d queues",
                        h->client_id, h->peer, resp->body_len, RMQ_RUNNING_INFO_MAX_BYTES,
                        RMQ_RUNNING_INFO_MAX_QUEUES);
            s->stats.holdings_too_big++;
            h->code = CODE_TOO_BIG;
        } else if (rc == 0) {
            if (r->msg) /* a recording round only writes the queues out */
                build_index(h);
        } else {
            log_limited(&answer_log, loop_now_ms(s->loop), LOG_WARN,
                        "running info from %s (%s) not understood: %s", h->client_id, h->peer, err);
            h->code = CODE_UNREADABLE;
        }
    } else {
        h->state = HOLDING_SILENT;
    }
    if (!r->msg)
        record_answer(s, r, h);
    if (--r->pending == 0)
        finish(r);
}

/* Adds one target; the caller sends later so the array never moves under a callback. */
static int add_target(struct holdings_round *r, size_t *cap, const struct mship_member *m, const char *peer)
{
    if (RMQ_GROW(r->h, *cap, r->n + 1, 8) != 0)
        return RMQ_ENOMEM;
    assert(r->n < *cap);
    struct holding *h = &r->h[r->n];
    memset(h, 0, sizeof *h);
    h->round = r;
    h->channel_id = m->channel_id;
    h->client_id = rmq_strdup(m->client_id);
    snprintf(h->peer, sizeof h->peer, "%s", peer);
    if (!h->client_id)
        return RMQ_ENOMEM;
    r->n++;
    return RMQ_OK;
}

/* One ask waits timeout_ms (default 3 s); for converged at most 3 s and
 * never past the deadline. */
static int64_t ask_timeout(const struct holdings_round *r)
{
    int64_t t = r->ask_ms;
    if (r->msg && r->msg->op == ADMIN_OP_GROUP_CONVERGED) {
        int64_t left = r->deadline_ms - loop_now_ms(r->s->loop);
        t = left < ASK_TIMEOUT_MS ? left : ASK_TIMEOUT_MS;
    }
    return t > 0 ? t : 1;
}

static int send_ask(struct holdings_round *r, struct holding *h, struct conn *c)
{
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, RMQ_REQ_GET_CONSUMER_RUNNING_INFO, 0, 0);
    int rc = rmq_cmd_ext_set(&req, "consumerGroup", r->group);
    if (rc == 0)
        rc = rmq_cmd_ext_set(&req, "clientId", h->client_id);
    if (rc == 0)
        rc = rmq_cmd_ext_set(&req, "jstackEnable", "false");
    if (rc == 0)
        rc = outbound_send(r->s, c, &req, ask_timeout(r), on_reply, h);
    rmq_cmd_clear(&req);
    return rc;
}

/* Asks every (targeted) member of the group; finishes at once when none. */
static int ask_all(struct holdings_round *r)
{
    struct broker *s = r->s;
    clear_holdings(r);
    r->rounds++;
    const struct reg_group *g = registry_group(&s->reg, r->group);
    size_t cap = 0;
    for (size_t i = 0; g && i < g->g.nmembers; i++) {
        const struct mship_member *m = &g->g.members[i];
        if (r->client_id && strcmp(m->client_id, r->client_id))
            continue;
        const struct reg_channel *ch = registry_channel(&s->reg, m->channel_id);
        if (add_target(r, &cap, m, ch ? ch->peer : "") != 0)
            return RMQ_ENOMEM;
    }
    assert(!g || r->n <= g->g.nmembers);
    r->pending = r->n + 1; /* held until every ask is out, so no callback finishes early */
    for (size_t i = 0; i < r->n; i++) {
        const struct reg_channel *ch = registry_channel(&s->reg, r->h[i].channel_id);
        if (!r->msg)
            s->stats.holdings_asks++;
        if (!ch || !ch->conn || send_ask(r, &r->h[i], ch->conn) != 0) {
            r->h[i].state = HOLDING_SILENT;
            if (!r->msg)
                record_answer(s, r, &r->h[i]);
            r->pending--;
        }
    }
    assert(r->pending >= 1); /* our own hold is still counted */
    if (--r->pending == 0)
        finish(r);
    return RMQ_OK;
}

static int64_t parse_timeout(const json_t *query, int64_t dflt, int *bad)
{
    const char *t = json_string_value(json_object_get(query, "timeout_ms"));
    *bad = 0;
    if (!t)
        return dflt;
    int64_t v;
    if (rmq_parse_i64_range(t, 0, CONVERGE_MAX_MS, &v) != 0) {
        *bad = 1;
        return 0;
    }
    return v;
}

static size_t checks_in_flight(const struct broker *s)
{
    size_t n = 0;
    for (const struct holdings_round *r = s->rounds; r; r = r->next)
        n += r->msg != NULL;
    return n;
}

bool admin_holdings_handle(struct broker *s, struct mailbox_msg *msg)
{
    const char *group = msg->arg ? msg->arg : "";
    const char *client = json_string_value(json_object_get(msg->query, "clientId"));
    const struct reg_group *g = registry_group(&s->reg, group);
    int bad = 0;
    int64_t dflt = msg->op == ADMIN_OP_GROUP_CONVERGED    ? CONVERGE_TIMEOUT_MS
                   : msg->op == ADMIN_OP_GROUP_ALLOCATION ? ALLOC_ASK_TIMEOUT_MS
                                                          : ASK_TIMEOUT_MS;
    int64_t timeout = parse_timeout(msg->query, dflt, &bad);
    if (bad) {
        msg->reply = admin_error_json(&msg->status, 400, "bad parameter", "timeout_ms must be 0 to 60000");
        return false;
    }
    if (!g) {
        msg->reply = admin_error_json(&msg->status, 404, "group not found", "the group has no live member");
        return false;
    }
    if (checks_in_flight(s) >= MAX_CHECKS) {
        s->stats.holdings_checks_refused++;
        msg->reply =
            admin_error_json(&msg->status, 429, "too many checks",
                             "8 running-info, consistency, converged or allocation checks are already "
                             "waiting for clients; retry when one has answered");
        return false;
    }
    if (msg->op == ADMIN_OP_CLIENT_RUNNING_INFO && (!client || mship_find_client(&g->g, client) < 0)) {
        msg->reply = admin_error_json(&msg->status, 404, "client not found",
                                      "no live member of the group has this id");
        return false;
    }
    struct holdings_round *r = rmq_calloc(1, sizeof *r);
    if (!r || !(r->group = rmq_strdup(group)) || (client && !(r->client_id = rmq_strdup(client)))) {
        if (r)
            rmq_free(r->group);
        rmq_free(r);
        msg->reply = NULL;
        msg->status = 500;
        return false;
    }
    r->s = s;
    r->msg = msg;
    r->started_ms = loop_now_ms(s->loop);
    r->deadline_ms = r->started_ms + timeout;
    r->ask_ms = timeout;
    r->next = s->rounds;
    s->rounds = r;
    msg->status = MAILBOX_DEFERRED;
    if (msg->op != ADMIN_OP_CLIENT_RUNNING_INFO)
        r->client_id = NULL;
    if (ask_all(r) != 0)
        complete(s, r, 500, NULL);
    return true;
}

/* Whether a recording round for group is still waiting for answers. */
static bool recording(const struct broker *s, const char *group)
{
    for (const struct holdings_round *r = s->rounds; r; r = r->next)
        if (!r->msg && !strcmp(r->group, group))
            return true;
    return false;
}

void admin_holdings_record_tick(struct broker *s)
{
    if (!s->trace)
        return;
    const char **names = hashmap_sorted_keys(&s->reg.groups); /* a fixed order: same run, same trace */
    if (!names) {
        log_warn("holdings recording: out of memory, round skipped");
        return;
    }
    int64_t period = s->cfg->record_holdings_ms, ask = period / 2;
    for (size_t i = 0; i < s->reg.groups.count; i++) {
        const struct reg_group *g = registry_group(&s->reg, names[i]);
        if (!g || g->g.nmembers == 0)
            continue;
        if (recording(s, names[i])) {
            s->stats.holdings_rounds_skipped++; /* at most one ask per member in flight */
            continue;
        }
        struct holdings_round *r = rmq_calloc(1, sizeof *r);
        if (!r || !(r->group = rmq_strdup(names[i]))) {
            rmq_free(r);
            s->stats.holdings_rounds_skipped++;
            continue;
        }
        r->s = s;
        r->started_ms = r->deadline_ms = loop_now_ms(s->loop);
        r->asked_ms = broker_now_ms(s);
        r->ask_ms = ask < 1 ? 1 : ask > RECORD_ASK_MAX_MS ? RECORD_ASK_MAX_MS : ask;
        r->next = s->rounds;
        s->rounds = r;
        if (ask_all(r) != 0)
            complete(s, r, 0, NULL);
    }
    rmq_free(names);
}

void admin_holdings_abort_all(struct broker *s)
{
    while (s->rounds) {
        struct holdings_round *r = s->rounds;
        /* Outstanding asks point into r: make their callbacks harmless first. */
        for (struct pending_req *p = pending_first(&s->outbound); p; p = p->next)
            if (p->cb == on_reply && ((struct holding *)p->ctx)->round == r)
                p->cb = ignore_reply;
        int status;
        complete(s, r, 503, admin_error_json(&status, 503, "shutting down", "the daemon is stopping"));
    }
}
