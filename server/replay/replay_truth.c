/* replay_truth.c — the recorded holdings (holdings lines, written by a
 * daemon run with --record-holdings-ms) as ground truth beside the model.
 *
 * The daemon asks every member of a group for its queues in rounds; every
 * line of a round carries the round's "asked" time. Each answer is compared
 * with the model at once (what the model has that client hold now); the
 * round as a whole is judged when the group's next round begins (or the
 * trace ends): a queue two answering clients held is a real overlap, a
 * queue of a subscribed topic that nobody held, when every member answered,
 * a real gap. Where the model and the clients differ for more than the
 * slack (real clients act a few ms after the events the model acts on at
 * once, and timers drift), the interval is flagged with its likely culprit:
 * the model (it has the client waiting for a rebalance the client had
 * already done, or an overlap or stall the clients did not have) or the
 * client (the model is up to date and the client is not). One thread; no
 * I/O.
 */
#include "replay_truth.h"

#include "array.h"
#include "err.h"
#include "mem.h"
#include "replay_out.h"
#include "replay_own.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Differences shorter than this around a sample are timing, not disagreement. */
#define TRUTH_SLACK_MS 250

/* A group's holdings round in progress. */
struct rp_tround {
    char *group; /* owned */
    int64_t asked, first_ts, last_ts;
    uint64_t seq; /* rp->truth_seq when it began */
    size_t answered, unanswered;
};

/* One queue as (topic, broker, id), borrowed strings. */
struct tq {
    const char *topic, *broker;
    int32_t qid;
};

static int cmp_tq(const void *a, const void *b)
{
    const struct tq *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    if (!c)
        c = allocate_string_compare(x->broker, y->broker);
    return c ? c : (x->qid > y->qid) - (x->qid < y->qid);
}

/* "T:broker-a:0-3,%RETRY%G:broker-a:0" of sorted queues ("-" for none). */
static void put_tqs(struct buf *o, const struct tq *v, size_t n)
{
    if (!n)
        buf_append_str(o, "-");
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j + 1 < n && v[j + 1].qid == v[j].qid + 1 && !strcmp(v[j + 1].broker, v[i].broker) &&
               !strcmp(v[j + 1].topic, v[i].topic))
            j++;
        buf_appendf(o, "%s%s:%s:%d", i ? "," : "", v[i].topic, v[i].broker, (int)v[i].qid);
        if (j > i)
            buf_appendf(o, "-%d", (int)v[j].qid);
        i = j;
    }
}

/* ---- intervals ---- */

static void tiv_clear(struct rp_tiv *t)
{
    rmq_free(t->who);
    rmq_free(t->why);
    memset(t, 0, sizeof *t);
}

/* Ends the interval in progress at end, keeping it. */
static void tivs_close(struct rp_tivs *s, int64_t end, bool open)
{
    if (!s->cur.kind)
        return;
    s->cur.end = end;
    s->cur.open = open;
    if (RMQ_GROW(s->v, s->cap, s->n + 1, 4) == 0) {
        s->v[s->n++] = s->cur;
        memset(&s->cur, 0, sizeof s->cur);
    } else {
        tiv_clear(&s->cur);
    }
    assert(s->cur.kind == 0); /* closed: none in progress, either way */
}

/* The state at a sample at ts: kind (0: none) with its text. A change of
 * kind, of blame or of what was held ends the interval in progress and
 * starts another; who/why are taken (owned) when a new interval starts,
 * else freed. */
static void tivs_sample(struct rp_tivs *s, int kind, int64_t ts, char *who, char *why, bool model)
{
    assert(kind != 0 || (!who && !why)); /* no interval, nothing to say about it */
    bool same =
        s->cur.kind == kind && s->cur.model == model && !strcmp(s->cur.who ? s->cur.who : "", who ? who : "");
    if (same && kind) {
        s->last = ts;
        rmq_free(who);
        rmq_free(why);
        return;
    }
    tivs_close(s, ts, false);
    s->last = ts;
    if (kind)
        s->cur = (struct rp_tiv){kind, ts, ts, who, why, model, false};
    else {
        rmq_free(who);
        rmq_free(why);
    }
}

static void tivs_free(struct rp_tivs *s)
{
    for (size_t i = 0; i < s->n; i++)
        tiv_clear(&s->v[i]);
    rmq_free(s->v);
    tiv_clear(&s->cur);
    memset(s, 0, sizeof *s);
}

