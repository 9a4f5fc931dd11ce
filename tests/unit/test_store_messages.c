/* test_store_messages.c — the writer's message rows
 * (server/store/store_messages.c) on a real SQLite file: put, read (its
 * own uncommitted writes too), queue ranges and the physical id across a
 * restart, lookups by id and key, a failed commit, retention, and failed
 * allocations.
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
#include "store_messages.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct store_message msg(const char *topic, int qid, int64_t off, int64_t pid, const char *body)
{
    return (struct store_message){
        .physical_id = pid,
        .topic = topic,
        .queue_id = qid,
        .queue_offset = off,
        .born_ms = 1700000000000 + off,
        .store_ms = 1700000000100 + off,
        .flag = 0,
        .tags_code = 2598919,
        .born_host = {{10, 0, 0, 1}, false, 50000},
        .store_host = {{192, 168, 1, 2}, false, 10911},
        .properties = "TAGS\x01"
                      "TagA\x02",
        .properties_len = 10,
        .body = (const uint8_t *)body,
        .body_len = strlen(body),
    };
}

/* What the read callbacks saw. */
struct seen {
    int n;
    int64_t off[32], pid[32], size[32];
    char body[32][64];
    char topic[32][16];
    char uniq[32][40];
    int32_t sys_flag[32];
    struct rmq_msg_host born[32];
    int64_t deliver[32];
    int stop_at;
};

static int seen_cb(void *ctx, const struct store_message *m)
{
    struct seen *s = ctx;
    if (s->n >= 32)
        return RMQ_E2BIG;
    s->off[s->n] = m->queue_offset;
    s->pid[s->n] = m->physical_id;
    s->size[s->n] = m->size;
    snprintf(s->body[s->n], sizeof s->body[0], "%.*s", (int)m->body_len,
             m->body ? (const char *)m->body : "");
    snprintf(s->topic[s->n], sizeof s->topic[0], "%s", m->topic);
    snprintf(s->uniq[s->n], sizeof s->uniq[0], "%s", m->uniq_key ? m->uniq_key : "");
    s->sys_flag[s->n] = m->sys_flag;
    s->born[s->n] = m->born_host;
    s->deliver[s->n] = m->deliver_ms;
    s->n++;
    return s->stop_at && s->n >= s->stop_at ? 9 : 0;
}

struct ranges {
    int n;
    char key[8][32];
    int64_t min[8], max[8], count[8], bytes[8];
};

static int range_cb(void *ctx, const char *topic, int queue_id, int64_t min, int64_t max, int64_t count,
                    int64_t bytes)
{
    struct ranges *r = ctx;
    if (r->n >= 8)
        return RMQ_E2BIG;
    snprintf(r->key[r->n], sizeof r->key[0], "%s/%d", topic, queue_id);
    r->min[r->n] = min;
    r->max[r->n] = max;
    r->count[r->n] = count;
    r->bytes[r->n++] = bytes;
    return 0;
}

/* T/0 offsets 0..4 (pids 1..5), T/1 offsets 0..2 (pids 6..8), U/0 offset 0 (pid 9). */
static void put_some(struct store *s)
{
    char body[16];
    for (int i = 0; i < 5; i++) {
        snprintf(body, sizeof body, "t0-%d", i);
        struct store_message m = msg("T", 0, i, i + 1, body);
        char uniq[40];
        snprintf(uniq, sizeof uniq, "UNIQ%d", i);
        m.uniq_key = uniq;
        m.keys = i % 2 ? "order-1  k2" : "order-2";
        assert_int_equal(store_put_message(s, &m), 0);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof body, "t1-%d", i);
        struct store_message m = msg("T", 1, i, 6 + i, body);
        assert_int_equal(store_put_message(s, &m), 0);
    }
    struct store_message m = msg("U", 0, 0, 9, "");
    m.sys_flag = RMQ_MSG_SYS_BORNHOST_V6;
    m.born_host = (struct rmq_msg_host){{0xfe, 0x80, [15] = 1}, true, 1234};
    m.deliver_ms = 1700000009999;
    m.body = NULL;
    assert_int_equal(store_put_message(s, &m), 0);
}

