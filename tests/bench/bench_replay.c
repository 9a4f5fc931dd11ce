/* bench_replay.c — offline replay throughput (`rmqcoord replay FILE`) on
 * synthetic traces of 100k and 1M events (`rmqcoord trace-gen --groups 50
 * --clients 20`), beside a baseline measured in the same run on the same
 * file.
 *
 * The figure is what replay reports on stderr ("N events in S s"): both of
 * its passes over the file (the notify pre-pass and the replay), the report
 * written to /dev/null; process start and exit are left out, as replay
 * leaves them out. The median of the runs is printed (the machine is
 * shared; the median moves less than the best), every run in a # line.
 *
 * The baseline is the I/O + memchr ceiling: read(2) of the same file in
 * 1 MiB chunks and memchr for every line end, one pass, in this process.
 * That is the least any line-by-line replay must do, so the ratio says how
 * far replay is from the cost of merely reading its input (replay reads
 * the file twice, so it cannot reach 1.0).
 *
 *   bench_replay --rmqcoord PATH [--dir DIR] [--quick]
 *
 * --quick: the 100k trace only (no 1M trace, no linearity line). Every loop
 * is bounded by a count and by a time budget; every child by a timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TARGET_EVENTS_PER_S 1000000.0
#define MAX_RUNS 9
#define CHILD_TIMEOUT_S 120.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv with stdout to out_path (or /dev/null) and stderr into err
 * (NUL-terminated, truncated to cap), killing it after timeout_s. 0 when it
 * exited with status 0. */
static int run_child(const char *const argv[], const char *out_path, char *err, size_t cap, double timeout_s)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        (void)close(pfd[0]);
        (void)close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || dup2(out, 1) < 0 || dup2(pfd[1], 2) < 0)
            _exit(126);
        (void)close(pfd[0]);
        execv(argv[0], (char *const *)(const void *)argv); /* execv does not write them */
        _exit(127);
    }
    (void)close(pfd[1]);
    size_t n = 0;
    double deadline = now_s() + timeout_s;
    bool killed = false;
    for (;;) {
        int left_ms = (int)((deadline - now_s()) * 1000);
        if (left_ms <= 0) {
            kill(pid, SIGKILL);
            killed = true;
            break;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int r = poll(&p, 1, left_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue; /* the deadline check above ends it */
        char tmp[4096];
        ssize_t k = read(pfd[0], tmp, sizeof tmp);
        if (k <= 0)
            break;
        size_t take = (size_t)k < cap - 1 - n ? (size_t)k : cap - 1 - n;
        memcpy(err + n, tmp, take);
        n += take;
    }
    err[n] = '\0';
    (void)close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (killed)
        fprintf(stderr, "bench_replay: %s timed out after %.0f s\n", argv[0], timeout_s);
    return !killed && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int gen_trace(const char *rmq, const char *path, long events)
{
    char ev[32], err[4096];
    snprintf(ev, sizeof ev, "%ld", events);
    const char *argv[] = {rmq, "trace-gen", "--groups", "50", "--clients", "20", "--events", ev, NULL};
    if (run_child(argv, path, err, sizeof err, CHILD_TIMEOUT_S) != 0) {
        fprintf(stderr, "bench_replay: trace-gen failed: %s\n", err);
        return -1;
    }
    return 0;
}

/* One replay; its own figure in *secs, *events. */
static int replay_once(const char *rmq, const char *path, double *secs, unsigned long long *events)
{
    char err[8192];
    const char *argv[] = {rmq, "replay", path, NULL};
    if (run_child(argv, NULL, err, sizeof err, CHILD_TIMEOUT_S) != 0) {
        fprintf(stderr, "bench_replay: replay failed: %s\n", err);
        return -1;
    }
    const char *p = strstr(err, " events in ");
    const char *q = p;
    while (q && q > err && q[-1] >= '0' && q[-1] <= '9')
        q--;
    if (!p || sscanf(q, "%llu events in %lf s", events, secs) != 2 || *secs <= 0) {
        fprintf(stderr, "bench_replay: no throughput line in: %s\n", err);
        return -1;
    }
    return 0;
}

/* The baseline: one read(2)+memchr pass over path. Seconds, or -1. */
static double ceiling_once(const char *path, unsigned long long *lines)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    double t0 = now_s();
    unsigned long long n = 0;
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) > 0) {
        const char *p = buf, *end = buf + k;
        while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            n++;
            p++;
        }
    }
    double t = now_s() - t0;
    (void)close(fd);
    *lines = n;
    return k < 0 ? -1 : t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct result {
    double rate, secs, ceiling_rate;
    bool ok;
};

