/* test_store_open.c — opening the SQLite writer (server/store/store.c):
 * migrations and reopening, the file mode, and failures that must leave
 * nothing behind: a newer schema, unwritable or bogus paths (as nobody when
 * run as root), and a fail-the-Nth-allocation loop over open and load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "store.h"
#include "store_fixture.h"
#include "test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern const unsigned schema_migration_count;

static void test_open_applies_migrations(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    assert_true(schema_migration_count >= 1);
    assert_int_equal(q_int(fx->path, "PRAGMA user_version"), schema_migration_count);
    assert_int_equal(q_int(fx->path,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                           "('runs','topics','topic_brokers','clients','channels','consumer_groups',"
                           "'members','subscriptions','offsets','events')"),
                     10);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                                     "'events_group_id'"),
                     1);
    char mode[16];
    sqlite3 *db = raw_open(fx->path);
    assert_string_equal(raw_text(db, "PRAGMA journal_mode", mode, sizeof mode), "wal");
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    assert_int_equal(store_run_id(s), 1);
    assert_false(store_in_batch(s));
    assert_int_equal(store_commit(s), 0); /* no batch: a no-op */
    store_close(s);
    store_close(NULL);
}

static void test_reopen_is_idempotent(void **state)
{
    struct fx *fx = *state;
    for (int64_t run = 1; run <= 3; run++) {
        struct store *s = open_ok(fx->path);
        assert_int_equal(store_run_id(s), run);
        store_close(s);
        assert_int_equal(q_int(fx->path, "PRAGMA user_version"), schema_migration_count);
    }
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM runs"), 3);
    assert_int_equal(
        q_int(fx->path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'"), 1);
}

static void test_file_mode_is_0600(void **state)
{
    struct fx *fx = *state;
    mode_t old = umask(0); /* prove the mode does not depend on the caller's umask */
    struct store *s = open_ok(fx->path);
    umask(old);
    assert_int_equal(store_put_offset(s, "g", "t", 0, 1, 1), 0);
    assert_int_equal(store_commit(s), 0);
    struct stat st;
    char wal[4300];
    snprintf(wal, sizeof wal, "%s-wal", fx->path);
    assert_int_equal(stat(fx->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(wal, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    store_close(s);
}

static void test_future_version_refused(void **state)
{
    struct fx *fx = *state;
    store_close(open_ok(fx->path));
    sqlite3 *db = NULL;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %u", schema_migration_count + 5);
    assert_int_equal(sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);

    struct store *s = (struct store *)1;
    char err[256] = "";
    assert_int_equal(store_open(fx->path, &s, err, sizeof err), RMQ_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "newer"));
    assert_int_equal(q_int(fx->path, "PRAGMA user_version"), schema_migration_count + 5);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM runs"), 1); /* nothing written */
}

static void expect_open_fails(const char *path, int code)
{
    struct store *s = (struct store *)1;
    char err[256] = "";
    assert_int_equal(store_open(path, &s, err, sizeof err), code);
    assert_null(s);
    assert_true(strlen(err) > 0);
}

/* As root, file modes do not stop open(): run store_open in a child that
 * has dropped to nobody (the test directory is opened up to let it reach
 * the file). The child's exit status says whether it got code. */
static void expect_open_fails_unprivileged(const char *dir, const char *path, int code)
{
    assert_int_equal(chmod(dir, 0755), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the group may be unmapped in a user namespace; the uid is what counts */
        (void)setgroups(0, NULL);
        (void)setgid(65534);
        if (setuid(65534) != 0)
            _exit(77);
        struct store *s = (struct store *)1;
        char err[256] = "";
        int rc = store_open(path, &s, err, sizeof err);
        _exit(rc == code && s == NULL && err[0] ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        print_message("# cannot drop privileges; %s not checked as non-root\n", path);
        return;
    }
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_bad_paths_fail_cleanly(void **state)
{
    struct fx *fx = *state;
    char p[4300];
    snprintf(p, sizeof p, "%s/no/such/dir/store.db", fx->dir);
    expect_open_fails(p, -ENOENT);
    expect_open_fails(fx->dir, -EISDIR);

    snprintf(p, sizeof p, "%s/garbage.db", fx->dir);
    assert_int_equal(test_write_junk(p, 8192), 0);
    expect_open_fails(p, RMQ_EIO); /* "file is not a database" */

    snprintf(p, sizeof p, "%s/readonly.db", fx->dir);
    store_close(open_ok(p));
    assert_int_equal(chmod(p, 0400), 0);
    if (geteuid() != 0)
        expect_open_fails(p, -EACCES);
    else
        expect_open_fails_unprivileged(fx->dir, p, -EACCES); /* root ignores file modes */

    /* A writable file in a directory where the -wal file (and the lock
     * file, store_guard.c, which is tried first) cannot be created. */
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/rodir", fx->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(p, sizeof p, "%s/rodir/store.db", fx->dir);
    store_close(open_ok(p));
    assert_int_equal(chmod(p, 0666), 0);
    assert_int_equal(chmod(sub, 0555), 0);
    if (geteuid() != 0)
        expect_open_fails(p, -EACCES);
    else
        expect_open_fails_unprivileged(fx->dir, p, -EACCES);
    assert_int_equal(chmod(sub, 0700), 0);
    char f[4400];
    const char *suffix[] = {"", "-wal", "-shm", ".lock"};
    for (int i = 0; i < 4; i++) {
        snprintf(f, sizeof f, "%s%s", p, suffix[i]);
        unlink(f);
    }
    struct store *s = NULL;
    assert_int_equal(store_open(NULL, &s, NULL, 0), RMQ_EINVAL);
    assert_int_equal(store_open(fx->path, NULL, NULL, 0), RMQ_EINVAL);
}

struct open_oom {
    const char *path;
    struct store *s;
    struct seen_topics t;
};

static int open_oom_run(void *ctx)
{
    struct open_oom *x = ctx;
    return store_open(x->path, &x->s, NULL, 0);
}

static int load_oom_run(void *ctx)
{
    struct open_oom *x = ctx;
    memset(&x->t, 0, sizeof x->t);
    return store_load_topics(x->s, topic_cb, &x->t);
}

static void load_oom_check(void *ctx, int rc)
{
    struct open_oom *x = ctx;
    if (rc == 0)
        assert_int_equal(x->t.n, 3);
}

/* Fails each of store's own allocations in turn: every attempt either
 * succeeds or returns RMQ_ENOMEM, and leaves nothing allocated. */
static void test_open_and_load_oom(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_three_topics(s);
    store_close(s);
    struct open_oom x = {.path = fx->path};
    test_oom_loop(&(struct test_oom){.run = open_oom_run, .max = 100}, &x);
    test_oom_loop(&(struct test_oom){.run = load_oom_run, .check = load_oom_check, .max = 100}, &x);
    store_close(x.s);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

TEST_MAIN(T(test_open_applies_migrations), T(test_reopen_is_idempotent), T(test_file_mode_is_0600),
          T(test_future_version_refused), T(test_bad_paths_fail_cleanly), T(test_open_and_load_oom))
