/* allocate_plan.c — the strategy math shared by allocate_one() and
 * allocate_group() (see allocate_plan.h): the AVG / AVG_BY_CIRCLE slice
 * formulas, the MACHINE_ROOM broker filter, the MACHINE_ROOM_NEARBY room
 * grouping and the CONSISTENT_HASH ring owners, each written from
 * docs/protocol.md §11.3–11.8. Pure; any thread.
 */
#include "allocate_plan.h"

#include "allocate_order.h"
#include "allocate_room.h"
#include "array.h"
#include "err.h"
#include "hash_ring.h"
#include "mem.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* An arithmetic progression of list positions: start + k * step, k < count. */
struct span {
    size_t start, count, step;
};

/* The positions consumer index i of c gets out of n under AVG or
 * AVG_BY_CIRCLE. */
static struct span share(enum allocate_strategy s, size_t n, size_t c, size_t i)
{
    struct span sp = {i, 0, c};
    assert(c > 0 && i < c);
    if (s == ALLOCATE_AVG_BY_CIRCLE) {
        /* PROTOCOL: docs/protocol.md §11.4 every k >= i with k % c == i. */
        sp.count = i < n ? (n - i + c - 1) / c : 0;
        assert(sp.count == 0 || sp.start + (sp.count - 1) * sp.step < n);
        return sp;
    }
    /* PROTOCOL: docs/protocol.md §11.3 the first n % c consumers take one extra queue. */
    size_t mod = n % c;
    int extra = mod > 0 && i < mod;
    size_t avg = n <= c ? 1 : (extra ? n / c + 1 : n / c);
    sp.start = extra ? i * avg : i * avg + mod;
    sp.step = 1;
    if (sp.start < n)
        sp.count = avg < n - sp.start ? avg : n - sp.start;
    assert(sp.count == 0 || sp.start + (sp.count - 1) * sp.step < n); /* the span stays in the list */
    return sp;
}

/* Appends the span's elements of base (or the positions themselves when base
 * is NULL) to out; returns the new count. */
static size_t put_span(struct span sp, const size_t *base, size_t *out, size_t k)
{
    for (size_t t = 0; t < sp.count; t++) {
        size_t p = sp.start + t * sp.step;
        out[k++] = base ? base[p] : p;
    }
    return k;
}

/* Stable counting sort: list gets the items 0..n-1 grouped by key[item]
 * (SIZE_MAX = left out), start[g] .. start[g + 1] delimiting group g.
 * start has n_keys + 1 zeroed entries. Returns how many were placed. */
static size_t bucket_fill(const size_t *key, size_t n, size_t n_keys, size_t *start, size_t *list)
{
    for (size_t i = 0; i < n; i++)
        if (key[i] != SIZE_MAX)
            start[key[i] + 1]++;
    for (size_t g = 0; g < n_keys; g++)
        start[g + 1] += start[g];
    for (size_t i = 0; i < n; i++)
        if (key[i] != SIZE_MAX)
            list[start[key[i]]++] = i;
    /* Each start[g] now holds the end of group g: shift back by one. */
    memmove(start + 1, start, n_keys * sizeof *start);
    start[0] = 0;
#ifndef NDEBUG
    for (size_t g = 0; g < n_keys; g++)
        assert(start[g] <= start[g + 1]);
#endif
    assert(start[n_keys] <= n);
    return start[n_keys];
}

/* ---- consumer first occurrences -------------------------------------- */

/* first[j] = index of the first consumer with the same string as j (Java
 * List.indexOf). Sorting keeps it O(c log c) for unsorted lists. */
static int first_occurrence(const char *const *cids, size_t n, size_t *first)
{
    struct rmq_str_pos *r = rmq_malloc(n * sizeof *r);
    if (!r)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < n; i++)
        r[i] = (struct rmq_str_pos){cids[i], i};
    qsort(r, n, sizeof *r, rmq_str_pos_cmp);
    size_t head = 0;
    for (size_t k = 0; k < n; k++) {
        if (k && strcmp(r[k].s, r[k - 1].s))
            head = k;
        first[r[k].pos] = r[head].pos;
        assert(first[r[k].pos] <= r[k].pos); /* stable sort: the head is the earliest */
    }
    rmq_free(r);
    return 0;
}

/* ---- MACHINE_ROOM ---------------------------------------------------- */

/* Compares the len-byte room prefix with the NUL-terminated idc, as strcmp
 * would compare the prefix as a string. */