static char *buf_take(struct buf *b)
{
    char *s = buf_terminate(b) == 0 ? rmq_strdup((const char *)buf_head(b)) : NULL;
    buf_free(b);
    return s;
}

/* ---- the model around a sample ---- */

/* Bits (1 << RP_Q_*) of the states the model had q in during [a, b]: its
 * kept intervals, then its current state. */
static unsigned model_states(const struct rp_queue *q, int64_t a, int64_t b, bool *all_overlap,
                             bool *all_stall)
{
    unsigned bits = 0;
    *all_overlap = *all_stall = false;
    if (q->since <= b) {
        bits |= 1u << q->state;
        *all_overlap = q->state == RP_Q_OVERLAP && q->since <= a;
        *all_stall = q->state == RP_Q_STALL && q->since <= a;
    }
    for (size_t i = q->niv; i-- > 0;) {
        const struct rp_interval *iv = &q->iv[i];
        if (iv->end < a)
            break; /* kept in time order */
        if (iv->start > b)
            continue;
        bits |= 1u << iv->kind;
        if (iv->start <= a && iv->end >= b) {
            *all_overlap = *all_overlap || iv->kind == RP_Q_OVERLAP;
            *all_stall = *all_stall || iv->kind == RP_Q_STALL;
        }
    }
    if (q->since > a && q->since <= b)
        bits |= 1u << RP_Q_OK; /* something else before the change; OK stands for it */
    return bits;
}

/* ---- rounds ---- */

static bool broadcasting(struct replay *rp, const char *group)
{
    for (size_t i = 0; i < rp->nviews; i++) {
        const struct reg_group *g = registry_group(&rp->views[i]->reg, group);
        if (g && g->g.message_model == RMQ_MODEL_BROADCASTING)
            return true;
    }
    return false;
}

static void begin_round(struct replay *rp, struct rp_tround *tr, const struct trace_event *ev)
{
    tr->asked = ev->asked;
    tr->first_ts = tr->last_ts = ev->ts;
    tr->seq = ++rp->truth_seq;
    tr->answered = tr->unanswered = 0;
    rp->st.holdings_rounds++;
    assert(rp->st.holdings_rounds == rp->truth_seq); /* one round per begin_round */
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        struct rp_gt *gt = e->val;
        if (strcmp(gt->group, tr->group))
            continue;
        for (size_t i = 0; i < gt->nq; i++) {
            struct rp_queue *q = gt->queues[i];
            rmq_free(q->t_model);
            q->t_model = rp_owners_string(q);
            q->t_subscribed = q->in_route && gt->nsubs > 0;
        }
    }
}

/* Labels "C<n>" first, by number, then client ids by name. */
static int cmp_label(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    bool cx = x[0] == 'C' && x[1] >= '0' && x[1] <= '9', cy = y[0] == 'C' && y[1] >= '0' && y[1] <= '9';
    if (cx != cy)
        return cx ? -1 : 1;
    if (cx && strlen(x) != strlen(y))
        return strlen(x) < strlen(y) ? -1 : 1;
    return strcmp(x, y);
}

