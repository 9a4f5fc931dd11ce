/* allocate.c — public entry points of the allocation engine (see allocate.h):
 * strategy names, option and input checks, allocate_one(). The Java
 * orderings are in allocate_order.c, allocate_group() and its owners view in
 * allocate_group.c, and the strategy math in allocate_plan.c, so that both
 * entry points share one implementation and can only differ in what they
 * are given. Pure; any thread.
 */
#include "allocate.h"

#include "allocate_internal.h"
#include "err.h"
#include "mem.h"

#include <string.h>

static const char *const strategy_names[ALLOCATE_STRATEGY_COUNT] = {
    "AVG", "AVG_BY_CIRCLE", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH",
};

const char *allocate_strategy_name(enum allocate_strategy s)
{
    return (unsigned)s < ALLOCATE_STRATEGY_COUNT ? strategy_names[s] : "?";
}

int allocate_strategy_parse(const char *name, enum allocate_strategy *out)
{
    for (unsigned i = 0; name && i < ALLOCATE_STRATEGY_COUNT; i++) {
        if (!strcmp(name, strategy_names[i])) {
            *out = (enum allocate_strategy)i;
            return 0;
        }
    }
    return RMQ_EINVAL;
}

void allocate_options_init(struct allocate_options *opt, enum allocate_strategy strategy)
{
    memset(opt, 0, sizeof *opt);
    opt->strategy = strategy;
    opt->virtual_nodes = ALLOCATE_DEFAULT_VIRTUAL_NODES;
    opt->inner = ALLOCATE_AVG;
}

const char *allocate_room_by_rule(const char *name)
{
    const char *dash = name ? strrchr(name, '-') : NULL;
    return dash && dash[1] ? dash + 1 : NULL;
}

/* ---- checks ---------------------------------------------------------- */

int allocate_queues_check(const struct allocate_queue *q, size_t n, const char *what, char *err,
                          size_t err_len)
{
    if (n && !q)
        return allocate_fail(err, err_len, RMQ_EINVAL, "%s: NULL array", what);
    for (size_t i = 0; i < n; i++)
        if (!q[i].topic || !q[i].broker_name)
            return allocate_fail(err, err_len, RMQ_EINVAL, "%s[%zu]: NULL topic or broker name", what, i);
    return 0;
}

int allocate_strings_check(const char *const *v, size_t n, const char *what, char *err, size_t err_len)
{
    if (n && !v)
        return allocate_fail(err, err_len, RMQ_EINVAL, "%s: NULL array", what);
    for (size_t i = 0; i < n; i++)
        if (!v[i])
            return allocate_fail(err, err_len, RMQ_EINVAL, "%s[%zu] is NULL", what, i);
    return 0;
}

static int rooms_check(const struct allocate_room *m, size_t n, const char *what, char *err, size_t err_len)
{
    if (n && !m)
        return allocate_fail(err, err_len, RMQ_EINVAL, "%s: NULL array", what);
    for (size_t i = 0; i < n; i++)
        if (!m[i].name)
            return allocate_fail(err, err_len, RMQ_EINVAL, "%s[%zu]: NULL name", what, i);
    return 0;
}

/* The options on their own: what Java constructors and setters reject
 * before any allocate() call. */
int allocate_options_check(const struct allocate_options *opt, char *err, size_t err_len)
{
    switch (opt->strategy) {
    case ALLOCATE_AVG:
    case ALLOCATE_AVG_BY_CIRCLE: return 0;
    case ALLOCATE_CONFIG: return allocate_queues_check(opt->config, opt->n_config, "config", err, err_len);
    case ALLOCATE_MACHINE_ROOM:
        return allocate_strings_check(opt->idcs, opt->n_idcs, "consumerIdcs", err, err_len);
    case ALLOCATE_MACHINE_ROOM_NEARBY:
        if (opt->inner != ALLOCATE_AVG && opt->inner != ALLOCATE_AVG_BY_CIRCLE)
            return allocate_fail(err, err_len, RMQ_EINVAL,
                                 "inner strategy must be AVG or AVG_BY_CIRCLE, not %s",
                                 allocate_strategy_name(opt->inner));
        if (opt->rooms_by_rule)
            return 0;
        if (rooms_check(opt->broker_rooms, opt->n_broker_rooms, "brokerRooms", err, err_len))
            return RMQ_EINVAL;
        return rooms_check(opt->consumer_rooms, opt->n_consumer_rooms, "consumerRooms", err, err_len);
    case ALLOCATE_CONSISTENT_HASH:
        /* PROTOCOL: docs/protocol.md §11.8 a negative virtual node count throws. */
        if (opt->virtual_nodes < 0)
            return allocate_fail(err, err_len, RMQ_EINVAL, "virtualNodes must not be negative (got %ld)",
                                 opt->virtual_nodes);
        return 0;
    default: return allocate_fail(err, err_len, RMQ_EINVAL, "unknown strategy %d", (int)opt->strategy);
    }
}

