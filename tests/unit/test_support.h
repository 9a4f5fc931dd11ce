/* test_support.h — shared fixtures for the cmocka unit tests. */
#ifndef RMQ_TEST_SUPPORT_H
#define RMQ_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

/* Path of a file under tests/data (from $RMQ_TEST_DATA); static buffer. */
const char *test_data_path(const char *rel);
/* New malloc'd contents of a whole file (NUL-terminated); *len gets the size. NULL on failure. */
char *test_read_file(const char *path, size_t *len);
/* New temporary directory (mkdtemp under $TMPDIR or /tmp); static buffer. */
const char *test_tmpdir(void);
/* Removes every entry of dir (files, then empty directories), then dir;
 * returns rmdir's result for dir (0 when it is gone). */
int test_rmdir_all(const char *dir);
/* Creates (or truncates) path with n bytes of 'J' (mode 0600): a file that
 * is not a database. 0, or -1 if open, write or close failed. */
int test_write_junk(const char *path, size_t n);
/* New malloc'd JSON array of one string of n 'x' (n + 5 bytes with the NUL):
 * a value too large for a store whose file size is limited. */
char *test_big_json(size_t n);
/* What test_fsize_limit changed, for test_fsize_restore. */
struct test_fsize_guard {
    struct rlimit old;
    void (*old_sig)(int);
};
/* Lowers RLIMIT_FSIZE to 4 KiB above the larger of db and db-wal, with
 * SIGXFSZ ignored (a write past it gets EFBIG, not a signal): the next
 * commit that grows the store cannot write. 0, or -1 if a call failed. */
int test_fsize_limit(const char *db, struct test_fsize_guard *g);
/* Puts back the limit and the signal disposition; 0, or -1. */
int test_fsize_restore(const struct test_fsize_guard *g);
/* Decodes hex text into a new malloc'd buffer; NULL on bad hex. */
uint8_t *test_hex_decode(const char *hex, size_t *len);
struct buf;
/* Asserts that the live bytes of b are exactly want[0..len). */
void assert_buf_equal(const struct buf *b, const void *want, size_t len);
/* Asserts that the live bytes of b (NUL-terminated here) are the text want. */
void assert_buf_str(struct buf *b, const char *want);
/* Seeded xorshift64 for the property tests: set test_rng_state (non-zero),
 * then test_rnd(n) draws from 0..n-1. */
extern uint64_t test_rng_state;
uint32_t test_rnd(uint32_t n);

/* One fail-the-Nth-allocation test (test_oom_loop). The callbacks get ctx. */
struct test_oom {
    /* Before each run, nothing failing: makes the state the run works on
     * (NULL: none, or state that lives across runs in ctx). */
    void (*setup)(void *ctx);
    /* The operation under test, while the allocation funnel fails its Nth
     * allocation and every one after; returns 0 or an error code. */
    int (*run)(void *ctx);
    /* After each run, nothing failing: asserts what the run left (rc is its
     * result) and frees what setup and the run made, so that after a failed
     * run the heap holds what it held before setup. NULL: nothing to do. */
    void (*check)(void *ctx, int rc);
    /* The error a failed run may return besides RMQ_ENOMEM (0: none), e.g.
     * RMQ_EPROTO where jansson reports its failed allocation as bad input. */
    int also;
    /* The operation may absorb a failed allocation and still return 0: the
     * loop then goes on until a run in which no allocation failed. Without
     * it the first run that returns 0 ends the loop. */
    int absorbs;
    /* A failed run may leave memory in state that outlives the run (a
     * table it grew before the allocation that failed): the heap is then
     * not compared. */
    int keeps;
    /* N may not reach this (a run that never succeeds fails the test). */
    long max;
};
/* Runs t for N = 0, 1, 2 ... (N allocations succeed, the rest fail) until a
 * run succeeds: each failed run must return RMQ_ENOMEM (or t->also) and,
 * where the sanitizer's heap count is there (ASan builds), leave no byte
 * more allocated than before its setup; leaks show at exit besides (ASan,
 * valgrind). Returns the number of runs that returned an error. */
long test_oom_loop(const struct test_oom *t, void *ctx);

/* Runs the n cases of tests (CMUnitTest entries) as one cmocka group
 * between group_setup and group_teardown (either NULL), or only those whose
 * name matches a pattern (fnmatch: * and ?): the command-line arguments, or
 * else $TEST_FILTER. Returns cmocka's result; 1 when a pattern was given
 * but no case matches it (a misspelt name must not pass as "0 run"). */
struct CMUnitTest;
int test_run_group(const struct CMUnitTest *tests, size_t n, int (*group_setup)(void **),
                   int (*group_teardown)(void **), int argc, char **argv);

/* A test file's main: the CMUnitTest entries given, run as one group between
 * the cmocka group fixtures group_setup and group_teardown (either NULL);
 * `test_x NAME...` or `TEST_FILTER=NAME test_x` runs only the cases named. */
#define TEST_MAIN_GROUP(group_setup, group_teardown, ...)                                                    \
    int main(int argc, char **argv)                                                                          \
    {                                                                                                        \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                                                     \
        return test_run_group(tests, sizeof tests / sizeof tests[0], group_setup, group_teardown, argc,      \
                              argv);                                                                         \
    }
#define TEST_MAIN(...) TEST_MAIN_GROUP(NULL, NULL, __VA_ARGS__)
/* Group setup of the codec tests: jansson allocates through the funnel
 * (rmq_mem_install_jansson), so the fault-injection tests reach it too. */
int test_install_jansson(void **state);

#endif
