/* lock_body.c — see lock_body.h. Field readers and writers are
 * body_json.c's. Pure; one thread. */
#include "lock_body.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#ifndef NDEBUG
/* Parsed queues: named, with a queue id the reader kept non-negative (the
 * lock table's key prints it as one). */
static int mq_set_sanity(const struct rmq_mq *mqs, size_t n)
{
    assert((mqs != NULL) == (n > 0));
    for (size_t i = 0; i < n; i++)
        assert(mqs[i].topic && mqs[i].broker_name && mqs[i].queue_id >= 0);
    return 1;
}
#endif

static int parse_mq(const json_t *o, const char *path, struct rmq_mq *mq, const struct rmq_json_err *pe)
{
    if (!json_is_object(o))
        return rmq_fail(pe->err, pe->errlen, RMQ_EPROTO, "%s: expected an object", path);
    int64_t qid = -1;
    int rc;
    if ((rc = rmq_json_read_required_str(o, "topic", path, &mq->topic, pe)) ||
        (rc = rmq_json_read_required_str(o, "brokerName", path, &mq->broker_name, pe)) ||
        (rc = rmq_json_read_long(o, "queueId", path, 0, INT32_MAX, &qid, pe)))
        return rc;
    if (qid < 0)
        return rmq_json_bad_field(pe, path, "queueId", "expected a non-negative integer");
    mq->queue_id = (int32_t)qid;
    return RMQ_OK;
}

/* The array `key` of root into a new array of queues (*mqs NULL when empty;
 * partly filled on failure, for the caller to free). */
static int parse_mq_set(const json_t *root, const char *key, struct rmq_mq **mqs, size_t *n,
                        const struct rmq_json_err *pe)
{
    const json_t *arr;
    int rc;
    if ((rc = rmq_json_read_array(root, key, "", &arr, pe)) ||
        (rc = rmq_json_alloc_elems(json_array_size(arr), sizeof **mqs, (void **)mqs, pe)))
        return rc;
    *n = json_array_size(arr);
    for (size_t i = 0; i < *n; i++) {
        char path[40];
        snprintf(path, sizeof path, "%s[%zu]", key, i);
        if ((rc = parse_mq(json_array_get(arr, i), path, &(*mqs)[i], pe)))
            return rc;
    }
    return RMQ_OK;
}

/* Parses body[0..len) into *out (zero-initialised). On failure *out is
 * cleared. */
int rmq_lock_body_parse(const uint8_t *body, size_t len, struct rmq_lock_body *out, char *err, size_t errlen)
{
    const struct rmq_json_err pe = {err, errlen};
    json_t *root;
    int rc = rmq_json_load_object(body, len, "lock body", &root, err, errlen);
    if (rc)
        return rc;
    if ((rc = rmq_json_read_required_str(root, "clientId", "", &out->client_id, &pe)) ||
        (rc = rmq_json_read_required_str(root, "consumerGroup", "", &out->consumer_group, &pe)) ||
        (rc = parse_mq_set(root, "mqSet", &out->mqs, &out->nmqs, &pe)))
        rmq_lock_body_clear(out);
    assert(rc || (out->client_id && out->consumer_group && mq_set_sanity(out->mqs, out->nmqs)));
    json_decref(root);
    return rc;
}

void rmq_lock_body_clear(struct rmq_lock_body *b)
{
    if (!b)
        return;
    rmq_mqs_free(b->mqs, b->nmqs);
    rmq_free(b->client_id);
    rmq_free(b->consumer_group);
    memset(b, 0, sizeof *b);
}

int rmq_lock_ok_parse(const uint8_t *body, size_t len, struct rmq_mq **mqs, size_t *n, char *err,
                      size_t errlen)
{
    const struct rmq_json_err pe = {err, errlen};
    json_t *root;
    *mqs = NULL;
    *n = 0;
    int rc = rmq_json_load_object(body, len, "lock reply", &root, err, errlen);
    if (rc)
        return rc;
    if ((rc = parse_mq_set(root, "lockOKMQSet", mqs, n, &pe))) {
        rmq_mqs_free(*mqs, *n);
        *mqs = NULL;
        *n = 0;
    }
    assert(rc || mq_set_sanity(*mqs, *n));
    json_decref(root);
    return rc;
}

/* ---- encode ------------------------------------------------------------- */

static int append_mq_set(struct buf *out, const struct rmq_mq *mqs, size_t n)
{
    int rc = buf_append_u8(out, '[');
    for (size_t i = 0; !rc && i < n; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = rmq_json_append_mq(out, mqs[i].topic, mqs[i].broker_name, mqs[i].queue_id);
    }
    return rc ? rc : buf_append_u8(out, ']');
}

int rmq_lock_body_encode(const struct rmq_lock_body *b, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_u8(out, '{');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "clientId", b->client_id, ',');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "consumerGroup", b->consumer_group, ',');
    if (!rc)
        rc = buf_append_str(out, "\"mqSet\":");
    if (!rc)
        rc = append_mq_set(out, b->mqs, b->nmqs);
    return rmq_json_end_object(out, mark, rc);
}

int rmq_lock_ok_encode(const struct rmq_mq *mqs, size_t n, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"lockOKMQSet\":");
    if (!rc)
        rc = append_mq_set(out, mqs, n);
    return rmq_json_end_object(out, mark, rc);
}