static void test_put_read_restart(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_some(s);
    /* The writer reads its own batch before the commit. */
    struct seen r = {0};
    int n = -1;
    assert_int_equal(store_read_messages(s, "T", 0, 0, 10, 0, seen_cb, &r, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM messages"), 0); /* nobody else sees it yet */
    assert_int_equal(store_commit(s), 0);
    store_close(s);

    s = open_ok(fx->path);
    struct ranges g = {0};
    int64_t max_id = 0;
    assert_int_equal(store_load_queue_ranges(s, range_cb, &g, &max_id), 0);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.key[0], "T/0");
    assert_true(g.min[0] == 0 && g.max[0] == 4 && g.count[0] == 5);
    int64_t one = (int64_t)rmq_msg_record_size(0, 4, 1, 10);
    assert_true(g.bytes[0] == 5 * one);
    assert_string_equal(g.key[1], "T/1");
    assert_true(g.max[1] == 2 && g.count[1] == 3);
    assert_string_equal(g.key[2], "U/0");
    assert_true(max_id == 9);

    /* From an offset, by count, by bytes (the first always comes). */
    r = (struct seen){0};
    assert_int_equal(store_read_messages(s, "T", 0, 2, 2, 0, seen_cb, &r, &n), 0);
    assert_int_equal(n, 2);
    assert_true(r.off[0] == 2 && r.off[1] == 3);
    assert_string_equal(r.body[0], "t0-2");
    assert_string_equal(r.uniq[0], "UNIQ2");
    assert_true(r.size[0] == one && r.pid[0] == 3);
    r = (struct seen){0};
    assert_int_equal(store_read_messages(s, "T", 0, 0, 10, 2 * one, seen_cb, &r, &n), 0);
    assert_int_equal(n, 2);
    r = (struct seen){0};
    assert_int_equal(store_read_messages(s, "T", 0, 0, 10, 1, seen_cb, &r, &n), 0);
    assert_int_equal(n, 1);
    r = (struct seen){0};
    assert_int_equal(store_read_messages(s, "T", 0, 5, 10, 0, seen_cb, &r, &n), 0);
    assert_int_equal(n, 0);
    r = (struct seen){.stop_at = 2};
    assert_int_equal(store_read_messages(s, "T", 1, 0, 10, 0, seen_cb, &r, &n), 9);
    assert_int_equal(n, 2);
    assert_int_equal(store_read_messages(s, NULL, 1, 0, 10, 0, seen_cb, &r, &n), RMQ_EINVAL);

    /* An IPv6 born host, no body, a delivery time. */
    r = (struct seen){0};
    assert_int_equal(store_message_by_physical_id(s, 9, seen_cb, &r), 0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.topic[0], "U");
    assert_string_equal(r.body[0], "");
    assert_true(r.born[0].v6 && r.born[0].ip[0] == 0xfe && r.born[0].ip[15] == 1 && r.born[0].port == 1234);
    assert_int_equal(r.sys_flag[0], RMQ_MSG_SYS_BORNHOST_V6);
    assert_true(r.deliver[0] == 1700000009999);
    assert_int_equal(store_message_by_physical_id(s, 99, seen_cb, &r), RMQ_ENOTFOUND);

    /* By unique key and by key (KEYS split at spaces). */
    r = (struct seen){0};
    assert_int_equal(store_messages_by_unique_key(s, "UNIQ3", 10, seen_cb, &r, &n), 0);
    assert_true(n == 1 && r.off[0] == 3);
    r = (struct seen){0};
    assert_int_equal(store_messages_by_key(s, "order-1", 10, seen_cb, &r, &n), 0);
    assert_true(n == 2 && r.off[0] == 1 && r.off[1] == 3);
    r = (struct seen){0};
    assert_int_equal(store_messages_by_key(s, "k2", 1, seen_cb, &r, &n), 0);
    assert_true(n == 1 && r.off[0] == 1);
    assert_int_equal(store_messages_by_key(s, "", 10, seen_cb, &r, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM message_keys"), 7);
    store_close(s);
}

static void test_put_refused(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    struct store_message m = msg("T", 0, 0, 1, "x");
    assert_int_equal(store_put_message(s, &m), 0);
    m.physical_id = 2;
    assert_int_equal(store_put_message(s, &m), RMQ_EEXIST); /* (T, 0, 0) taken */
    m.queue_offset = 1;
    m.physical_id = 1;
    assert_int_equal(store_put_message(s, &m), RMQ_EEXIST); /* physical id taken */
    m.keys = "a b";
    assert_int_equal(store_put_message(s, &m), RMQ_EEXIST); /* the savepoint undoes the keys */
    m = msg("T", 0, 1, 2, "x");
    m.topic = "";
    assert_int_equal(store_put_message(s, &m), RMQ_EINVAL);
    m = msg("T", -1, 1, 2, "x");
    assert_int_equal(store_put_message(s, &m), RMQ_EINVAL);
    m = msg("T", 0, -1, 2, "x");
    assert_int_equal(store_put_message(s, &m), RMQ_EINVAL);
    m = msg("T", 0, 1, 0, "x");
    assert_int_equal(store_put_message(s, &m), RMQ_EINVAL);
    m = msg("T", 0, 1, 2, "x");
    m.sys_flag = RMQ_MSG_SYS_STOREHOST_V6; /* the store host is IPv4 */
    assert_int_equal(store_put_message(s, &m), RMQ_EINVAL);
    m = msg("T", 0, 1, 2, "x");
    m.properties_len = 40000;
    assert_int_equal(store_put_message(s, &m), RMQ_EINVAL);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM messages"), 1);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM message_keys"), 0);
    /* the refused puts left the queue's figures alone */
    assert_int_equal(q_int(fx->path, "SELECT messages FROM message_queues"), 1);
    assert_int_equal(q_int(fx->path, "SELECT bytes FROM message_queues"),
                     (int64_t)rmq_msg_record_size(0, 1, 1, 10));
    store_close(s);
}

/* A commit that cannot reach the disk leaves no message, key or id
 * behind, and the store goes on once it can write again. */
static void test_failed_commit_leaves_no_message(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    struct store_message m = msg("T", 0, 0, 1, "kept");
    assert_int_equal(store_put_message(s, &m), 0);
    assert_int_equal(store_commit(s), 0);
    char *big = malloc(256 * 1024);
    assert_non_null(big);
    memset(big, 'b', 256 * 1024 - 1);
    big[256 * 1024 - 1] = 0;
    for (int i = 1; i <= 3; i++) {
        m = msg("T", 0, i, 1 + i, big);
        m.keys = "lost";
        assert_int_equal(store_put_message(s, &m), 0);
    }
    struct test_fsize_guard guard;
    assert_int_equal(test_fsize_limit(fx->path, &guard), 0);
    int rc = store_commit(s);
    assert_int_equal(test_fsize_restore(&guard), 0);
    free(big);
    assert_int_equal(rc, RMQ_EIO);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM messages"), 1);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM message_keys"), 0);
    struct ranges g = {0};
    int64_t max_id = 0;
    assert_int_equal(store_load_queue_ranges(s, range_cb, &g, &max_id), 0);
    assert_true(g.n == 1 && g.max[0] == 0 && max_id == 1);
    m = msg("T", 0, 1, 2, "again");
    assert_int_equal(store_put_message(s, &m), 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM messages"), 2);
    store_close(s);
}

