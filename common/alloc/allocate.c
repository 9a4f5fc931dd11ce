/* allocate.c — allocate_one(), one consumer's queues (see allocate.h). The
 * strategy names and defaults are in allocate_options.c, the option and
 * input checks in allocate_check.c, the Java orderings in allocate_order.c,
 * allocate_group() and its owners view in allocate_group.c, and the strategy
 * math in allocate_plan.c, so that both
 * entry points share one implementation and can only differ in what they
 * are given. Pure; any thread.
 */
#include "allocate.h"

#include "allocate_check.h"
#include "allocate_plan.h"
#include "err.h"
#include "mem.h"

#include <string.h>

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
