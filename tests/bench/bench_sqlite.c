/* bench_sqlite.c — the SQLite ceiling for the heartbeat benchmark: the rows
 * a re-heartbeat writes, upserted through server/store/store.h into the same
 * schema in a tight loop, with no sockets, parsing or registry.
 *
 * Per heartbeat the daemon calls store_member_heartbeat once per group it
 * names and store_put_client once (server.c hook_heartbeat, h_client.c);
 * this does exactly that for CLIENTS clients x GROUPS groups, committing
 * every BATCH heartbeats as the daemon commits once per loop iteration.
 * Bounded by time (-d) and by count (-n).
 * Usage: bench_sqlite [-c clients] [-g groups] [-b batch] [-d secs] [-n max] DIR
 * Prints "RESULT mode=sqlite rate=<heartbeats/s> batch=<b> commits=<n> ...".
 */
#include "err.h"
#include "store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int check(int rc, const struct store *s, const char *what)
{
    if (rc != 0)
        fprintf(stderr, "bench_sqlite: %s: %s (%s)\n", what, rmq_strerror(rc), s ? store_errmsg(s) : "");
    return rc;
}

/* Creates the groups, channels and live memberships a joined load has. */
static int populate(struct store *s, int clients, int groups, int64_t now)
{
    char name[64];
    for (int g = 0; g < groups; g++) {
        snprintf(name, sizeof name, "G%d", g);
        if (check(
                store_put_group(s, name, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", now),
                s, "put group"))
            return RMQ_EIO;
    }
    for (int c = 1; c <= clients; c++) {
        char cid[64];
        snprintf(cid, sizeof cid, "127.0.0.1@b-%d", c);
        if (check(store_open_channel(s, c, "127.0.0.1:1", now), s, "open channel") ||
            check(store_put_client(s, cid, "JAVA", 409, now), s, "put client"))
            return RMQ_EIO;
        for (int g = 0; g < groups; g++) {
            snprintf(name, sizeof name, "G%d", g);
            if (check(store_member_join(s, name, c, cid, now), s, "join"))
                return RMQ_EIO;
        }
    }
    return check(store_commit(s), s, "commit");
}

int main(int argc, char **argv)
{
    int clients = 1000, groups = 10;
    long batch = 100, max = 10000000;
    double secs = 5;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        const char *v = argv[i + 1];
        switch (argv[i][1]) {
        case 'c': clients = atoi(v); break;
        case 'g': groups = atoi(v); break;
        case 'b': batch = atol(v); break;
        case 'd': secs = atof(v); break;
        case 'n': max = atol(v); break;
        default: i = argc; break;
        }
    }
    if (i != argc - 1 || clients < 1 || groups < 1 || batch < 1 || secs <= 0 || secs > 600 || max < 1) {
        fprintf(stderr, "usage: bench_sqlite [-c clients] [-g groups] [-b batch] [-d secs] [-n max] DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_sqlite.db", argv[i]);
    struct store *s = NULL;
    char err[256];
    if (store_open(path, &s, err, sizeof err) != 0) {
        fprintf(stderr, "bench_sqlite: store_open: %s\n", err);
        return 1;
    }
    int64_t clock_ms = 1700000000000;
    int rc = populate(s, clients, groups, clock_ms);
    long done = 0, commits = 0;
    double t0 = now_s(), end = t0 + secs;
    char name[64], cid[64];
    while (rc == 0 && done < max && now_s() < end) {
        for (long k = 0; rc == 0 && k < batch; k++, done++) {
            int c = 1 + (int)(done % clients);
            clock_ms++;
            snprintf(cid, sizeof cid, "127.0.0.1@b-%d", c);
            for (int g = 0; rc == 0 && g < groups; g++) {
                snprintf(name, sizeof name, "G%d", g);
                rc = check(store_member_heartbeat(s, name, c, clock_ms), s, "heartbeat");
            }
            if (rc == 0)
                rc = check(store_put_client(s, cid, "JAVA", 409, clock_ms), s, "put client");
        }
        if (rc == 0)
            rc = check(store_commit(s), s, "commit");
        commits++;
    }
    double el = now_s() - t0;
    store_close(s);
    const char *suffix[] = {"", "-wal", "-shm"};
    for (size_t k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/bench_sqlite.db%s", argv[i], suffix[k]);
        unlink(path);
    }
    if (rc != 0)
        return 1;
    printf("RESULT mode=sqlite rate=%.0f batch=%ld commits=%ld heartbeats=%ld rows_per_hb=%d secs=%.2f\n",
           (double)done / el, batch, commits, done, groups + 1, el);
    return 0;
}
