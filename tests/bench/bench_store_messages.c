/* bench_store_messages.c — what a stored message costs: the writer's time
 * per store_put_message when committed in batches of 16 and 256, and the
 * bytes on disk per message after a checkpoint, for 100-byte and 1 KiB
 * bodies.
 *
 * Usage: bench_store_messages [N] [DIR]. For each body size and batch size
 * a fresh database in DIR (a new temporary directory by default, removed
 * afterwards) takes N messages (10000 by default) over 4 queues, each with
 * a UNIQ_KEY, TAGS and CLUSTER property as a producer and the broker would
 * set them, a store_commit (one fsync) after every batch; the store is
 * then closed (the close checkpoints the WAL into the file and removes it)
 * and the file's size divided by N. Prints one line per case, the time
 * per message split into the puts and the commits; a last case adds two
 * KEYS per message (their side table). Not a test:
 * the numbers depend on the disk.
 */
#include "err.h"
#include "message_id.h"
#include "store.h"
#include "store_messages.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(const char *dir, int n, size_t body_len, int batch, bool keys)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/bench-%zu-%d%s.db", dir, body_len, batch, keys ? "-keys" : "");
    struct store *s = NULL;
    char err[256] = "";
    if (store_open(path, &s, err, sizeof err) != 0) {
        fprintf(stderr, "store_open: %s\n", err);
        return -1;
    }
    uint8_t *body = malloc(body_len);
    if (!body)
        return -1;
    for (size_t i = 0; i < body_len; i++)
        body[i] = (uint8_t)('a' + i % 26);
    int64_t next[4] = {0};
    const uint8_t ip[4] = {10, 0, 0, 1};
    double t0 = now_s(), put_s = 0, commit_s = 0;
    for (int i = 0; i < n; i++) {
        char uniq[RMQ_MSG_UNIQ_LEN + 1], props[160];
        rmq_msg_uniq_id(ip, 4242, 0x5EED, 1700000000000 + i, (uint16_t)i, uniq);
        int plen = snprintf(props, sizeof props,
                            "UNIQ_KEY\x01%s\x02TAGS\x01TagA\x02CLUSTER\x01"
                            "DefaultCluster\x02",
                            uniq);
        int q = i % 4;
        char key_buf[48];
        snprintf(key_buf, sizeof key_buf, "order-%d user-%d", i, i % 100);
        struct store_message m = {
            .physical_id = i + 1,
            .topic = "BenchTopic",
            .queue_id = q,
            .queue_offset = next[q]++,
            .born_ms = 1700000000000 + i,
            .store_ms = 1700000000001 + i,
            .tags_code = 2598919,
            .body_crc = 12345,
            .uniq_key = uniq,
            .keys = keys ? key_buf : NULL,
            .born_host = {{10, 0, 0, 1}, false, 50000},
            .store_host = {{10, 0, 0, 2}, false, 10911},
            .properties = props,
            .properties_len = (size_t)plen,
            .body = body,
            .body_len = body_len,
        };
        double p0 = now_s();
        int rc = store_put_message(s, &m);
        double p1 = now_s();
        put_s += p1 - p0;
        if (!rc && (i + 1) % batch == 0) {
            rc = store_commit(s);
            commit_s += now_s() - p1;
        }
        if (rc) {
            fprintf(stderr, "put %d: %s (%s)\n", i, rmq_strerror(rc), store_errmsg(s));
            return -1;
        }
    }
    if (store_commit(s) != 0)
        return -1;
    double dt = now_s() - t0;
    store_close(s);
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    printf("body %5zu B  batch %3d%s: %6.1f us/message (%.0f messages/s; puts %.1f us, commits %.1f us), "
           "%6.1f bytes on disk/message\n",
           body_len, batch, keys ? " +KEYS" : "", dt * 1e6 / n, n / dt, put_s * 1e6 / n, commit_s * 1e6 / n,
           (double)st.st_size / n);
    free(body);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    char tmpl[] = "/tmp/bench_store_messages.XXXXXX";
    const char *dir = argc > 2 ? argv[2] : mkdtemp(tmpl);
    if (!dir || n <= 0)
        return 2;
    static const size_t bodies[] = {100, 1024};
    static const int batches[] = {16, 256};
    int rc = 0;
    for (size_t b = 0; b < 2 && !rc; b++)
        for (size_t k = 0; k < 2 && !rc; k++)
            rc = run(dir, n, bodies[b], batches[k], false);
    if (!rc)
        rc = run(dir, n, 100, 256, true);
    if (argc <= 2) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            rc = 1;
    }
    return rc ? 1 : 0;
}
