/* bench_store.c — baseline for the store's group commit: member heartbeats
 * per second when committed in batches of 1, 100 and 1000.
 *
 * Usage: bench_store [DIR] [HEARTBEATS]. Creates a fresh database in DIR (a
 * new temporary directory by default, removed afterwards), opens 1000
 * channels with one member each, then times store_member_heartbeat calls
 * with a store_commit after every batch. Prints one line per batch size.
 * Not a test: numbers depend on the disk (each commit is one fsync).
 */
#include "err.h"
#include "store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MEMBERS 1000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int check(int rc, const struct store *s, const char *what)
{
    if (rc != 0)
        fprintf(stderr, "%s: %s (%s)\n", what, rmq_strerror(rc), s ? store_errmsg(s) : "");
    return rc;
}

static int populate(struct store *s)
{
    if (check(store_put_group(s, "bench", "PUSH", "CLUSTERING", "LAST", 1), s, "put group"))
        return -1;
    for (int64_t i = 1; i <= BENCH_MEMBERS; i++) {
        char client[32];
        snprintf(client, sizeof client, "client-%lld", (long long)i);
        if (check(store_open_channel(s, i, "127.0.0.1:1", 1), s, "open channel") ||
            check(store_member_join(s, "bench", i, client, 1), s, "join"))
            return -1;
    }
    return check(store_commit(s), s, "commit");
}

/* Returns heartbeats per second for total heartbeats committed every batch. */
static double run(struct store *s, long total, long batch, int64_t *clock_ms)
{
    double t0 = now_s();
    for (long i = 0; i < total; i++) {
        int64_t ch = 1 + i % BENCH_MEMBERS;
        if (check(store_member_heartbeat(s, "bench", ch, ++*clock_ms), s, "heartbeat"))
            return -1;
        if ((i + 1) % batch == 0 && check(store_commit(s), s, "commit"))
            return -1;
    }
    if (check(store_commit(s), s, "commit"))
        return -1;
    return (double)total / (now_s() - t0);
}

int main(int argc, char **argv)
{
    char tmpl[] = "/tmp/bench_store.XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpl);
    long total = argc > 2 ? atol(argv[2]) : 20000;
    if (!dir || total <= 0) {
        fprintf(stderr, "usage: %s [DIR] [HEARTBEATS]\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.db", dir);
    struct store *s = NULL;
    char err[256];
    if (store_open(path, &s, err, sizeof err) != 0) {
        fprintf(stderr, "store_open: %s\n", err);
        return 1;
    }
    int status = populate(s) ? 1 : 0;
    int64_t clock_ms = 1;
    const long batches[] = {1, 100, 1000};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0] && !status; i++) {
        /* batch 1 pays one fsync per heartbeat: cap it so a slow disk finishes */
        long n = batches[i] == 1 && total > 2000 ? 2000 : total;
        double rate = run(s, n, batches[i], &clock_ms);
        if (rate < 0)
            status = 1;
        else
            printf("batch %4ld: %10.0f heartbeats/s (%ld heartbeats)\n", batches[i], rate, n);
    }
    store_close(s);
    if (argc <= 1) {
        const char *suffix[] = {"", "-wal", "-shm"};
        for (size_t i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "%s/bench.db%s", dir, suffix[i]);
            unlink(path);
        }
        rmdir(dir);
    }
    return status;
}