/* Sorts the comma-separated labels of s in place. */
static void sort_labels(char *s, size_t cap)
{
    char copy[sizeof((struct rp_queue *)0)->t_who], *tok[32], *save = NULL;
    size_t n = 0;
    snprintf(copy, sizeof copy, "%s", s);
    for (char *t = strtok_r(copy, ",", &save); t && n < 32; t = strtok_r(NULL, ",", &save))
        tok[n++] = t;
    qsort(tok, n, sizeof *tok, cmp_label);
    size_t used = 0;
    s[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(s + used, cap - used, "%s%s", i ? "," : "", tok[i]);
}

/* One queue of a finished round: the real state, and whether the model agrees. */
static void judge_queue(struct replay *rp, const struct rp_tround *tr, struct rp_queue *q)
{
    uint32_t n = q->t_round == tr->seq ? q->t_n : 0;
    if (n > 1)
        sort_labels(q->t_who, sizeof q->t_who);
    const char *who = n ? q->t_who : "";
    int real = n >= 2 ? RP_T_OVERLAP : n == 0 && !tr->unanswered && q->t_subscribed ? RP_T_GAP : 0;
    tivs_sample(&q->real, real, tr->first_ts, real ? rmq_strdup(who) : NULL, NULL, false);
    bool all_ov, all_st;
    int64_t a = tr->first_ts - TRUTH_SLACK_MS, b = tr->last_ts + TRUTH_SLACK_MS;
    unsigned m = model_states(q, a, b, &all_ov, &all_st);
    if (q->owners_ms >= a && q->owners_ms <= b)
        return; /* the model moved it around the sample: timing, no verdict either way */
    const char *model = q->t_model && q->t_model[0] ? q->t_model : "nobody";
    char why[400];
    bool model_bug = false;
    int dis = RP_T_DIS_QUEUE;
    const struct rp_client *wrong = NULL; /* a holder whose own answer showed the model wrong */
    for (uint32_t i = 0; i < n && i < sizeof q->t_cl / sizeof q->t_cl[0] && !wrong; i++)
        if (q->t_cl[i] && q->t_cl[i]->t_round == tr->seq && q->t_cl[i]->t_model)
            wrong = q->t_cl[i];
    if (real == RP_T_OVERLAP && !(m & (1u << RP_Q_OVERLAP)) && wrong)
        model_bug = true,
        snprintf(why, sizeof why,
                 "model bug: %s really held it together, the model had %s: it has C%llu "
                 "elsewhere (C%llu had already rebalanced)",
                 who, model, (unsigned long long)wrong->seq, (unsigned long long)wrong->seq);
    else if (real == RP_T_OVERLAP && !(m & (1u << RP_Q_OVERLAP)))
        snprintf(why, sizeof why,
                 "client bug: %s really held it together, the model had %s: a client kept it longer than "
                 "modeled (or its behaviour is not what the model assumes)",
                 who, model);
    else if (real == RP_T_GAP && !(m & (1u << RP_Q_STALL)))
        snprintf(why, sizeof why,
                 "client bug: every member answered and nobody held it, the model had %s: a client dropped "
                 "it without a rebalance the model can see",
                 model);
    else if (all_ov && n < 2 && !tr->unanswered)
        model_bug = true, snprintf(why, sizeof why,
                                   "model bug: the model had %s on it at once, the clients had only %s: a "
                                   "modeled client let go later than the real one",
                                   model, n ? who : "nobody");
    else if (all_st && n > 0)
        model_bug = true, snprintf(why, sizeof why, "model bug: the model had nobody on it, %s held it", who);
    else
        dis = 0;
    char text[300];
    snprintf(text, sizeof text, "model=%s truth=%s", model, n ? who : "nobody");
    tivs_sample(&q->dis, dis, tr->first_ts, dis ? rmq_strdup(text) : NULL, dis ? rmq_strdup(why) : NULL,
                model_bug);
}

static void end_round(struct replay *rp, struct rp_tround *tr)
{
    if (!tr->seq || broadcasting(rp, tr->group))
        return;
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        struct rp_gt *gt = e->val;
        if (strcmp(gt->group, tr->group))
            continue;
        for (size_t i = 0; i < gt->nq; i++)
            judge_queue(rp, tr, gt->queues[i]);
    }
}

/* ---- one answer ---- */

/* What the model has c hold now, sorted. New array (rmq_free). */
static struct tq *model_queues(const struct rp_client *c, size_t *n)
{
    size_t total = 0;
    for (size_t i = 0; i < c->nholds; i++)
        total += c->holds[i].nq;
    struct tq *v = rmq_malloc((total + 1) * sizeof *v);
    *n = 0;
    for (size_t i = 0; v && i < c->nholds; i++)
        for (size_t k = 0; k < c->holds[i].nq; k++)
            v[(*n)++] = (struct tq){c->holds[i].topic, c->holds[i].q[k]->broker, c->holds[i].q[k]->qid};
    assert(!v || *n == total);
    if (v)
        qsort(v, *n, sizeof *v, cmp_tq);
    return v;
}

