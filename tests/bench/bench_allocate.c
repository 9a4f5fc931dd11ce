/* bench_allocate.c — whole-group allocation (allocate_group) over the grid
 * Kafka's assignor benchmarks use: members {100, 1,000, 10,000} x queues per
 * member {1, 10}, plus 1,000 x 4,096 (the point of earlier runs), for each
 * of the six strategies.
 *
 * Every figure starts from shuffled lists, as a registry hands them over, so
 * it includes sorting the consumer ids and the queues. A figure is the median
 * of several allocate_group() calls, bounded in count and time.
 *
 * The baseline is measured in the same run on the same inputs:
 *   - up to 1,000 members: what a server gets by replaying the clients —
 *     sort once, then one allocate_one() per consumer on the sorted lists
 *     (each call rebuilds what its strategy derives from the whole lists, the
 *     hash ring included). When that would exceed the budget, an evenly
 *     spread sample of consumers is timed and scaled to all of them (the
 *     per-consumer cost does not depend on the index), said on a '#' line;
 *   - at 10,000 members the replay would take minutes, so the baseline is
 *     the part no allocation can skip: libc qsort of copies of the same
 *     shuffled lists with plain byte comparators (strcmp on ids; topic,
 *     broker name, queue id on queues). A ratio under 1 means the whole
 *     allocation costs less than sorting its inputs the ordinary way.
 *
 * Output, one line per figure, in scripts/bench's format (ratio = figure /
 * baseline, so lower is better):
 *   allocate_group_<S>_<M>x<Q>  <ms> ms (<baseline> <ms> ms, <ratio>x) [target]
 * where M is members and Q the total queue count. Targets (issue 7): AVG and
 * AVG_BY_CIRCLE at 10,000 x 100,000 < 20 ms, CONSISTENT_HASH at 1,000 x
 * 4,096 < 10 ms.
 *
 * Usage: bench_allocate [--quick] [--only STRATEGY] [--point MxQ] [--reps N]
 *                       [--no-baseline]
 * --point and --only narrow the run (e.g. for callgrind); --reps caps the
 * repetitions (1 for profiling).
 */
#include "allocate.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Limits of one run mode. Every loop stops at max_reps or when its budget is
 * spent (after at least min_reps), and the whole run falls back to single
 * repetitions once total_s has passed, so the run stays bounded however slow
 * the machine is. */
struct limits {
    int min_reps, max_reps;
    double group_budget_s; /* per figure */
    double base_budget_s;  /* per baseline */
    double total_s;
};

static const struct limits quick_limits = {3, 5, 0.15, 0.1, 8.0};
static const struct limits full_limits = {5, 15, 1.0, 0.5, 50.0};

static struct limits lim;
static double run_start;
static int hurry; /* total_s passed: one repetition per figure from now on */

