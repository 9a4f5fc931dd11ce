/* topics.c — see topics.h. Loop thread only. */
#include "topics.h"

#include "utf8.h"

#include "err.h"
#include "mem.h"
#include "rmq_body.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#ifndef NDEBUG
/* A stored topic: a valid name, 1..TOPIC_MAX_BROKERS brokers sorted by
 * name with no name twice (routes list them so), counts within limits, and
 * a cached route only with its length. */
static int topic_sanity(const struct topic *tp)
{
    assert(tp->name && topics_name_ok(tp->name));
    assert(tp->nbrokers >= 1 && tp->nbrokers <= TOPIC_MAX_BROKERS);
    for (size_t i = 0; i < tp->nbrokers; i++) {
        const struct topic_broker *b = &tp->brokers[i];
        assert(b->broker_name);
        assert(i == 0 || strcmp(tp->brokers[i - 1].broker_name, b->broker_name) < 0);
        assert(b->read_queue_nums >= 0 && b->read_queue_nums <= TOPIC_MAX_QUEUES);
        assert(b->write_queue_nums >= 0 && b->write_queue_nums <= TOPIC_MAX_QUEUES);
    }
    for (int k = 0; k < 2; k++)
        assert(tp->route_json[k] || tp->route_len[k] == 0);
    return 1;
}
#endif

void topics_init(struct topics *t)
{
    hashmap_init(&t->map);
    t->generation = 0;
}

static void free_topic(void *p)
{
    struct topic *tp = p;
    if (!tp)
        return;
    for (size_t i = 0; i < tp->nbrokers; i++)
        rmq_free(tp->brokers[i].broker_name);
    rmq_free(tp->brokers);
    rmq_free(tp->route_json[0]);
    rmq_free(tp->route_json[1]);
    rmq_free(tp->name);
    rmq_free(tp);
}

void topics_free(struct topics *t)
{
    hashmap_free(&t->map, free_topic);
}

const struct topic *topics_get(const struct topics *t, const char *name)
{
    return hashmap_get_str(&t->map, name);
}

size_t topics_count(const struct topics *t)
{
    return t->map.count;
}

bool topics_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 255)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return false;
    /* Names reach JSON (the admin API, the store's readers): bytes that are
     * not UTF-8 would make every listing that includes them unreadable; and
     * terminals and pages: a C1 control or a bidi override would let one
     * name pass for another. */
    return utf8_valid(name, n) && !utf8_has_controls(name, n);
}

static int cmp_broker(const void *a, const void *b)
{
    return strcmp(((const struct topic_broker *)a)->broker_name,
                  ((const struct topic_broker *)b)->broker_name);
}

int topics_put(struct topics *t, const char *name, const struct topic_broker *brokers, size_t n)
{
    if (!topics_name_ok(name) || n == 0 || n > TOPIC_MAX_BROKERS)
        return RMQ_EINVAL;
    for (size_t i = 0; i < n; i++) {
        const struct topic_broker *b = &brokers[i];
        if (!b->broker_name || !topics_name_ok(b->broker_name) || b->read_queue_nums < 0 ||
            b->read_queue_nums > TOPIC_MAX_QUEUES || b->write_queue_nums < 0 ||
            b->write_queue_nums > TOPIC_MAX_QUEUES || b->perm < 0 || b->perm > 15)
            return RMQ_EINVAL;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(brokers[k].broker_name, b->broker_name))
                return RMQ_EINVAL;
    }
    struct topic *tp = rmq_calloc(1, sizeof *tp);
    if (!tp)
        return RMQ_ENOMEM;
    tp->name = rmq_strdup(name);
    tp->brokers = rmq_calloc(n, sizeof *tp->brokers);
    if (!tp->name || !tp->brokers) {
        free_topic(tp);
        return RMQ_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        tp->brokers[i] = brokers[i];
        tp->brokers[i].broker_name = rmq_strdup(brokers[i].broker_name);
        if (!tp->brokers[i].broker_name) {
            tp->nbrokers = i;
            free_topic(tp);
            return RMQ_ENOMEM;
        }
    }
    tp->nbrokers = n;
    /* PROTOCOL (docs/protocol.md §3.4): routes list brokers sorted by name, as clients compare them sorted.
     */
    qsort(tp->brokers, n, sizeof *tp->brokers, cmp_broker);
    void *old = NULL;
    if (hashmap_put_str(&t->map, name, tp, &old) != 0) {
        free_topic(tp);
        return RMQ_ENOMEM;
    }
    free_topic(old);
    t->generation++;
    assert(topic_sanity(tp) && topics_get(t, name) == tp);
    return RMQ_OK;
}

int topics_delete(struct topics *t, const char *name)
{
    struct topic *tp = hashmap_remove_str(&t->map, name);
    if (!tp)
        return RMQ_ENOTFOUND;
    free_topic(tp);
    t->generation++;
    assert(!topics_get(t, name));
    return RMQ_OK;
}

/* Encodes the route afresh into out. */
static int encode_route(const struct topic *tp, const char *cluster, const char *addr, bool quoted_ids,
                        struct buf *out)
{
    struct rmq_route_broker rb[TOPIC_MAX_BROKERS];
    struct rmq_route_queue rq[TOPIC_MAX_BROKERS];
    assert(topic_sanity(tp)); /* nbrokers fits the arrays */
    for (size_t i = 0; i < tp->nbrokers; i++) {
        rb[i] = (struct rmq_route_broker){
            .broker_name = tp->brokers[i].broker_name, .cluster = cluster, .master_addr = addr};
        rq[i] = (struct rmq_route_queue){.broker_name = tp->brokers[i].broker_name,
                                         .read_queue_nums = tp->brokers[i].read_queue_nums,
                                         .write_queue_nums = tp->brokers[i].write_queue_nums,
                                         .perm = tp->brokers[i].perm,
                                         .topic_sys_flag = 0};
    }
    return rmq_route_encode(rb, tp->nbrokers, rq, tp->nbrokers, quoted_ids, out);
}

int topics_route_encode(const struct topic *tp, const char *cluster, const char *addr, bool quoted_ids,
                        struct buf *out)
{
    struct topic *mut = (struct topic *)tp; /* the cache is not part of the topic's value */
    int k = quoted_ids ? 1 : 0;
    if (!mut->route_json[k]) {
        struct buf b;
        buf_init(&b, 0);
        int rc = encode_route(tp, cluster, addr, quoted_ids, &b);
        if (rc != 0) {
            buf_free(&b);
            return rc;
        }
        assert(b.pos == 0 && buf_live(&b) > 0);
        mut->route_len[k] = buf_live(&b);
        mut->route_json[k] = (char *)b.data; /* pos is 0: nothing was consumed */
    }
    return buf_append(out, mut->route_json[k], mut->route_len[k]);
}