/* Replays path up to max_runs times within budget_s (at least once), and
 * runs the ceiling as many times; prints the figure line. */
static struct result measure(const char *rmq, const char *name, const char *path, int max_runs,
                             double budget_s)
{
    struct result r = {0, 0, 0, false};
    double secs[MAX_RUNS], ceil[MAX_RUNS];
    unsigned long long events = 0, lines = 0;
    int n = 0, nc = 0;
    double t_end = now_s() + budget_s;
    char runs[512] = "";
    size_t rl = 0;
    for (int i = 0; i < max_runs && i < MAX_RUNS && (i == 0 || now_s() < t_end); i++) {
        double c = ceiling_once(path, &lines);
        if (c > 0)
            ceil[nc++] = c;
        if (replay_once(rmq, path, &secs[n], &events) != 0)
            return r;
        int w = snprintf(runs + rl, sizeof runs - rl, "%s%.0f", n ? " " : "", (double)events / secs[n]);
        if (w > 0 && (size_t)w < sizeof runs - rl)
            rl += (size_t)w;
        n++;
    }
    if (nc == 0) {
        fprintf(stderr, "bench_replay: cannot read %s\n", path);
        return r;
    }
    r.secs = median(secs, n);
    r.rate = (double)events / r.secs;
    r.ceiling_rate = (double)lines / median(ceil, nc);
    r.ok = true;
    char base[64];
    snprintf(base, sizeof base, "%.0f", r.ceiling_rate);
    char value[32], ratio[32];
    snprintf(value, sizeof value, "%.0f", r.rate);
    snprintf(ratio, sizeof ratio, "%.2fx", r.rate / r.ceiling_rate);
    printf("%-34s %12s %-12s (%s %s, %s) [target >= 1000000 events/s: %s]\n", name, value, "events/s",
           "read+memchr ceiling", base, ratio, r.rate >= TARGET_EVENTS_PER_S ? "met" : "NOT MET");
    printf("# %s: %llu events, median of %d runs (events/s each: %s)\n", name, events, n, runs);
    (void)fflush(stdout);
    return r;
}

int main(int argc, char **argv)
{
    const char *rmq = NULL, *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--rmqcoord") && i + 1 < argc)
            rmq = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else
            rmq = NULL, i = argc;
    }
    if (!rmq) {
        fputs("usage: bench_replay --rmqcoord PATH [--dir DIR] [--quick]\n", stderr);
        return 2;
    }
    char p100k[4096], p1m[4096];
    snprintf(p100k, sizeof p100k, "%s/bench_replay_100k.jsonl", dir);
    snprintf(p1m, sizeof p1m, "%s/bench_replay_1m.jsonl", dir);
    int rc = 0;
    if (gen_trace(rmq, p100k, 100000) != 0)
        return 1;
    struct result small = measure(rmq, "replay_offline_100k", p100k, quick ? 3 : 7, quick ? 3.0 : 8.0);
    rc |= !small.ok;
    if (!quick && gen_trace(rmq, p1m, 1000000) == 0) {
        struct result big = measure(rmq, "replay_offline_1m", p1m, 3, 20.0);
        rc |= !big.ok;
        if (small.ok && big.ok) {
            double lin = big.secs / (10 * small.secs);
            /* 1M time / (10 x 100k time): 1.00 is linear; the 100k trace carries the join wave of
             * all 1,000 clients, a larger share of it, so below 1 is expected. */
            printf("%-34s %12.2f %-12s (%s %s, %.2fx) [target <= 1.2 (linear): %s]\n", "replay_linearity",
                   lin, "x", "linear", "1.00", lin, lin <= 1.2 ? "met" : "NOT MET");
        }
    } else if (!quick) {
        rc = 1;
    } else {
        printf("# replay_offline_1m, replay_linearity: skipped (--quick)\n");
    }
    (void)unlink(p100k); /* best effort: they are in a scratch directory */
    (void)unlink(p1m);
    return rc;
}