static int room_prefix_cmp(const char *room, size_t len, const char *idc)
{
    int c = strncmp(room, idc, len);
    return c ? c : -(idc[len] != 0);
}

/* PROTOCOL: docs/protocol.md §11.6 keep "room@name" brokers whose room is in consumeridcs.
 * Java's split("@") drops trailing empty parts, so "hz@b@" still has two
 * parts while "hz@@b" has three and "@b" has the empty room. */
static int idcs_keep(const char **idcs, size_t n, const char *broker)
{
    size_t len = strlen(broker);
    while (len > 0 && broker[len - 1] == '@')
        len--;
    const char *at = len ? memchr(broker, '@', len) : NULL;
    if (!at || memchr(at + 1, '@', len - (size_t)(at + 1 - broker)))
        return 0;
    size_t room_len = (size_t)(at - broker);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = room_prefix_cmp(broker, room_len, idcs[mid]);
        if (!c)
            return 1;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 0;
}

static int plan_machine_room(struct allocate_plan *p, const struct allocate_options *opt,
                             const struct allocate_input *in)
{
    const char **idcs = rmq_malloc(opt->n_idcs * sizeof *idcs);
    p->list = rmq_malloc(in->n_queues * sizeof *p->list);
    if (!idcs || !p->list) {
        rmq_free(idcs);
        return RMQ_ENOMEM;
    }
    if (opt->n_idcs)
        memcpy(idcs, opt->idcs, opt->n_idcs * sizeof *idcs);
    qsort(idcs, opt->n_idcs, sizeof *idcs, rmq_strp_cmp);
    for (size_t q = 0; q < in->n_queues; q++)
        if (idcs_keep(idcs, opt->n_idcs, in->queues[q].broker_name))
            p->list[p->n_list++] = q;
    rmq_free(idcs);
    return 0;
}

/* ---- MACHINE_ROOM_NEARBY: room resolution ---------------------------- */

/* A name -> room map, sorted by name, last entry kept for repeated names. */
struct room_index {
    const struct allocate_room **v;
    size_t n;
};

static int room_ptr_cmp(const void *a, const void *b)
{
    const struct allocate_room *x = *(const struct allocate_room *const *)a;
    const struct allocate_room *y = *(const struct allocate_room *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x > y) - (x < y); /* same array: later entry sorts last */
}

static int room_index_init(struct room_index *ix, const struct allocate_room *m, size_t n)
{
    ix->n = 0;
    ix->v = rmq_malloc(n * sizeof *ix->v);
    if (!ix->v)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < n; i++)
        ix->v[i] = &m[i];
    qsort(ix->v, n, sizeof *ix->v, room_ptr_cmp);
    for (size_t i = 0; i < n; i++) {
        if (ix->n && !strcmp(ix->v[ix->n - 1]->name, ix->v[i]->name))
            ix->n--; /* a map put: the later entry replaces the earlier */
        ix->v[ix->n++] = ix->v[i];
    }
    return 0;
}

static const char *room_index_get(const struct room_index *ix, const char *name)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, ix->v[mid]->name);
        if (!c)
            return ix->v[mid]->room;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

struct room_rec {
    const char *room;
    size_t item; /* queue index, or n_queues + consumer index */
};

static int room_rec_cmp(const void *a, const void *b)
{
    return allocate_string_compare(((const struct room_rec *)a)->room, ((const struct room_rec *)b)->room);
}

/* Looks every room up (queues first, then consumers: the order Java resolves
 * and so the order its first exception names) into recs. */
