/* allocate_check.c — the checks of the allocation inputs and options (see
 * allocate_check.h): what the Java constructors and setters reject, and the
 * NULL arrays and strings C adds. */
#include "allocate_check.h"

#include "allocate_options.h"
#include "err.h"

#include <string.h>

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
