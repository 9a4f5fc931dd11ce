/* test_reply.c — answering requests (server/requests/reply.c): replies that
 * report a stored fact are held until the store commit and become
 * SYSTEM_ERROR when it fails; oneway requests are never answered; replies
 * keep the request's opaque and header type; the remarks of missing and
 * malformed fields (docs/protocol.md §1.4, §1.5, §5.2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "buf.h"
#include "conn.h"
#include "offset_requests.h"
#include "reply.h"
#include "request_codes.h"
#include "store.h"
#include "test_support.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

static int setup(void **state)
{
    *state = fx_new(NULL);
    return 0;
}

static int teardown(void **state)
{
    fx_free(*state);
    return 0;
}

static void update_offset(struct fx *fx, size_t i, int32_t opaque, int32_t flag, int64_t off)
{
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_UPDATE_CONSUMER_OFFSET, opaque, flag);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", "g"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "queueId", "3"), 0);
    assert_int_equal(rmq_cmd_ext_set_i64(&req, "commitOffset", off), 0);
    offset_req_update(&fx->b, fx_conn(fx, i), &req);
    rmq_cmd_clear(&req);
}

/* The SUCCESS of UPDATE_CONSUMER_OFFSET leaves only after the commit: while
 * the batch is open nothing reaches the client and the row is invisible. */
static void test_held_until_commit(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    fx_iterate(fx);
    update_offset(fx, a, 5, 0, 42);
    assert_int_equal(fx->b.nacks, 1);
    assert_true(store_in_batch(fx->b.store));
    conn_set_flush(fx->b.conns); /* a flush alone does not release it */
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets"), 0);

    fx_iterate(fx);
    assert_int_equal(fx->last_commit_rc, 0);
    assert_int_equal(fx->b.nacks, 0);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 5, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets WHERE group_name='g' AND topic='T' "
                                    "AND queue_id=3"),
                     42);
}

/* A commit that cannot write (RLIMIT_FSIZE stops the WAL from growing):
 * the held reply becomes SYSTEM_ERROR saying it was not stored, and the
 * next write is acknowledged normally once the disk has room again. */
static void test_failed_commit_turns_held_reply_into_system_error(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    fx_iterate(fx);
    char *big = test_big_json(512 * 1024);
    assert_non_null(big);
    struct store_event ev = {.ts_ms = 2, .group = "g", .kind = "join", .before_json = big};
    assert_int_equal(store_append_event(fx->b.store, &ev, NULL), 0);
    update_offset(fx, a, 5, 0, 42);
    update_offset(fx, b, 6, 0, 43);
    assert_int_equal(fx->b.nacks, 2);

    struct test_fsize_guard guard;
    assert_int_equal(test_fsize_limit(fx->db, &guard), 0);
    fx_iterate(fx);
    assert_int_equal(test_fsize_restore(&guard), 0);
    free(big);

    assert_int_not_equal(fx->last_commit_rc, 0);
    assert_int_equal(fx->b.stats.commit_failures, 1);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 5, &r), RMQ_RESP_SYSTEM_ERROR);
    assert_non_null(r.remark);
    assert_non_null(strstr(r.remark, "not stored"));
    rmq_cmd_clear(&r);
    assert_int_equal(fx_reply(fx, b, 6, &r), RMQ_RESP_SYSTEM_ERROR);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_sql_int(fx, "SELECT count(*) FROM offsets"), 0);

    update_offset(fx, a, 7, 0, 44);
    fx_iterate(fx);
    assert_int_equal(fx->last_commit_rc, 0);
    assert_int_equal(fx_reply(fx, a, 7, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets"), 44);
}

/* A write later in the same turn that SQLite answers by rolling the whole
 * batch back (a full disk met while the page cache spills): the offset
 * commit held before it went with the batch, so its reply must become
 * SYSTEM_ERROR, and the live offset must fall back to the stored one. */
static void test_batch_rolled_back_by_sqlite_fails_held_replies(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    update_offset(fx, a, 4, 0, 40);
    fx_iterate(fx);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, a, 4, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);

    update_offset(fx, a, 5, 0, 42);
    assert_int_equal(fx->b.nacks, 1);
    /* Bigger than SQLite's page cache: the statement itself must write. */
    char *big = test_big_json(8 * 1024 * 1024);
    assert_non_null(big);
    struct test_fsize_guard guard;
    assert_int_equal(test_fsize_limit(fx->db, &guard), 0);
    struct store_event ev = {.ts_ms = 2, .group = "g", .kind = "join", .before_json = big};
    int rc = store_append_event(fx->b.store, &ev, NULL);
    assert_int_equal(test_fsize_restore(&guard), 0);
    free(big);
    assert_int_not_equal(rc, 0);
    assert_false(store_in_batch(fx->b.store)); /* SQLite rolled the batch back by itself */

    fx_iterate(fx);
    assert_int_not_equal(fx->last_commit_rc, 0);
    assert_int_equal(fx_reply(fx, a, 5, &r), RMQ_RESP_SYSTEM_ERROR);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets"), 40);
    int64_t live = -1;
    assert_int_equal(offsets_get(&fx->b.offsets, "g", "T", 3, &live), 0);
    assert_int_equal(live, 40);

    /* The loss is reported once: the next commit is acknowledged. */
    update_offset(fx, a, 6, 0, 43);
    fx_iterate(fx);
    assert_int_equal(fx->last_commit_rc, 0);
    assert_int_equal(fx_reply(fx, a, 6, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets"), 43);
}

/* A oneway request is stored but never answered, not even when held. */
static void test_oneway_never_answered(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    update_offset(fx, a, 5, RMQ_FLAG_ONEWAY, 9);
    assert_int_equal(fx->b.nacks, 0);
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_QUERY_CONSUMER_OFFSET, 6, RMQ_FLAG_ONEWAY); /* fields missing: an error */
    offset_req_query(&fx->b, fx_conn(fx, a), &req);
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_int_equal(fx_sql_int(fx, "SELECT queue_offset FROM offsets"), 9);
}

/* A connection that closes while its reply is held: the reply is dropped
 * (reply_forget_conn), the others are still sent. */
static void test_held_reply_of_closed_connection_dropped(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx), b = fx_connect(fx);
    update_offset(fx, a, 5, 0, 1);
    update_offset(fx, b, 6, 0, 2);
    conn_close_async(fx_conn(fx, a), "test");
    fx_iterate(fx);
    assert_null(fx->peers[a].c);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_true(fx->peers[a].eof);
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, b, 6, &r), RMQ_RESP_SUCCESS);
    rmq_cmd_clear(&r);
}