/* Compares c's answer with the model now; flags a difference the slack does not explain. */
static int judge_client(struct replay *rp, struct rp_client *c, const struct trace_event *ev, uint64_t round)
{
    size_t nm, nt = ev->nqueues;
    struct tq *m = model_queues(c, &nm), *t = rmq_malloc((nt + 1) * sizeof *t);
    if (!m || !t) {
        rmq_free(m);
        rmq_free(t);
        return RMQ_ENOMEM;
    }
    for (size_t i = 0; i < nt; i++)
        t[i] = (struct tq){ev->queues[i].topic, ev->queues[i].broker_name, ev->queues[i].queue_id};
    qsort(t, nt, sizeof *t, cmp_tq);
    bool same = nm == nt;
    for (size_t i = 0; same && i < nm; i++)
        same = cmp_tq(&m[i], &t[i]) == 0;
    /* The model acts on an event at once, a real client a little later;
     * timers drift: a change the model made, or will make on its timer,
     * within the slack explains the difference. */
    bool settling = rp->now - c->changed_ms <= TRUTH_SLACK_MS ||
                    (c->tick_at != RP_NO_TIME && c->tick_at - rp->now <= TRUTH_SLACK_MS);
    if (!same && settling) {
        rmq_free(m);
        rmq_free(t);
        return RMQ_OK; /* no verdict either way */
    }
    char *who = NULL, *why = NULL;
    bool model_bug = false;
    if (!same) {
        struct buf b;
        buf_init(&b, 0);
        buf_append_str(&b, "model=");
        put_tqs(&b, m, nm);
        buf_append_str(&b, " truth=");
        put_tqs(&b, t, nt);
        who = buf_take(&b);
        model_bug = rp_client_stale(rp, c);
        char w[400];
        if (model_bug)
            snprintf(w, sizeof w,
                     "model bug: C%llu had already rebalanced, the model has it waiting for its %s "
                     "(notify=%s from %s, rebalance-ms=%lld from %s)",
                     (unsigned long long)c->seq, c->deaf ? "timer" : "next rebalance",
                     c->deaf ? "ignored" : "reacts", c->notify_src, (long long)c->rebalance_ms,
                     c->period_src);
        else
            snprintf(
                w, sizeof w,
                "client bug: the model has C%llu up to date with the member list and route, the client "
                "was not (it rebalances later than modeled: notify=%s from %s, rebalance-ms=%lld from %s%s)",
                (unsigned long long)c->seq, c->deaf ? "ignored" : "reacts", c->notify_src,
                (long long)c->rebalance_ms, c->period_src,
                !c->deaf && !strcmp(c->notify_src, "default")
                    ? "; no NOTIFY in the trace showed how it acts: if it ignores them, --client "
                      "ID:notify=off"
                    : "");
        why = rmq_strdup(w);
        c->t_round = round;
        c->t_model = model_bug;
    }
    tivs_sample(&c->truth, same ? 0 : RP_T_DIS_CLIENT, ev->ts, who, why, model_bug);
    rmq_free(m);
    rmq_free(t);
    return RMQ_OK;
}

static struct rp_tround *get_round(struct replay *rp, const char *group)
{
    struct rp_tround *tr = hashmap_get_str(&rp->truth, group);
    if (tr)
        return tr;
    tr = rmq_calloc(1, sizeof *tr);
    if (!tr || !(tr->group = rmq_strdup(group)) || hashmap_put_str(&rp->truth, group, tr, NULL) != 0) {
        if (tr)
            rmq_free(tr->group);
        rmq_free(tr);
        return NULL;
    }
    return tr;
}

/* Notes that label (client c, NULL when not modeled) held q in this round. */
static void note_holder(struct rp_queue *q, uint64_t round, const char *label, struct rp_client *c)
{
    if (q->t_round != round) {
        q->t_round = round;
        q->t_n = 0;
        q->t_who[0] = '\0';
    }
    size_t used = strlen(q->t_who);
    snprintf(q->t_who + used, sizeof q->t_who - used, "%s%s", q->t_n ? "," : "", label);
    if (q->t_n < sizeof q->t_cl / sizeof q->t_cl[0])
        q->t_cl[q->t_n] = c;
    q->t_n++;
    assert(q->t_round == round && q->t_n > 0);
}

int rp_truth_feed(struct replay *rp, const struct trace_event *ev)
{
    rp->st.holdings_samples++;
    struct rp_tround *tr = get_round(rp, ev->group);
    if (!tr)
        return RMQ_ENOMEM;
    if (!tr->seq || tr->asked != ev->asked) {
        end_round(rp, tr);
        begin_round(rp, tr, ev);
    }
    tr->last_ts = ev->ts;
    if (!ev->answered) {
        rp->st.holdings_unanswered++;
        tr->unanswered++;
        return RMQ_OK;
    }
    tr->answered++;
    assert(tr->seq != 0); /* a round is in progress */
    struct rp_client *c = rp_find_client(rp, ev->conn, ev->group);
    char label[280];
    if (c)
        snprintf(label, sizeof label, "C%llu", (unsigned long long)c->seq);
    else
        snprintf(label, sizeof label, "%s", ev->client_id); /* not a member in the model */
    for (size_t i = 0; i < ev->nqueues; i++) {
        if (strlen(ev->group) + strlen(ev->queues[i].topic) > 500)
            continue; /* no group view has such names (the daemon refuses them): nothing to compare */
        struct rp_gt *gt = rp_gt_get(rp, ev->group, ev->queues[i].topic);
        struct rp_queue *q = gt ? rp_gt_queue(gt, ev->queues[i].broker_name, ev->queues[i].queue_id) : NULL;
        if (!q)
            return RMQ_ENOMEM;
        note_holder(q, tr->seq, label, c);
    }
    return c && !broadcasting(rp, ev->group) ? judge_client(rp, c, ev, tr->seq) : RMQ_OK;
}