static int rooms_lookup(const struct allocate_options *opt, const struct allocate_input *in,
                        struct room_rec *recs, char *err, size_t err_len)
{
    struct room_index bi = {0}, ci = {0};
    int rc = 0;
    if (!opt->rooms_by_rule && (room_index_init(&bi, opt->broker_rooms, opt->n_broker_rooms) ||
                                room_index_init(&ci, opt->consumer_rooms, opt->n_consumer_rooms))) {
        rc = allocate_fail(err, err_len, RMQ_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < in->n_queues + in->n_consumers; k++) {
        int is_q = k < in->n_queues;
        const char *name = is_q ? in->queues[k].broker_name : in->consumers[k - in->n_queues];
        const char *room =
            opt->rooms_by_rule ? allocate_room_by_rule(name) : room_index_get(is_q ? &bi : &ci, name);
        /* PROTOCOL: docs/protocol.md §11.7 a null or empty room is an IllegalArgumentException. */
        if (!room || !*room) {
            const struct allocate_queue *q = &in->queues[is_q ? k : 0];
            rc = is_q ? allocate_fail(err, err_len, RMQ_EINVAL,
                                      "no machine room for queue MessageQueue [topic=%s, brokerName=%s, "
                                      "queueId=%d]",
                                      q->topic, q->broker_name, (int)q->queue_id)
                      : allocate_fail(err, err_len, RMQ_EINVAL, "no machine room for consumer id %s", name);
            goto out;
        }
        recs[k] = (struct room_rec){room, k};
    }
out:
    rmq_free(bi.v);
    rmq_free(ci.v);
    return rc;
}

/* Groups queues and consumers by room, rooms numbered in sorted order (the
 * Java TreeMap), list order kept inside each room. */
static int plan_nearby(struct allocate_plan *p, const struct allocate_options *opt,
                       const struct allocate_input *in, char *err, size_t err_len)
{
    size_t nq = in->n_queues, nc = in->n_consumers, total = nq + nc;
    struct room_rec *recs = rmq_malloc(total * sizeof *recs);
    size_t *room_of = rmq_malloc(total * sizeof *room_of);
    int rc = RMQ_ENOMEM;
    if (!recs || !room_of)
        goto out;
    rc = rooms_lookup(opt, in, recs, err, err_len);
    if (rc)
        goto out;
    qsort(recs, total, sizeof *recs, room_rec_cmp);
    for (size_t k = 0; k < total; k++) {
        if (k && allocate_string_compare(recs[k].room, recs[k - 1].room))
            p->n_rooms++;
        room_of[recs[k].item] = p->n_rooms;
    }
    p->n_rooms++;
    rc = RMQ_ENOMEM;
    p->list = rmq_malloc(nq * sizeof *p->list);
    p->group_start = rmq_calloc(p->n_rooms + 1, sizeof *p->group_start);
    p->c_room = rmq_malloc(nc * sizeof *p->c_room);
    p->pos_in_room = rmq_malloc(nc * sizeof *p->pos_in_room);
    p->room_consumers = rmq_calloc(p->n_rooms, sizeof *p->room_consumers);
    p->orphans = rmq_malloc(p->n_rooms * sizeof *p->orphans);
    if (!p->list || !p->group_start || !p->c_room || !p->pos_in_room || !p->room_consumers || !p->orphans)
        goto out;
    /* The room grouping keeps mqAll order within each room. */
    p->n_list = bucket_fill(room_of, nq, p->n_rooms, p->group_start, p->list);
    for (size_t j = 0; j < nc; j++) {
        p->c_room[j] = room_of[nq + j];
        p->pos_in_room[j] = p->room_consumers[p->c_room[j]]++;
    }
    for (size_t r = 0; r < p->n_rooms; r++)
        if (!p->room_consumers[r] && p->group_start[r + 1] > p->group_start[r])
            p->orphans[p->n_orphans++] = r;
    rc = 0;
out:
    if (rc == RMQ_ENOMEM)
        allocate_fail(err, err_len, rc, "out of memory");
    rmq_free(recs);
    rmq_free(room_of);
    return rc;
}

/* ---- CONSISTENT_HASH ------------------------------------------------- */

static int same_str(const char *a, const char *b)
{
    return a == b || !strcmp(a, b);
}

/* Writes v in decimal, then ']', at p; returns the length. */
static size_t put_queue_id(char *p, int32_t v)
{
    char tmp[16];
    size_t n = 0, k = 0;
    int64_t x = v;
    if (x < 0) {
        p[k++] = '-';
        x = -x;
    }
    do {
        tmp[n++] = (char)('0' + x % 10);
        x /= 10;
    } while (x);
    while (n)
        p[k++] = tmp[--n];
    p[k++] = ']';
    return k;
}

/* hash(mq.toString()) of every queue, the key the ring routes it by. The
 * text up to the queue id is shared by all queues of a broker, and a sorted
 * list has them next to each other, so the MD5 state after that prefix
 * (usually a whole block of it) is kept and only the id is hashed per
 * queue. */
static void queue_hashes(const struct allocate_queue *q, size_t n, size_t *out)
{
    struct md5_ctx prefix;
    const char *topic = NULL, *broker = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!topic || !same_str(q[i].topic, topic) || !same_str(q[i].broker_name, broker)) {
            topic = q[i].topic, broker = q[i].broker_name;
            /* PROTOCOL: docs/protocol.md §11.1 MessageQueue.toString(). */
            static const char p1[] = "MessageQueue [topic=", p2[] = ", brokerName=", p3[] = ", queueId=";
            md5_init(&prefix);
            md5_update(&prefix, p1, sizeof p1 - 1);
            md5_update(&prefix, topic, strlen(topic));
            md5_update(&prefix, p2, sizeof p2 - 1);
            md5_update(&prefix, broker, strlen(broker));
            md5_update(&prefix, p3, sizeof p3 - 1);
        }
        struct md5_ctx c = prefix;
        char id[16];
        md5_update(&c, id, put_queue_id(id, q[i].queue_id));
        out[i] = hash_ring_hash_final(&c);
    }
}