/* A reply copies the opaque, sets the response bit and uses the request's
 * header encoding (a ROCKETMQ binary request gets a binary reply). */
static void test_reply_shape(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd req, r;
    fx_request(&req, RMQ_REQ_GET_MIN_OFFSET, 77, 0);
    req.serialize_type = RMQ_SERIALIZE_ROCKETMQ;
    assert_int_equal(rmq_cmd_ext_set(&req, "topic", "T"), 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "queueId", "0"), 0);
    offset_req_get_min(&fx->b, fx_conn(fx, a), &req);
    rmq_cmd_clear(&req);
    fx_iterate(fx);
    assert_int_equal(fx_reply(fx, a, 77, &r), RMQ_RESP_SUCCESS);
    assert_int_equal(r.serialize_type, RMQ_SERIALIZE_ROCKETMQ);
    assert_int_equal(r.flag & RMQ_FLAG_RESPONSE, RMQ_FLAG_RESPONSE);
    assert_string_equal(rmq_cmd_ext_get(&r, "offset"), "0");
    rmq_cmd_clear(&r);
}

/* The remarks of reply_require_i64 / reply_require_str name the field and
 * the request. */
static void test_required_field_remarks(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct {
        const char *topic, *qid, *remark;
    } cases[] = {
        {NULL, "1", "missing field topic in QUERY_CONSUMER_OFFSET request"},
        {"T", NULL, "missing field queueId in QUERY_CONSUMER_OFFSET request"},
        {"T", "x1", "non-integer field queueId in QUERY_CONSUMER_OFFSET request"},
        {"bad\ttopic", "1", "invalid field topic in QUERY_CONSUMER_OFFSET request"},
        {"T", "-1", "queueId out of range"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct rmq_cmd req, r;
        fx_request(&req, RMQ_REQ_QUERY_CONSUMER_OFFSET, (int32_t)k + 1, 0);
        assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", "g"), 0);
        if (cases[k].topic)
            assert_int_equal(rmq_cmd_ext_set(&req, "topic", cases[k].topic), 0);
        if (cases[k].qid)
            assert_int_equal(rmq_cmd_ext_set(&req, "queueId", cases[k].qid), 0);
        offset_req_query(&fx->b, fx_conn(fx, a), &req);
        rmq_cmd_clear(&req);
        fx_iterate(fx);
        int32_t code = fx_reply(fx, a, (int32_t)k + 1, &r);
        if (code != RMQ_RESP_SYSTEM_ERROR || !r.remark || strcmp(r.remark, cases[k].remark))
            fail_msg("case %zu: code %d remark %s", k, code, r.remark ? r.remark : "(none)");
        rmq_cmd_clear(&r);
        assert_int_equal(fx_drain(fx, a), 0);
    }
}

/* reply_body with a failed build closes the connection instead of
 * answering (a client would time out on a missing reply anyway). */
static void test_failed_body_closes_connection(void **state)
{
    struct fx *fx = *state;
    size_t a = fx_connect(fx);
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP, 3, 0);
    struct buf body;
    buf_init(&body, 0);
    assert_int_equal(buf_append_str(&body, "{}"), 0);
    reply_body(&fx->b, fx_conn(fx, a), &req, RMQ_ENOMEM, &body, false);
    rmq_cmd_clear(&req);
    assert_true(fx_conn(fx, a)->closing);
    fx_iterate(fx);
    assert_null(fx->peers[a].c);
    assert_int_equal(fx_drain(fx, a), 0);
    assert_true(fx->peers[a].eof);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

TEST_MAIN(T(test_held_until_commit), T(test_failed_commit_turns_held_reply_into_system_error),
          T(test_batch_rolled_back_by_sqlite_fails_held_replies), T(test_oneway_never_answered),
          T(test_held_reply_of_closed_connection_dropped), T(test_reply_shape),
          T(test_required_field_remarks), T(test_failed_body_closes_connection))