void rp_truth_finish(struct replay *rp)
{
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&rp->truth, &b); e; e = hashmap_next(&rp->truth, e, &b))
        end_round(rp, e->val);
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        struct rp_gt *gt = e->val;
        for (size_t i = 0; i < gt->nq; i++) {
            tivs_close(&gt->queues[i]->real, gt->queues[i]->real.last, true);
            tivs_close(&gt->queues[i]->dis, gt->queues[i]->dis.last, true);
        }
    }
    for (size_t i = 0; i < rp->nall; i++)
        tivs_close(&rp->all[i]->truth, rp->all[i]->truth.last, true);
}

/* ---- the report ---- */

struct tref {
    const struct rp_tiv *t;
    const struct rp_queue *q;  /* queue intervals */
    const struct rp_client *c; /* client disagreements */
    int64_t s, e;              /* clipped to the window */
};

static const char *tref_group(const struct tref *r)
{
    return r->q ? r->q->gt->group : r->c->group;
}

static int cmp_tref(const void *a, const void *b)
{
    const struct tref *x = a, *y = b;
    int c = strcmp(tref_group(x), tref_group(y));
    if (!c)
        c = x->t->kind - y->t->kind;
    if (!c && x->q && y->q) {
        c = strcmp(x->q->gt->topic, y->q->gt->topic);
        if (!c)
            c = allocate_string_compare(x->q->broker, y->q->broker);
        if (!c)
            c = (x->q->qid > y->q->qid) - (x->q->qid < y->q->qid);
    } else if (!c && x->c && y->c) {
        c = (x->c->seq > y->c->seq) - (x->c->seq < y->c->seq);
    }
    return c ? c : (x->s > y->s) - (x->s < y->s);
}

static int push_tivs(struct replay *rp, struct tref **v, size_t *n, size_t *cap, const struct rp_tivs *s,
                     const struct rp_queue *q, const struct rp_client *c)
{
    for (size_t i = 0; i < s->n; i++) {
        int64_t st = s->v[i].start, en = s->v[i].end;
        if (rp->opt.has_from && st < rp->from_abs)
            st = rp->from_abs;
        if (rp->opt.has_to && en > rp->to_abs)
            en = rp->to_abs;
        if (en <= st || !rp_in_window(rp, st)) /* one sample at the very end: no length */
            continue;
        if (RMQ_GROW(*v, *cap, *n + 1, 16) != 0)
            return RMQ_ENOMEM;
        assert(!q != !c); /* a queue's interval or a client's, never both */
        (*v)[(*n)++] = (struct tref){&s->v[i], q, c, st, en};
    }
    return RMQ_OK;
}

static const char *kind_name(int kind)
{
    return kind == RP_T_OVERLAP ? "real-overlap" : kind == RP_T_GAP ? "real-gap" : "disagree";
}

static const char *kind_json(int kind)
{
    return kind == RP_T_OVERLAP ? "realOverlap" : kind == RP_T_GAP ? "realGap" : "disagreement";
}

