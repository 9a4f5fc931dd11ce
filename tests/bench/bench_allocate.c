/* bench_allocate.c — whole-group allocation against the client's way.
 *
 * For 1,000 consumers x 4,096 queues and each strategy, times
 * allocate_group() (sort once, plan once, slice per consumer) against the
 * baseline a server would get by replaying the clients: sort once, then one
 * allocate_one() per consumer on the full sorted lists (each call rebuilds
 * what its strategy derives from the whole lists, the hash ring included).
 * Prints one line per figure:
 *   allocate_group_<STRATEGY> <ms> ms (baseline <ms> ms, <ratio>x)
 * Time is bounded: the baseline of a slow strategy is measured on an evenly
 * spread sample of consumers within a budget and scaled to all of them (the
 * per-consumer cost does not depend on the index), which a '#' line reports.
 * Usage: bench_allocate [consumers] [queues]
 */
#include "allocate.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUDGET_S 2.0 /* per baseline */
#define MIN_GROUP_S 0.2

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct fixture {
    size_t nc, nq;
    char (*cid_buf)[48];
    char (*broker_buf)[48];
    const char **cids;
    struct allocate_queue *queues;
    const char *idcs[2];
};

/* Broker names "R<k>@broker-<i>-R<k>" serve both MACHINE_ROOM (room@name)
 * and the NEARBY room rule; client ids end in "-R<k>" too. Lists are
 * shuffled the way a registry would hand them over. */
static int fixture_init(struct fixture *f, size_t nc, size_t nq)
{
    size_t nb = 16;
    f->nc = nc, f->nq = nq;
    f->cid_buf = rmq_malloc(nc * sizeof *f->cid_buf);
    f->broker_buf = rmq_malloc(nb * sizeof *f->broker_buf);
    f->cids = rmq_malloc(nc * sizeof *f->cids);
    f->queues = rmq_malloc(nq * sizeof *f->queues);
    if (!f->cid_buf || !f->broker_buf || !f->cids || !f->queues)
        return -1;
    for (size_t b = 0; b < nb; b++)
        snprintf(f->broker_buf[b], sizeof f->broker_buf[b], "R%zu@broker-%zu-R%zu", b % 4, b, b % 4);
    for (size_t i = 0; i < nq; i++)
        f->queues[i] = (struct allocate_queue){"BenchTopic", f->broker_buf[i % nb], (int32_t)(i / nb)};
    for (size_t j = 0; j < nc; j++) {
        snprintf(f->cid_buf[j], sizeof f->cid_buf[j], "10.%zu.%zu.%zu@%zu-R%zu", j / 65536 % 256,
                 j / 256 % 256, j % 256, 1000 + j * 7, j % 3);
        f->cids[j] = f->cid_buf[j];
    }
    unsigned long long s = 88172645463325252ull;
    for (size_t i = nc; i > 1; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        size_t k = (size_t)(s % i);
        const char *t = f->cids[i - 1];
        f->cids[i - 1] = f->cids[k], f->cids[k] = t;
    }
    f->idcs[0] = "R1", f->idcs[1] = "R2";
    return 0;
}

static void fixture_free(struct fixture *f)
{
    rmq_free(f->cid_buf);
    rmq_free(f->broker_buf);
    rmq_free((void *)f->cids);
    rmq_free(f->queues);
}

static void options_for(struct allocate_options *o, enum allocate_strategy s, const struct fixture *f)
{
    allocate_options_init(o, s);
    o->config = f->queues, o->n_config = 8;
    o->idcs = f->idcs, o->n_idcs = 2;
    o->rooms_by_rule = 1;
}

/* Mean seconds per allocate_group() call, over at least MIN_GROUP_S. */
static double time_group(const struct allocate_options *o, const struct allocate_input *in, size_t *assigned)
{
    int reps = 0;
    double t0 = now_s(), t;
    do {
        struct allocate_result *r;
        char err[200];
        if (allocate_group(o, in, &r, err, sizeof err)) {
            fprintf(stderr, "allocate_group: %s\n", err);
            exit(1);
        }
        *assigned = r->n_assigned;
        allocate_result_free(r);
        reps++;
        t = now_s() - t0;
    } while (t < MIN_GROUP_S || reps < 3);
    return t / reps;
}

/* Seconds for the client-style recompute of all consumers: one sort, then
 * allocate_one per consumer; *sampled gets how many were actually run. */
static double time_baseline(const struct allocate_options *o, const struct fixture *f, size_t *sampled)
{
    double t0 = now_s();
    struct allocate_queue *q = rmq_malloc(f->nq * sizeof *q);
    const char **c = rmq_malloc(f->nc * sizeof *c);
    if (!q || !c)
        exit(1);
    memcpy(q, f->queues, f->nq * sizeof *q);
    memcpy((void *)c, f->cids, f->nc * sizeof *c);
    allocate_sort_queues(q, f->nq);
    allocate_sort_consumers(c, f->nc);
    double sort_s = now_s() - t0;
    struct allocate_input sorted = {q, f->nq, c, f->nc};
    /* Visit consumers in a stride order so that a sample is spread out. */
    size_t stride = 97 % f->nc ? 97 : 89, done = 0;
    double t1 = now_s(), calls_s = 0;
    for (size_t k = 0; k < f->nc; k++) {
        struct allocate_queue *res;
        size_t n;
        if (allocate_one(o, &sorted, c[(k * stride) % f->nc], &res, &n, NULL, 0))
            exit(1);
        rmq_free(res);
        done++;
        calls_s = now_s() - t1;
        if (calls_s > BUDGET_S)
            break;
    }
    rmq_free(q);
    rmq_free((void *)c);
    *sampled = done;
    return sort_s + calls_s * (double)f->nc / (double)done;
}

int main(int argc, char **argv)
{
    size_t nc = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000,
           nq = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096;
    if (!nc || !nq) {
        fprintf(stderr, "usage: bench_allocate [consumers] [queues]\n");
        return 2;
    }
    struct fixture f;
    if (fixture_init(&f, nc, nq)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    printf("# %zu consumers x %zu queues, whole group vs per-consumer recompute\n", nc, nq);
    struct allocate_input in = {f.queues, nq, f.cids, nc};
    for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
        struct allocate_options o;
        size_t assigned, sampled;
        options_for(&o, (enum allocate_strategy)s, &f);
        double g = time_group(&o, &in, &assigned);
        double b = time_baseline(&o, &f, &sampled);
        if (sampled < nc)
            printf("# %s baseline scaled from %zu of %zu consumers\n", allocate_strategy_name(o.strategy),
                   sampled, nc);
        printf("allocate_group_%s %.3f ms (baseline %.3f ms, %.1fx)\n", allocate_strategy_name(o.strategy),
               g * 1e3, b * 1e3, b / g);
        fflush(stdout);
    }
    fixture_free(&f);
    return 0;
}
