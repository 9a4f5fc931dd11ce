/* fuzz_lock_body.c — the Lock/UnlockBatchRequestBody parser.
 *
 * Invariants: a rejected body returns RMQ_EPROTO with a reason and leaves
 * the struct zeroed; an accepted one has non-empty ids and queues with
 * non-empty names and a non-negative queueId; written back with
 * rmq_lock_body_encode it parses to an equal struct, and its queues written
 * with rmq_lock_ok_encode parse back with rmq_lock_ok_parse; with
 * one allocation failed on purpose the parser either succeeds identically
 * or returns RMQ_ENOMEM and owns nothing.
 */
#include "err.h"
#include "fuzz_common.h"
#include "lock_body.h"

static bool lock_equal(const struct rmq_lock_body *a, const struct rmq_lock_body *b)
{
    if (!fuzz_str_eq(a->client_id, b->client_id) || !fuzz_str_eq(a->consumer_group, b->consumer_group) ||
        a->nmqs != b->nmqs)
        return false;
    for (size_t i = 0; i < a->nmqs; i++)
        if (!fuzz_str_eq(a->mqs[i].topic, b->mqs[i].topic) ||
            !fuzz_str_eq(a->mqs[i].broker_name, b->mqs[i].broker_name) ||
            a->mqs[i].queue_id != b->mqs[i].queue_id)
            return false;
    return true;
}

static bool is_zero(const struct rmq_lock_body *b)
{
    static const struct rmq_lock_body zero;
    return memcmp(b, &zero, sizeof zero) == 0;
}

static void check_round_trip(const struct rmq_lock_body *b)
{
    struct buf ok, req;
    buf_init(&ok, 0);
    buf_init(&req, 0);
    char err[200] = "";
    /* The reply body: its queues parse back equal. */
    FUZZ_CHECK(rmq_lock_ok_encode(b->mqs, b->nmqs, &ok) == RMQ_OK);
    struct rmq_mq *mqs = NULL;
    size_t n = 0;
    int rc = rmq_lock_ok_parse(buf_head(&ok), buf_live(&ok), &mqs, &n, err, sizeof err);
    if (rc)
        fprintf(stderr, "reply re-parse failed: %d %s\n", rc, err);
    FUZZ_CHECK(rc == RMQ_OK);
    struct rmq_lock_body as_reply = {b->client_id, b->consumer_group, mqs, n};
    FUZZ_CHECK(lock_equal(b, &as_reply));
    rmq_mqs_free(mqs, n);
    /* The request body: parses back to an equal struct. */
    FUZZ_CHECK(rmq_lock_body_encode(b, &req) == RMQ_OK);
    struct rmq_lock_body back = {0};
    rc = rmq_lock_body_parse(buf_head(&req), buf_live(&req), &back, err, sizeof err);
    if (rc)
        fprintf(stderr, "re-parse failed: %d %s\n", rc, err);
    FUZZ_CHECK(rc == RMQ_OK);
    FUZZ_CHECK(lock_equal(b, &back));
    rmq_lock_body_clear(&back);
    buf_free(&ok);
    buf_free(&req);
}

static void check_accepted(const struct rmq_lock_body *b)
{
    FUZZ_CHECK(b->client_id && b->client_id[0] && b->consumer_group && b->consumer_group[0]);
    FUZZ_CHECK(b->nmqs == 0 || b->mqs);
    for (size_t i = 0; i < b->nmqs; i++) {
        FUZZ_CHECK(b->mqs[i].topic && b->mqs[i].topic[0]);
        FUZZ_CHECK(b->mqs[i].broker_name && b->mqs[i].broker_name[0]);
        FUZZ_CHECK(b->mqs[i].queue_id >= 0);
    }
    check_round_trip(b);
}

FUZZ_DECODER(lock_body, struct rmq_lock_body, rmq_lock_body_parse, rmq_lock_body_parse,
             fuzz_fail_point_after_json, lock_equal, is_zero, rmq_lock_body_clear, check_accepted)

FUZZ_DECODER_MAIN(lock_body, struct rmq_lock_body)