static void report_one(struct replay *rp, const struct tref *r)
{
    struct buf *o = &rp->out;
    long long s = (long long)(r->s - rp->start_ms), e = (long long)(r->e - rp->start_ms);
    if (rp->opt.format == REPLAY_JSON) {
        buf_appendf(o, "{\"type\":\"%s\",\"group\":", kind_json(r->t->kind));
        rmq_json_append_string(o, tref_group(r));
        if (r->q) {
            buf_append_str(o, ",\"topic\":");
            rmq_json_append_string(o, r->q->gt->topic);
            buf_append_str(o, ",\"broker\":");
            rmq_json_append_string(o, r->q->broker);
            buf_appendf(o, ",\"queueId\":%d", (int)r->q->qid);
        } else {
            buf_appendf(o, ",\"label\":\"C%llu\",\"clientId\":", (unsigned long long)r->c->seq);
            rmq_json_append_string(o, r->c->client_id);
        }
        buf_appendf(o, ",\"from\":%lld,\"to\":%lld,\"ms\":%lld,\"open\":%s,\"%s\":", s, e, e - s,
                    r->t->open ? "true" : "false",
                    r->t->kind == RP_T_DIS_QUEUE || r->t->kind == RP_T_DIS_CLIENT ? "detail" : "holders");
        rmq_json_append_string(o, r->t->who ? r->t->who : "");
        if (r->t->why) {
            buf_appendf(o, ",\"blame\":\"%s\",\"why\":", r->t->model ? "model" : "client");
            rmq_json_append_string(o, r->t->why);
        }
        buf_append_str(o, "}\n");
        return;
    }
    buf_appendf(o, "%s %s ", kind_name(r->t->kind), tref_group(r));
    if (r->q)
        buf_appendf(o, "%s %s:%d ", r->q->gt->topic, r->q->broker, (int)r->q->qid);
    else
        buf_appendf(o, "C%llu ", (unsigned long long)r->c->seq);
    rp_out_iso(rp, o, r->s);
    buf_append_str(o, "..");
    rp_out_iso(rp, o, r->e);
    buf_appendf(o, " (+%lld..+%lld) %lldms", s, e, e - s);
    if (r->t->kind == RP_T_OVERLAP)
        buf_appendf(o, " holders=%s", r->t->who ? r->t->who : "");
    else if (r->t->kind == RP_T_GAP)
        buf_append_str(o, " nobody held it");
    else
        buf_appendf(o, " %s", r->t->who ? r->t->who : "");
    if (r->t->why)
        buf_appendf(o, ": %s", r->t->why);
    buf_append_str(o, r->t->open ? " (open at end)\n" : "\n");
}

int rp_truth_report(struct replay *rp)
{
    struct tref *v = NULL;
    size_t n = 0, cap = 0, b;
    int rc = RMQ_OK;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); rc == 0 && e;
         e = hashmap_next(&rp->gts, e, &b)) {
        const struct rp_gt *gt = e->val;
        for (size_t i = 0; rc == 0 && i < gt->nq; i++) {
            rc = push_tivs(rp, &v, &n, &cap, &gt->queues[i]->real, gt->queues[i], NULL);
            if (rc == 0)
                rc = push_tivs(rp, &v, &n, &cap, &gt->queues[i]->dis, gt->queues[i], NULL);
        }
    }
    for (size_t i = 0; rc == 0 && i < rp->nall; i++)
        rc = push_tivs(rp, &v, &n, &cap, &rp->all[i]->truth, NULL, rp->all[i]);
    if (rc != 0) {
        rmq_free(v);
        return rc;
    }
    if (v && n)
        qsort(v, n, sizeof *v, cmp_tref);
    struct replay_stats *st = &rp->st;
    if (rp->opt.format != REPLAY_JSON && st->holdings_samples)
        buf_appendf(
            &rp->out,
            "== truth (the clients' answers, %llu round(s); real-overlap: two clients held it, "
            "real-gap: every member answered and nobody held it; disagree: model and clients differ)\n",
            (unsigned long long)st->holdings_rounds);
    for (size_t i = 0; i < n; i++) {
        int64_t ms = v[i].e - v[i].s;
        int k = v[i].t->kind;
        assert(ms > 0); /* push_tivs keeps intervals of some length only */
        if (k == RP_T_OVERLAP)
            st->real_overlaps++, st->real_overlap_ms += ms;
        else if (k == RP_T_GAP)
            st->real_gaps++, st->real_gap_ms += ms;
        else {
            st->disagreements++;
            st->disagreement_ms += ms;
            *(v[i].t->model ? &st->dis_model : &st->dis_client) += 1;
        }
        report_one(rp, &v[i]);
    }
    rmq_free(v);
    return RMQ_OK;
}

static void free_round(void *p)
{
    struct rp_tround *tr = p;
    rmq_free(tr->group);
    rmq_free(tr);
}

void rp_truth_free(struct replay *rp)
{
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&rp->gts, &b); e; e = hashmap_next(&rp->gts, e, &b)) {
        struct rp_gt *gt = e->val;
        for (size_t i = 0; i < gt->nq; i++) {
            tivs_free(&gt->queues[i]->real);
            tivs_free(&gt->queues[i]->dis);
            rmq_free(gt->queues[i]->t_model);
            gt->queues[i]->t_model = NULL;
        }
    }
    for (size_t i = 0; i < rp->nall; i++)
        tivs_free(&rp->all[i]->truth);
    hashmap_free(&rp->truth, free_round);
}
