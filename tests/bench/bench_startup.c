/* bench_startup.c — time from exec to the daemon's READY line.
 *
 * Starts `BIN serve --listen 127.0.0.1:0 --http off --store STORE` REPEATS
 * times, each time timing fork+exec until "READY" appears on its stdout,
 * then stops it with SIGTERM and waits for it (bounded). With -f the store
 * file (and its -wal/-shm) is removed before each start, so every start
 * creates and migrates an empty database. With -x, BIN is run with no
 * arguments (the baseline: bench_echo's exec-to-READY time; STORE unused).
 * Usage: bench_startup [-f] [-x] [-r repeats] BIN STORE
 * Prints "RESULT mode=startup runs=N p50_ms=.. min_ms=.. max_ms=..".
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 1000
#define READY_TIMEOUT_MS 30000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail_errno(const char *what)
{
    int e = errno;
    fprintf(stderr, "bench_startup: %s: %s\n", what, strerror(e));
    return -e;
}

static void remove_store(const char *store)
{
    const char *suffix[] = {"", "-wal", "-shm"};
    char p[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", store, suffix[i]);
        if (unlink(p) != 0 && errno != ENOENT)
            fail_errno("unlink");
    }
}

/* Waits for pid to exit, killing it after max_ms. */
static int reap(pid_t pid, int max_ms)
{
    for (int waited = 0; waited < max_ms; waited += 5) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
        if (r < 0)
            return fail_errno("waitpid");
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    if (kill(pid, SIGKILL) != 0)
        fail_errno("kill");
    (void)waitpid(pid, NULL, 0);
    return -1;
}

/* One start: seconds until READY in *secs. */
static bool g_bare;

static int start_once(const char *bin, const char *store, double *secs)
{
    int fds[2];
    if (pipe(fds) != 0)
        return fail_errno("pipe");
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return fail_errno("fork");
    if (pid == 0) {
        if (dup2(fds[1], 1) < 0)
            _exit(126);
        close(fds[0]);
        close(fds[1]);
        if (g_bare)
            execl(bin, bin, (char *)NULL);
        execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--http", "off", "--store", store, "--log-level",
              "warn", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[512];
    size_t len = 0;
    bool ready = false;
    while (!ready && len < sizeof line - 1) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int remaining = READY_TIMEOUT_MS - (int)((now_s() - t0) * 1000);
        if (remaining <= 0 || poll(&p, 1, remaining) <= 0)
            break;
        ssize_t n = read(fds[0], line + len, sizeof line - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        line[len] = 0;
        ready = strstr(line, "READY") != NULL;
    }
    *secs = now_s() - t0;
    if (kill(pid, SIGTERM) != 0)
        fail_errno("kill");
    int rc = reap(pid, 10000);
    close(fds[0]);
    if (!ready) {
        fprintf(stderr, "bench_startup: no READY line from %s\n", bin);
        return -1;
    }
    return rc;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    bool fresh = false;
    int runs = 10, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-f"))
            fresh = true;
        else if (!strcmp(argv[i], "-x"))
            g_bare = true;
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else
            break;
    }
    if (argc - i != 2 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: bench_startup [-f] [-x] [-r repeats] BIN STORE\n");
        return 2;
    }
    double *t = calloc((size_t)runs, sizeof *t);
    if (!t)
        return 1;
    for (int r = 0; r < runs; r++) {
        if (fresh)
            remove_store(argv[i + 1]);
        if (start_once(argv[i], argv[i + 1], &t[r]) != 0) {
            free(t);
            return 1;
        }
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_d);
    printf("RESULT mode=startup runs=%d p50_ms=%.2f min_ms=%.2f max_ms=%.2f\n", runs, t[runs / 2] * 1e3,
           t[0] * 1e3, t[runs - 1] * 1e3);
    free(t);
    return 0;
}