/* PROTOCOL: docs/protocol.md §11.2 check(): both lists non-empty (current_cid is checked by
 * the caller, before these, as Java does). */
int allocate_input_check(const struct allocate_input *in, char *err, size_t err_len)
{
    int rc = allocate_queues_check(in->queues, in->n_queues, "queues", err, err_len);
    if (!rc)
        rc = allocate_strings_check(in->consumers, in->n_consumers, "consumers", err, err_len);
    if (rc)
        return rc;
    if (!in->n_queues)
        return allocate_fail(err, err_len, RMQ_EINVAL, "queue list (mqAll) is empty");
    if (!in->n_consumers)
        return allocate_fail(err, err_len, RMQ_EINVAL, "consumer list (cidAll) is empty");
    return 0;
}

/* ---- per consumer ---------------------------------------------------- */

/* New copy of the queue array (at least one slot, so never NULL on success). */
static struct allocate_queue *queues_dup(const struct allocate_queue *q, size_t n)
{
    struct allocate_queue *d = rmq_malloc((n ? n : 1) * sizeof *d);
    if (d && n)
        memcpy(d, q, n * sizeof *d);
    return d;
}

int allocate_one(const struct allocate_options *opt, const struct allocate_input *in, const char *current_cid,
                 struct allocate_queue **out, size_t *n_out, char *err, size_t err_len)
{
    *out = NULL;
    *n_out = 0;
    if (err && err_len)
        err[0] = 0;
    int rc = allocate_options_check(opt, err, err_len);
    if (rc)
        return rc;
    if (opt->strategy == ALLOCATE_CONFIG) {
        /* PROTOCOL: docs/protocol.md §11.5 ByConfig returns its list as-is, with no check. */
        *out = queues_dup(opt->config, opt->n_config);
        if (!*out)
            return allocate_fail(err, err_len, RMQ_ENOMEM, "out of memory");
        *n_out = opt->n_config;
        return 0;
    }
    if (!current_cid || !*current_cid)
        return allocate_fail(err, err_len, RMQ_EINVAL, "current consumer id is empty");
    rc = allocate_input_check(in, err, err_len);
    if (rc)
        return rc;
    struct allocate_queue *res = rmq_malloc(in->n_queues * sizeof *res);
    size_t *pos = rmq_malloc(in->n_queues * sizeof *pos);
    struct allocate_plan plan;
    if (!res || !pos) {
        rc = allocate_fail(err, err_len, RMQ_ENOMEM, "out of memory");
        goto fail;
    }
    size_t idx = 0;
    while (idx < in->n_consumers && strcmp(in->consumers[idx], current_cid))
        idx++;
    if (idx == in->n_consumers) {
        /* PROTOCOL: docs/protocol.md §11.2 not in cidAll: an empty result, not an error. */
        rmq_free(pos);
        *out = res;
        return 0;
    }
    rc = allocate_plan_init(&plan, opt, in, NULL, err, err_len);
    if (rc)
        goto fail;
    size_t n = allocate_plan_emit(&plan, idx, pos);
    for (size_t k = 0; k < n; k++)
        res[k] = in->queues[pos[k]];
    allocate_plan_free(&plan);
    rmq_free(pos);
    *out = res;
    *n_out = n;
    return 0;
fail:
    rmq_free(pos);
    rmq_free(res);
    return rc;
}
