/* test_replay_cmd.c — `rmqcoord replay` end to end, one pass against two:
 * with --notify-source auto, replay first feeds the trace as if its notify
 * pre-pass would find nothing and falls back to the two-pass run when that
 * was wrong (cmd_replay.c run_offline). RMQCOORD_REPLAY_TWO_PASS=1 forces
 * the two-pass run; both must print the same bytes on stdout, the same
 * stderr (but the timing line) and exit alike, for traces with and without
 * notify lines, bad lines before and after them, a cut last line, --to.
 * Runs the binary named by $RMQCOORD_BIN on traces it generates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_support.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bin(void)
{
    const char *b = getenv("RMQCOORD_BIN");
    return b ? b : "build/rmqcoord";
}

/* Runs argv (NULL-terminated) with stdout/stderr to files; exit status. */
static int run(const char *const *argv, const char *out, const char *err, bool two_pass)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600),
            e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        if (two_pass)
            setenv("RMQCOORD_REPLAY_TWO_PASS", "1", 1);
        else
            unsetenv("RMQCOORD_REPLAY_TWO_PASS");
        execv(argv[0], (char *const *)(const void *)argv); /* execv does not write them */
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The file's bytes without the throughput line (timing differs run to run). */
static char *slurp_stable(const char *path, size_t *len)
{
    char *s = test_read_file(path, len);
    assert_non_null(s);
    char *t = strstr(s, " events in ");
    if (t) {
        char *start = t;
        while (start > s && start[-1] != '\n')
            start--;
        char *end = strchr(t, '\n');
        end = end ? end + 1 : s + *len;
        memmove(start, end, (size_t)(s + *len - end) + 1);
        *len -= (size_t)(end - start);
    }
    return s;
}

/* Replays trace both ways with extra flags; both must agree. */
static void agree(const char *dir, const char *trace, const char *flag1, const char *flag2)
{
    char o1[512], e1[512], o2[512], e2[512];
    snprintf(o1, sizeof o1, "%s/o1", dir);
    snprintf(e1, sizeof e1, "%s/e1", dir);
    snprintf(o2, sizeof o2, "%s/o2", dir);
    snprintf(e2, sizeof e2, "%s/e2", dir);
    const char *argv[] = {bin(), "replay", trace, flag1, flag2, NULL};
    int r1 = run(argv, o1, e1, false), r2 = run(argv, o2, e2, true);
    size_t n1, n2, m1, m2;
    char *a = slurp_stable(o1, &n1), *b = slurp_stable(o2, &n2);
    char *ea = slurp_stable(e1, &m1), *eb = slurp_stable(e2, &m2);
    if (r1 != r2 || n1 != n2 || memcmp(a, b, n1) != 0 || m1 != m2 || memcmp(ea, eb, m1) != 0)
        fail_msg("%s %s %s: exit %d/%d, stdout %zu/%zu bytes, stderr \"%s\" / \"%s\"", trace,
                 flag1 ? flag1 : "", flag2 ? flag2 : "", r1, r2, n1, n2, ea, eb);
    free(a);
    free(b);
    free(ea);
    free(eb);
}

struct lines {
    char **v;
    size_t n;
};

static struct lines split(char *s)
{
    struct lines l = {NULL, 0};
    for (char *p = s; *p;) {
        char *nl = strchr(p, '\n');
        l.v = realloc(l.v, (l.n + 1) * sizeof *l.v);
        assert_non_null(l.v);
        l.v[l.n++] = p;
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    return l;
}

/* Writes the lines with extra inserted before index at (NULL: none); the
 * last line without its newline when cut. */
static void write_trace(const char *path, const struct lines *l, size_t at, const char *extra, bool cut)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < l->n; i++) {
        if (i == at && extra)
            fprintf(f, "%s\n", extra);
        fprintf(f, "%s%s", l->v[i], cut && i + 1 == l->n ? "" : "\n");
    }
    assert_int_equal(fclose(f), 0);
}

static void test_one_pass_agrees(void **state)
{
    (void)state;
    const char *dir = test_tmpdir();
    char gen[512], trace[512];
    snprintf(gen, sizeof gen, "%s/gen.jsonl", dir);
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    const char *gargv[] = {
        bin(),    "trace-gen", "--groups",        "3",  "--clients",    "4",   "--events",      "3000",
        "--seed", "9",         "--churn-per-min", "20", "--crash-rate", "0.3", "--freeze-rate", "0.3",
        NULL};
    char gerr[512];
    snprintf(gerr, sizeof gerr, "%s/gen.err", dir);
    assert_int_equal(run(gargv, gen, gerr, false), 0);
    size_t len;
    char *text = test_read_file(gen, &len);
    assert_non_null(text);
    struct lines l = split(text);
    assert_true(l.n > 2000);
    /* A connection that exists, for notify lines. */
    const char *c = strstr(l.v[l.n / 2], "\"conn\":");
    assert_non_null(c);
    long conn = strtol(c + 7, NULL, 10);
    char notify[256], escaped[256], bad_notify[256];
    snprintf(notify, sizeof notify,
             "{\"ts\":1700000001000,\"conn\":%ld,\"event\":\"notify\",\"group\":\"GID_0\"}", conn);
    snprintf(escaped, sizeof escaped,
             "{\"ts\":1700000001000,\"conn\":%ld,\"event\":\"\\u006eotify\",\"group\":\"GID_0\"}", conn);
    snprintf(bad_notify, sizeof bad_notify,
             "{\"ts\":1700000001000,\"conn\":%ld,\"event\":\"notify\",\"grp\":\"G\"}", conn);
    const char *bad = "{\"ts\":1700000001000,\"conn\":1,\"event\":\"request\",\"code\":34,\"body\":{\"a\":}}";
    const char *body_notify =
        "{\"ts\":1700000001000,\"conn\":1,\"event\":\"request\",\"code\":34,\"body\":{\"x\":\"notify\"}}";
    struct {
        size_t at;
        const char *extra;
        bool cut;
    } cases[] = {
        {0, NULL, false},         {5, notify, false},           {l.n / 2, notify, false},
        {l.n - 1, notify, false}, {l.n / 2, escaped, false},    {l.n / 2, body_notify, false},
        {l.n / 2, bad, false},    {l.n - 2, bad_notify, false}, {l.n / 3, bad, true},
        {0, NULL, true},
    };
    const char *flags[][2] = {
        {NULL, NULL}, {"--to", "+600000"}, {"--format", "json"}, {"--notify-source", "model"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_trace(trace, &l, cases[i].at, cases[i].extra, cases[i].cut);
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            agree(dir, trace, flags[f][0], flags[f][1]);
    }
    /* A notify line past --to still counts (the pre-pass reads the whole file). */
    write_trace(trace, &l, l.n - 1, notify, false);
    agree(dir, trace, "--to", "+1000");
    char missing[512];
    snprintf(missing, sizeof missing, "%s/missing.jsonl", dir);
    agree(dir, missing, NULL, NULL);
    free(l.v);
    free(text);
    const char *names[] = {"gen.jsonl", "gen.err", "t.jsonl", "o1", "e1", "o2", "e2"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        (void)unlink(p); /* best effort */
    }
    (void)rmdir(dir);
}

TEST_MAIN(cmocka_unit_test(test_one_pass_agrees))