/* Builds the ring (cidAll order, ids = first occurrences) and groups the
 * queues by owner. An empty ring (0 virtual nodes) leaves every queue
 * without owner. */
static int plan_consistent_hash(struct allocate_plan *p, long vnodes, const struct allocate_input *in,
                                char *err, size_t err_len)
{
    size_t nq = in->n_queues, nc = in->n_consumers;
    if (vnodes > 0 && (size_t)vnodes > HASH_RING_MAX_VNODES / nc)
        return allocate_fail(err, err_len, RMQ_E2BIG,
                             "hash ring too large: %zu consumers x %ld virtual nodes", nc, vnodes);
    struct hash_ring *ring = NULL;
    size_t *owner = rmq_malloc(nq * sizeof *owner); /* first each queue's hash, then its owner */
    p->list = rmq_malloc(nq * sizeof *p->list);
    p->group_start = rmq_calloc(nc + 1, sizeof *p->group_start);
    int rc = RMQ_ENOMEM;
    if (!owner || !p->list || !p->group_start)
        goto out;
    rc = hash_ring_new(&ring, nc, nc * (size_t)vnodes);
    for (size_t j = 0; !rc && j < nc; j++)
        rc = hash_ring_add(ring, in->consumers[j], p->first[j], vnodes);
    if (!rc)
        rc = hash_ring_seal(ring);
    if (rc)
        goto out;
    queue_hashes(in->queues, nq, owner);
    for (size_t q = 0; q < nq; q++) {
        /* PROTOCOL: docs/protocol.md §11.8 owner = first ring key >= hash, wrapping around. */
        if (hash_ring_lookup(ring, (uint32_t)owner[q], &owner[q]))
            owner[q] = SIZE_MAX; /* empty ring: nobody */
    }
    p->n_list = bucket_fill(owner, nq, nc, p->group_start, p->list);
    rc = 0;
out:
    if (rc)
        allocate_fail(err, err_len, rc, "%s", rc == RMQ_E2BIG ? "hash ring too large" : "out of memory");
    hash_ring_free(ring);
    rmq_free(owner);
    return rc;
}

/* ---- plan ------------------------------------------------------------ */

#ifndef NDEBUG
/* What emit relies on: every index within the lists, groups delimiting
 * list in order, each consumer's room and place in it counted, orphan
 * rooms sorted and without consumers. O(queues + consumers + rooms). */
static int plan_sanity(const struct allocate_plan *p)
{
    assert(p->n_list <= p->n_queues && (p->list || p->n_list == 0));
    for (size_t t = 0; t < p->n_list; t++)
        assert(p->list[t] < p->n_queues);
    if (p->first)
        for (size_t j = 0; j < p->n_consumers; j++)
            assert(p->first[j] <= j && p->first[p->first[j]] == p->first[j]);
    size_t groups = p->strategy == ALLOCATE_MACHINE_ROOM_NEARBY ? p->n_rooms
                    : p->strategy == ALLOCATE_CONSISTENT_HASH   ? p->n_consumers
                                                                : 0;
    if (groups) {
        assert(p->group_start[0] == 0 && p->group_start[groups] == p->n_list);
        for (size_t g = 0; g < groups; g++)
            assert(p->group_start[g] <= p->group_start[g + 1]);
    }
    if (p->strategy == ALLOCATE_MACHINE_ROOM_NEARBY) {
        for (size_t j = 0; j < p->n_consumers; j++)
            assert(p->c_room[j] < p->n_rooms && p->pos_in_room[j] < p->room_consumers[p->c_room[j]]);
        for (size_t o = 0; o < p->n_orphans; o++)
            assert(p->orphans[o] < p->n_rooms && p->room_consumers[p->orphans[o]] == 0 &&
                   (o == 0 || p->orphans[o - 1] < p->orphans[o]));
    }
    return 1;
}
#endif

