/* test_support.c — see test_support.h. */
#include "test_support.h"

#include "buf.h"
#include "err.h"
#include "mem.h"
#include "parse_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
}

int test_fsize_limit(const char *db, struct test_fsize_guard *g)
{
    char wal[4300];
    snprintf(wal, sizeof wal, "%s-wal", db);
    if (getrlimit(RLIMIT_FSIZE, &g->old) != 0)
        return -1;
    struct rlimit lim = g->old;
    off_t cur = file_size(wal) > file_size(db) ? file_size(wal) : file_size(db);
    lim.rlim_cur = (rlim_t)cur + 4096;
    g->old_sig = signal(SIGXFSZ, SIG_IGN);
    return setrlimit(RLIMIT_FSIZE, &lim);
}

int test_fsize_restore(const struct test_fsize_guard *g)
{
    int rc = setrlimit(RLIMIT_FSIZE, &g->old);
    signal(SIGXFSZ, g->old_sig);
    return rc;
}

int test_rmdir_all(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    char p[8192];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            rmdir(p);
    }
    closedir(d);
    return rmdir(dir);
}

int test_write_junk(const char *path, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    char junk[4096];
    memset(junk, 'J', sizeof junk);
    int rc = 0;
    for (size_t done = 0; done < n && rc == 0; done += sizeof junk) {
        size_t k = n - done < sizeof junk ? n - done : sizeof junk;
        if (write(fd, junk, k) != (ssize_t)k)
            rc = -1;
    }
    if (close(fd) != 0)
        rc = -1;
    return rc;
}

char *test_big_json(size_t n)
{
    char *big = malloc(n + 5);
    if (!big)
        return NULL;
    memcpy(big, "[\"", 2);
    memset(big + 2, 'x', n);
    memcpy(big + 2 + n, "\"]", 3);
    return big;
}

const char *test_data_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("RMQ_TEST_DATA");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", rel);
    return path;
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *data = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 65536) {
            cap = cap ? cap * 2 : 65536;
            char *p = realloc(data, cap + 1);
            if (!p) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = p;
        }
        size_t r = fread(data + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    data[n] = 0;
    if (len)
        *len = n;
    return data;
}

const char *test_tmpdir(void)
{
    static char path[4096];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/rmqtest.XXXXXX", base ? base : "/tmp");
    return mkdtemp(path);
}

uint8_t *test_hex_decode(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2)
        return NULL;
    uint8_t *out = malloc(n / 2 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = rmq_hex_digit(hex[2 * i]), lo = rmq_hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    *len = n / 2;
    return out;
}

uint64_t test_rng_state = 88172645463325252ull;

uint32_t test_rnd(uint32_t n)
{
    test_rng_state ^= test_rng_state << 13;
    test_rng_state ^= test_rng_state >> 7;
    test_rng_state ^= test_rng_state << 17;
    return (uint32_t)(test_rng_state % n);
}

int test_install_jansson(void **state)
{
    (void)state;
    rmq_mem_install_jansson();
    return 0;
}

void assert_buf_equal(const struct buf *b, const void *want, size_t len)
{
    assert_int_equal(buf_live(b), len);
    assert_memory_equal(buf_head(b), want, len);
}

void assert_buf_str(struct buf *b, const char *want)
{
    assert_int_equal(buf_terminate(b), RMQ_OK);
    assert_string_equal((const char *)buf_head(b), want);
}

/* True when name matches one of the patterns (or there are none). */
static int selected(const char *name, char **pat, int npat)
{
    if (npat == 0)
        return 1;
    for (int i = 0; i < npat; i++)
        if (fnmatch(pat[i], name, 0) == 0)
            return 1;
    return 0;
}

int test_run_group(const struct CMUnitTest *tests, size_t n, int (*group_setup)(void **),
                   int (*group_teardown)(void **), int argc, char **argv)
{
    char *env[1] = {getenv("TEST_FILTER")};
    char **pat = argc > 1 ? argv + 1 : env;
    int npat = argc > 1 ? argc - 1 : env[0] && env[0][0] ? 1 : 0;
    struct CMUnitTest *sel = malloc((n ? n : 1) * sizeof *sel);
    if (!sel)
        return 1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (selected(tests[i].name, pat, npat))
            sel[k++] = tests[i];
    int rc = 1;
    if (k > 0 || npat == 0)
        rc = _cmocka_run_group_tests("tests", sel, k, group_setup, group_teardown);
    else
        fprintf(stderr, "no case matches %s%s\n", pat[0], npat > 1 ? " (or the other patterns)" : "");
    free(sel);
    return rc;
}

/* The sanitizer runtime's count of live heap bytes; absent (NULL) in a
 * build without one. Weak, so the same test source links either way. */
size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

/* Live heap bytes, or -1 when this build cannot tell. */
static long long heap_bytes(void)
{
    return __sanitizer_get_current_allocated_bytes ? (long long)__sanitizer_get_current_allocated_bytes()
                                                   : -1;
}

long test_oom_loop(const struct test_oom *t, void *ctx)
{
    /* libc makes its time-zone state on first use (gmtime_r) and keeps it:
     * made here, so that a run does not count it as left behind. */
    tzset();
    long failures = 0;
    for (long n = 0;; n++) {
        if (n >= t->max)
            fail_msg("failing after %ld allocations: still no success (raise max?)", n);
        long long before = heap_bytes();
        if (t->setup)
            t->setup(ctx);
        rmq_mem_fail_after(n);
        int rc = t->run(ctx);
        /* Only when the run stopped short of allocation N does this one
         * succeed: then no allocation failed in the run. */
        void *probe = t->absorbs ? rmq_malloc(1) : NULL;
        rmq_mem_fail_after(-1);
        rmq_free(probe);
        if (t->check)
            t->check(ctx, rc); /* first, so that it can say more about a wrong rc */
        if (rc != 0 && rc != RMQ_ENOMEM && (t->also == 0 || rc != t->also))
            fail_msg("failing after %ld allocations: rc %d, want RMQ_ENOMEM%s", n, rc,
                     t->also ? " or the other" : "");
        if (t->absorbs && probe && rc != 0)
            fail_msg("failing after %ld allocations: nothing failed, yet rc %d", n, rc);
        if (rc == 0 && (!t->absorbs || probe))
            return failures;
        if (rc == 0)
            continue;
        failures++;
        long long after = heap_bytes();
        if (!t->keeps && after != before)
            fail_msg("failing after %ld allocations: %lld heap bytes left behind", n, after - before);
    }
}