struct gone_log {
    int n;
    char key[32][16];
    int64_t off[32], size[32];
};

static void gone_cb(void *ctx, const char *topic, int queue_id, int64_t off, int64_t size)
{
    struct gone_log *g = ctx;
    assert_true(g->n < 32);
    snprintf(g->key[g->n], sizeof g->key[0], "%s/%d", topic, queue_id);
    g->off[g->n] = off;
    g->size[g->n++] = size;
}

static void test_retention(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_some(s);
    assert_int_equal(store_commit(s), 0);
    int64_t one = (int64_t)rmq_msg_record_size(0, 4, 1, 10);

    /* By count: 5 messages, keep 3, two at a time. */
    struct gone_log gl = {0};
    int deleted = -1;
    assert_int_equal(store_retain_queue(s, "T", 0, 5, 5 * one, 3, 0, 1, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(store_retain_queue(s, "T", 0, 4, 4 * one, 3, 0, 8, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(store_retain_queue(s, "T", 0, 3, 3 * one, 3, 0, 8, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 0);
    assert_int_equal(gl.n, 2);
    assert_true(gl.off[0] == 0 && gl.off[1] == 1 && gl.size[0] == one);
    assert_string_equal(gl.key[1], "T/0");
    assert_int_equal(store_commit(s), 0);
    struct ranges g = {0};
    assert_int_equal(store_load_queue_ranges(s, range_cb, &g, NULL), 0);
    assert_true(g.min[0] == 2 && g.max[0] == 4 && g.count[0] == 3);            /* the min offset rose */
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM message_keys"), 4); /* keys went too */

    /* By bytes: at most one message's worth, but the newest stays. */
    gl = (struct gone_log){0};
    assert_int_equal(store_retain_queue(s, "T", 0, 3, 3 * one, 0, one - 1, 100, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 2);
    assert_true(gl.off[1] == 3);
    /* Nothing more may go: one left. */
    assert_int_equal(store_retain_queue(s, "T", 0, 1, one, 0, 1, 100, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 0);

    /* Below an offset, clamped to keep the newest. */
    assert_int_equal(store_delete_messages_below(s, "T", 1, 100, &deleted), 0);
    assert_int_equal(deleted, 2);
    assert_int_equal(store_delete_messages_below(s, "T", 1, 100, &deleted), 0);
    assert_int_equal(deleted, 0);

    /* The whole store: only queues' newest messages are left, so nothing goes. */
    gl = (struct gone_log){0};
    assert_int_equal(store_retain_total(s, 1000000, 1, 10, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 0);
    assert_int_equal(store_commit(s), 0);
    g = (struct ranges){0};
    int64_t max_id = 0;
    assert_int_equal(store_load_queue_ranges(s, range_cb, &g, &max_id), 0);
    assert_int_equal(g.n, 3);
    assert_true(g.min[0] == 4 && g.min[1] == 2 && max_id == 9);
    assert_int_equal(store_retain_queue(s, NULL, 0, 1, 1, 1, 1, 1, NULL, NULL, &deleted), RMQ_EINVAL);
    assert_int_equal(store_retain_total(s, 1, 1, 0, NULL, NULL, &deleted), RMQ_EINVAL);
    store_close(s);

    /* The physical id survives even the rows holding the highest ids. */
    raw_exec(fx->path, "DELETE FROM messages WHERE physical_id >= 5");
    s = open_ok(fx->path);
    g = (struct ranges){0};
    assert_int_equal(store_load_queue_ranges(s, range_cb, &g, &max_id), 0);
    assert_true(max_id == 9);
    assert_int_equal(g.n, 0); /* every queue is empty now */
    store_close(s);
}

/* Oldest first across queues, a chunk at a time, all or nothing. */
static void test_retain_total(void **state)
{
    struct fx *fx = *state;
    struct store *s = open_ok(fx->path);
    put_some(s);
    assert_int_equal(store_commit(s), 0);
    int64_t one = (int64_t)rmq_msg_record_size(0, 4, 1, 10);
    struct gone_log gl = {0};
    int deleted = 0;
    /* 3 messages' worth over: pids 1, 2, 3 (all of T/0) */
    assert_int_equal(store_retain_total(s, 10 * one, 7 * one, 100, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 3);
    assert_true(gl.off[0] == 0 && gl.off[2] == 2);
    /* chunk 2 of what would be 6: T/0 offset 3, then T/1 offset 0 (pid 6) — pid 5 is T/0's newest */
    gl = (struct gone_log){0};
    assert_int_equal(store_retain_total(s, 10 * one, one, 2, gone_cb, &gl, &deleted), 0);
    assert_int_equal(deleted, 2);
    assert_string_equal(gl.key[0], "T/0");
    assert_true(gl.off[0] == 3);
    assert_string_equal(gl.key[1], "T/1");
    assert_true(gl.off[1] == 0);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM messages"), 4);

    /* Failed allocations: RMQ_ENOMEM with nothing deleted, or the same result. */
    int ok = 0;
    for (long k = 0; k < 20 && !ok; k++) {
        gl = (struct gone_log){0};
        rmq_mem_fail_after(k);
        int rc = store_retain_total(s, 10 * one, one, 10, gone_cb, &gl, &deleted);
        rmq_mem_fail_after(-1);
        if (rc == RMQ_ENOMEM) {
            assert_int_equal(gl.n, 0);
            assert_int_equal(deleted, 0);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(deleted, 1); /* T/1 offset 1; the rest are newest of their queue */
        ok = 1;
    }
    assert_true(ok);
    assert_int_equal(store_commit(s), 0);
    assert_int_equal(q_int(fx->path, "SELECT count(*) FROM messages"), 3);
    for (long k = 0; k < 4; k++) {
        rmq_mem_fail_after(k);
        int rc = store_retain_queue(s, "T", 0, 5, 0, 1, 0, 4, NULL, NULL, &deleted);
        rmq_mem_fail_after(-1);
        assert_true(rc == 0 || rc == RMQ_ENOMEM);
    }
    store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TEST(test_put_read_restart),
        FX_TEST(test_put_refused),
        FX_TEST(test_failed_commit_leaves_no_message),
        FX_TEST(test_retention),
        FX_TEST(test_retain_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