int allocate_plan_init(struct allocate_plan *plan, const struct allocate_options *opt,
                       const struct allocate_input *in, const size_t *first, char *err, size_t err_len)
{
    memset(plan, 0, sizeof *plan);
    plan->strategy = opt->strategy;
    plan->inner = opt->inner;
    plan->n_queues = in->n_queues;
    plan->n_consumers = in->n_consumers;
    int rc = 0;
    if (opt->strategy == ALLOCATE_CONSISTENT_HASH && first) {
        plan->first = first;
    } else if (opt->strategy == ALLOCATE_CONSISTENT_HASH) {
        /* Only the ring needs every consumer's identity; the other
         * strategies use the caller's (first-occurrence) index alone. */
        plan->first_own = rmq_malloc(in->n_consumers * sizeof *plan->first_own);
        rc = plan->first_own ? first_occurrence(in->consumers, in->n_consumers, plan->first_own) : RMQ_ENOMEM;
        if (rc) {
            allocate_plan_free(plan);
            return allocate_fail(err, err_len, rc, "out of memory");
        }
        plan->first = plan->first_own;
    }
    switch (opt->strategy) {
    case ALLOCATE_MACHINE_ROOM:
        rc = plan_machine_room(plan, opt, in);
        if (rc)
            allocate_fail(err, err_len, rc, "out of memory");
        break;
    case ALLOCATE_MACHINE_ROOM_NEARBY: rc = plan_nearby(plan, opt, in, err, err_len); break;
    case ALLOCATE_CONSISTENT_HASH:
        rc = plan_consistent_hash(plan, opt->virtual_nodes, in, err, err_len);
        break;
    default: break;
    }
    if (rc)
        allocate_plan_free(plan);
    assert(rc || plan_sanity(plan));
    return rc;
}

size_t allocate_plan_emit(const struct allocate_plan *p, size_t idx, size_t *out)
{
    size_t k = 0, c = p->n_consumers;
    assert(idx < c); /* a first-occurrence index into cidAll */
    switch (p->strategy) {
    case ALLOCATE_AVG:
    case ALLOCATE_AVG_BY_CIRCLE: return put_span(share(p->strategy, p->n_queues, c, idx), NULL, out, 0);
    case ALLOCATE_MACHINE_ROOM: {
        /* PROTOCOL: docs/protocol.md §11.6 mod·i … mod·i+mod−1, plus i + mod·c when rem > i. */
        size_t mod = p->n_list / c, rem = p->n_list % c;
        for (size_t t = 0; t < mod; t++)
            out[k++] = p->list[mod * idx + t];
        if (rem > idx)
            out[k++] = p->list[idx + mod * c];
        assert(k <= p->n_queues);
        return k;
    }
    case ALLOCATE_MACHINE_ROOM_NEARBY: {
        /* PROTOCOL: docs/protocol.md §11.7 own room among its consumers first, then each room
         * without consumers among everybody, rooms in sorted order. */
        size_t r = p->c_room[idx], lo = p->group_start[r], n = p->group_start[r + 1] - lo;
        if (n)
            k = put_span(share(p->inner, n, p->room_consumers[r], p->pos_in_room[idx]), p->list + lo, out, k);
        for (size_t o = 0; o < p->n_orphans; o++) {
            r = p->orphans[o];
            lo = p->group_start[r];
            n = p->group_start[r + 1] - lo;
            k = put_span(share(p->inner, n, c, idx), p->list + lo, out, k);
        }
        assert(k <= p->n_queues); /* each queue is in one room: out has room for all */
        return k;
    }
    case ALLOCATE_CONSISTENT_HASH:
        for (size_t t = p->group_start[idx]; t < p->group_start[idx + 1]; t++)
            out[k++] = p->list[t];
        return k;
    default: return 0;
    }
}

void allocate_plan_free(struct allocate_plan *plan)
{
    rmq_free(plan->first_own);
    rmq_free(plan->list);
    rmq_free(plan->group_start);
    rmq_free(plan->c_room);
    rmq_free(plan->pos_in_room);
    rmq_free(plan->room_consumers);
    rmq_free(plan->orphans);
    memset(plan, 0, sizeof *plan);
}
