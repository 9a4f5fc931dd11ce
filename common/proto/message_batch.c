/* message_batch.c — see message_batch.h. A broker reads the inner messages
 * field by field and uses TOTALSIZE only to count them; here the two must
 * agree, so a body that would be counted one way and read another is
 * refused. Pure; one thread. */
#include "message_batch.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <string.h>

static uint32_t rd32(const uint8_t *q)
{
    return (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
}

/* Checks the inner message at p[0..left) and fills *it (may be NULL);
 * *size gets its TOTALSIZE. */
static int item_at(const uint8_t *p, size_t left, size_t index, struct rmq_msg_batch_item *it, size_t *size,
                   char *err, size_t errlen)
{
    if (left < RMQ_MSG_BATCH_ITEM_FIXED)
        return rmq_fail(err, errlen, RMQ_EPROTO, "batch message %zu: truncated (%zu bytes left)", index,
                        left);
    uint32_t total = rd32(p);
    uint32_t body_len = rd32(p + 16);
    if (total < RMQ_MSG_BATCH_ITEM_FIXED || total > left)
        return rmq_fail(err, errlen, RMQ_EPROTO, "batch message %zu: TOTALSIZE %u out of range", index,
                        (unsigned)total);
    if (body_len > total - RMQ_MSG_BATCH_ITEM_FIXED)
        return rmq_fail(err, errlen, RMQ_EPROTO, "batch message %zu: body length %u past TOTALSIZE", index,
                        (unsigned)body_len);
    const uint8_t *pl = p + 20 + body_len;
    uint16_t props_len = (uint16_t)(pl[0] << 8 | pl[1]);
    if (props_len > INT16_MAX)
        return rmq_fail(err, errlen, RMQ_EPROTO, "batch message %zu: properties length negative", index);
    if ((size_t)RMQ_MSG_BATCH_ITEM_FIXED + body_len + props_len != total)
        return rmq_fail(err, errlen, RMQ_EPROTO, "batch message %zu: TOTALSIZE %u disagrees with its fields",
                        index, (unsigned)total);
    if (it)
        *it = (struct rmq_msg_batch_item){
            .magic = (int32_t)rd32(p + 4),
            .body_crc = (int32_t)rd32(p + 8),
            .flag = (int32_t)rd32(p + 12),
            .body = body_len ? p + 20 : NULL,
            .body_len = body_len,
            .props = props_len ? (const char *)pl + 2 : NULL,
            .props_len = props_len,
        };
    *size = total;
    return RMQ_OK;
}

int rmq_msg_batch_decode(const uint8_t *p, size_t n, struct rmq_msg_batch *out, char *err, size_t errlen)
{
    *out = (struct rmq_msg_batch){0};
    if (n == 0 || !p)
        return rmq_fail(err, errlen, RMQ_EPROTO, "batch: empty body");
    size_t count = 0, size;
    for (size_t at = 0; at < n; at += size, count++) {
        int rc = item_at(p + at, n - at, count, NULL, &size, err, errlen);
        if (rc)
            return rc;
    }
    struct rmq_msg_batch_item *items = rmq_calloc(count, sizeof *items);
    if (!items)
        return rmq_fail(err, errlen, RMQ_ENOMEM, "batch: %zu messages", count);
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        int rc = item_at(p + at, n - at, i, &items[i], &size, err, errlen);
        assert(rc == RMQ_OK); /* the counting pass accepted exactly these bytes */
        (void)rc;
        at += size;
    }
    assert(at == n);
    out->items = items;
    out->n = count;
    return RMQ_OK;
}

void rmq_msg_batch_clear(struct rmq_msg_batch *b)
{
    if (!b)
        return;
    rmq_free(b->items);
    *b = (struct rmq_msg_batch){0};
}

int rmq_msg_batch_encode_item(int32_t flag, const uint8_t *body, size_t body_len, const char *props,
                              size_t props_len, struct buf *out)
{
    if (props_len > INT16_MAX || body_len > (size_t)INT32_MAX - RMQ_MSG_BATCH_ITEM_FIXED - INT16_MAX ||
        (body_len && !body) || (props_len && !props))
        return RMQ_EINVAL;
    size_t total = RMQ_MSG_BATCH_ITEM_FIXED + body_len + props_len;
    size_t mark = buf_live(out);
    int rc = buf_append_be32(out, (uint32_t)total);
    if (!rc)
        rc = buf_append_be32(out, 0);
    if (!rc)
        rc = buf_append_be32(out, 0);
    if (!rc)
        rc = buf_append_be32(out, (uint32_t)flag);
    if (!rc)
        rc = buf_append_be32(out, (uint32_t)body_len);
    if (!rc && body_len)
        rc = buf_append(out, body, body_len);
    if (!rc)
        rc = buf_append_be16(out, (uint16_t)props_len);
    if (!rc && props_len)
        rc = buf_append(out, props, props_len);
    return buf_undo_on_error(out, mark, rc);
}