static int reps_done(int reps, double elapsed, double budget)
{
    if (reps >= lim.max_reps)
        return 1;
    if (hurry || now_s() - run_start > lim.total_s) {
        hurry = 1;
        return reps >= 1;
    }
    return reps >= lim.min_reps && elapsed >= budget;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_REPS 64

struct fixture {
    size_t nc, nq;
    char (*cid_buf)[48];
    char (*broker_buf)[48];
    const char **cids;
    struct allocate_queue *queues;
    const char *idcs[2];
};

static unsigned long long rng = 88172645463325252ull;
static size_t rnd_below(size_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (size_t)(rng % n);
}

#define N_BROKERS 16

/* One topic on 16 brokers. Broker names "R<k>@broker-<i>-R<k>" serve both
 * MACHINE_ROOM (room@name) and the NEARBY room rule; client ids
 * ("10.a.b.c@pid-R<k>") end in a room too. Queues share their topic and
 * broker strings, as the daemon's route does. Both lists are shuffled. */
static int fixture_init(struct fixture *f, size_t nc, size_t nq)
{
    f->nc = nc, f->nq = nq;
    f->cid_buf = rmq_malloc(nc * sizeof *f->cid_buf);
    f->broker_buf = rmq_malloc(N_BROKERS * sizeof *f->broker_buf);
    f->cids = rmq_malloc(nc * sizeof *f->cids);
    f->queues = rmq_malloc(nq * sizeof *f->queues);
    if (!f->cid_buf || !f->broker_buf || !f->cids || !f->queues)
        return -1;
    for (size_t b = 0; b < N_BROKERS; b++)
        snprintf(f->broker_buf[b], sizeof f->broker_buf[b], "R%zu@broker-%zu-R%zu", b % 4, b, b % 4);
    for (size_t i = 0; i < nq; i++)
        f->queues[i] =
            (struct allocate_queue){"BenchTopic", f->broker_buf[i % N_BROKERS], (int32_t)(i / N_BROKERS)};
    for (size_t j = 0; j < nc; j++) {
        snprintf(f->cid_buf[j], sizeof f->cid_buf[j], "10.%zu.%zu.%zu@%zu-R%zu", j / 65536 % 256,
                 j / 256 % 256, j % 256, 1000 + j * 7, j % 3);
        f->cids[j] = f->cid_buf[j];
    }
    for (size_t i = nc; i > 1; i--) {
        size_t k = rnd_below(i);
        const char *t = f->cids[i - 1];
        f->cids[i - 1] = f->cids[k], f->cids[k] = t;
    }
    for (size_t i = nq; i > 1; i--) {
        size_t k = rnd_below(i);
        struct allocate_queue t = f->queues[i - 1];
        f->queues[i - 1] = f->queues[k], f->queues[k] = t;
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

static long minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_minflt;
}

/* What the first call of a figure cost, beside the median: the first call
 * faults in the result's pages (about 10 us each on this kind of VM), later
 * ones get them back from the allocator. */
struct first_call {
    double s;
    long faults, median_faults;
};

/* Median seconds of allocate_group() on the shuffled lists. */
static double time_group(const struct allocate_options *o, const struct fixture *f, struct first_call *first)
{
    struct allocate_input in = {f->queues, f->nq, f->cids, f->nc};
    double t[MAX_REPS], faults[MAX_REPS], spent = 0;
    int reps = 0;
    do {
        struct allocate_result *r;
        char err[200];
        long f0 = minor_faults();
        double t0 = now_s();
        if (allocate_group(o, &in, &r, err, sizeof err)) {
            fprintf(stderr, "allocate_group: %s\n", err);
            exit(1);
        }
        allocate_result_free(r);
        t[reps] = now_s() - t0;
        faults[reps] = (double)(minor_faults() - f0);
        spent += t[reps++];
    } while (!reps_done(reps, spent, lim.group_budget_s));
    first->s = t[0];
    first->faults = (long)faults[0];
    first->median_faults = (long)median(faults, reps);
    return median(t, reps);
}

/* One client-style recompute of all consumers: one sort, then allocate_one
 * per consumer, stopping after budget_s. Returns the time scaled to all
 * consumers; *sampled gets how many were run. */
static double recompute_once(const struct allocate_options *o, const struct fixture *f, double budget_s,
                             size_t *sampled)
{
    double t0 = now_s();
    struct allocate_queue *q = rmq_malloc(f->nq * sizeof *q);
    const char **c = rmq_malloc(f->nc * sizeof *c);
    if (!q || !c) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memcpy(q, f->queues, f->nq * sizeof *q);
    memcpy((void *)c, f->cids, f->nc * sizeof *c);
    allocate_sort_queues(q, f->nq);
    allocate_sort_consumers(c, f->nc);
    double sort_s = now_s() - t0;
    struct allocate_input sorted = {q, f->nq, c, f->nc};
    /* A stride order spreads a partial sample over the whole list. */
    size_t stride = 97 % f->nc ? 97 : 89, done = 0;
    double t1 = now_s(), calls_s = 0;
    for (size_t k = 0; k < f->nc; k++) {
        struct allocate_queue *res;
        size_t n;
        char err[200];
        if (allocate_one(o, &sorted, c[(k * stride) % f->nc], &res, &n, err, sizeof err)) {
            fprintf(stderr, "allocate_one: %s\n", err);
            exit(1);
        }
        rmq_free(res);
        done++;
        calls_s = now_s() - t1;
        if (calls_s > budget_s)
            break;
    }
    rmq_free(q);
    rmq_free((void *)c);
    *sampled = done;
    return sort_s + calls_s * (double)f->nc / (double)done;
}

/* The per-consumer baseline: the median of whole passes while they fit the
 * budget, else one sampled pass. */
static double time_recompute(const struct allocate_options *o, const struct fixture *f, size_t *sampled)
{
    double t[MAX_REPS], spent = 0;
    int reps = 0;
    do {
        double t0 = now_s();
        t[reps++] = recompute_once(o, f, lim.base_budget_s, sampled);
        spent += now_s() - t0;
        if (*sampled < f->nc)
            return t[0];
    } while (!reps_done(reps, spent, lim.base_budget_s));
    return median(t, reps);
}

static int queue_bytes_cmp(const void *a, const void *b)
{
    const struct allocate_queue *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    if (!c)
        c = strcmp(x->broker_name, y->broker_name);
    return c ? c : (x->queue_id > y->queue_id) - (x->queue_id < y->queue_id);
}

static int cid_bytes_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Median seconds of copying and qsorting both lists with byte comparators. */
static double time_qsort(const struct fixture *f)
{
    struct allocate_queue *q = rmq_malloc(f->nq * sizeof *q);
    const char **c = rmq_malloc(f->nc * sizeof *c);
    if (!q || !c) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    double t[MAX_REPS], spent = 0;
    int reps = 0;
    do {
        double t0 = now_s();
        memcpy(q, f->queues, f->nq * sizeof *q);
        memcpy((void *)c, f->cids, f->nc * sizeof *c);
        qsort(q, f->nq, sizeof *q, queue_bytes_cmp);
        qsort((void *)c, f->nc, sizeof *c, cid_bytes_cmp);
        t[reps] = now_s() - t0;
        spent += t[reps++];
    } while (!reps_done(reps, spent, lim.base_budget_s));
    rmq_free(q);
    rmq_free((void *)c);
    return median(t, reps);
}

struct point {
    size_t members, queues;
};

/* Kafka's grid (members x queues per member 1 and 10), then 1,000 x 4,096. */
static const struct point points[] = {
    {100, 100}, {100, 1000}, {1000, 1000}, {1000, 10000}, {10000, 10000}, {10000, 100000}, {1000, 4096},
};
#define N_POINTS (sizeof points / sizeof points[0])
/* Up to this many members the baseline is the per-consumer recompute. */
#define RECOMPUTE_MAX_MEMBERS 1000

/* The targets, in ms; 0 = none. */
static double target_ms(enum allocate_strategy s, struct point p)
{
    if ((s == ALLOCATE_AVG || s == ALLOCATE_AVG_BY_CIRCLE) && p.members == 10000 && p.queues == 100000)
        return 20;
    if (s == ALLOCATE_CONSISTENT_HASH && p.members == 1000 && p.queues == 4096)
        return 10;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_allocate [--quick] [--only STRATEGY] [--point MxQ] [--reps N] "
                    "[--no-baseline]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int only = -1, no_baseline = 0, max_reps = 0;
    struct point one = {0, 0};
    lim = full_limits;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            lim = quick_limits;
        } else if (!strcmp(argv[i], "--no-baseline")) {
            no_baseline = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            enum allocate_strategy s;
            if (allocate_strategy_parse(argv[++i], &s))
                usage();
            only = (int)s;
        } else if (!strcmp(argv[i], "--point") && i + 1 < argc) {
            if (sscanf(argv[++i], "%zux%zu", &one.members, &one.queues) != 2 || !one.members || !one.queues)
                usage();
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            max_reps = atoi(argv[++i]);
            if (max_reps < 1 || max_reps > MAX_REPS)
                usage();
        } else {
            usage();
        }
    }
    if (max_reps) {
        lim.max_reps = max_reps;
        if (lim.min_reps > max_reps)
            lim.min_reps = max_reps;
    }
    run_start = now_s();
    printf("# allocate: median of %d-%d allocate_group calls per figure, shuffled inputs, sort included; "
           "baseline: per-consumer allocate_one recompute up to %d members, libc qsort of the same lists "
           "above\n",
           lim.min_reps, lim.max_reps, RECOMPUTE_MAX_MEMBERS);
    size_t n_pts = one.members ? 1 : N_POINTS;
    for (size_t pi = 0; pi < n_pts; pi++) {
        struct point p = one.members ? one : points[pi];
        struct fixture f;
        if (fixture_init(&f, p.members, p.queues)) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        double qsort_s = -1; /* measured once per point, shared by the strategies */
        for (int s = 0; s < ALLOCATE_STRATEGY_COUNT; s++) {
            if (only >= 0 && s != only)
                continue;
            struct allocate_options o;
            options_for(&o, (enum allocate_strategy)s, &f);
            const char *sname = allocate_strategy_name(o.strategy);
            struct first_call first;
            double g = time_group(&o, &f, &first), b = 0;
            const char *blabel = "none";
            if (!no_baseline && p.members <= RECOMPUTE_MAX_MEMBERS) {
                size_t sampled;
                b = time_recompute(&o, &f, &sampled);
                blabel = "per-consumer recompute";
                if (sampled < f.nc)
                    printf("# allocate_group_%s_%zux%zu: baseline scaled from %zu of %zu consumers\n", sname,
                           p.members, p.queues, sampled, f.nc);
            } else if (!no_baseline) {
                if (qsort_s < 0)
                    qsort_s = time_qsort(&f);
                b = qsort_s;
                blabel = "qsort of inputs";
            }
            char name[96], target[64] = "";
            snprintf(name, sizeof name, "allocate_group_%s_%zux%zu", sname, p.members, p.queues);
            double t_ms = target_ms(o.strategy, p);
            if (t_ms > 0)
                snprintf(target, sizeof target, " [target < %.0f ms: %s]", t_ms,
                         g * 1e3 < t_ms ? "met" : "NOT MET");
            char ratio[32] = "n/a";
            if (b > 0)
                snprintf(ratio, sizeof ratio, "%.3gx", g / b);
            printf("%-48s %10.3f %-3s (%s %.3f ms, %s)%s\n", name, g * 1e3, "ms", blabel, b * 1e3, ratio,
                   target);
            if (t_ms > 0)
                printf("# %s: first call %.3f ms with %ld page faults; median call %ld faults\n", name,
                       first.s * 1e3, first.faults, first.median_faults);
            fflush(stdout);
        }
        fixture_free(&f);
    }
    if (hurry)
        printf("# allocate: the run passed %.0f s; later figures used a single repetition\n", lim.total_s);
    printf("# allocate: %.1f s\n", now_s() - run_start);
    return 0;
}
