/* message_record.c — see message_record.h. Big-endian throughout, as Java's
 * ByteBuffer writes. The decoder is stricter than a Java client's, which
 * reads field by field and trusts TOTALSIZE only to find the next record:
 * here every length must fit inside TOTALSIZE and add up to it. Pure. */
#include "message_record.h"

#include "crc32.h"
#include "err.h"

#include <assert.h>
#include <string.h>

static size_t host_len(bool v6)
{
    return v6 ? 20 : 8;
}

size_t rmq_msg_record_size(int32_t sys_flag, size_t body_len, size_t topic_len, size_t props_len)
{
    if (body_len > RMQ_MSG_RECORD_MAX || topic_len > INT16_MAX || props_len > INT16_MAX)
        return 0;
    size_t fixed = RMQ_MSG_RECORD_FIXED - 16 + host_len(sys_flag & RMQ_MSG_SYS_BORNHOST_V6) +
                   host_len(sys_flag & RMQ_MSG_SYS_STOREHOST_V6);
    return fixed + (topic_len > 127 ? 1 : 0) + body_len + topic_len + props_len;
}

int32_t rmq_msg_body_crc(const uint8_t *body, size_t len)
{
    return crc32_rocketmq(body, len);
}

static uint8_t *put32(uint8_t *w, uint32_t v)
{
    w[0] = (uint8_t)(v >> 24);
    w[1] = (uint8_t)(v >> 16);
    w[2] = (uint8_t)(v >> 8);
    w[3] = (uint8_t)v;
    return w + 4;
}

static uint8_t *put64(uint8_t *w, uint64_t v)
{
    return put32(put32(w, (uint32_t)(v >> 32)), (uint32_t)v);
}

static uint8_t *put_host(uint8_t *w, const struct rmq_msg_host *h)
{
    size_t n = h->v6 ? 16 : 4;
    memcpy(w, h->ip, n);
    return put32(w + n, (uint32_t)h->port);
}

int rmq_msg_record_encode(const struct rmq_msg_record *r, struct buf *out)
{
    bool born6 = (r->sys_flag & RMQ_MSG_SYS_BORNHOST_V6) != 0;
    bool store6 = (r->sys_flag & RMQ_MSG_SYS_STOREHOST_V6) != 0;
    if (born6 != r->born_host.v6 || store6 != r->store_host.v6 || r->topic_len == 0 || !r->topic ||
        (r->body_len && !r->body) || (r->props_len && !r->props))
        return RMQ_EINVAL;
    size_t size = rmq_msg_record_size(r->sys_flag, r->body_len, r->topic_len, r->props_len);
    if (size == 0)
        return RMQ_EINVAL;
    uint8_t *w0 = buf_reserve(out, size);
    if (!w0)
        return out->cap && buf_live(out) + size > out->cap ? RMQ_E2BIG : RMQ_ENOMEM;
    bool v2 = r->topic_len > 127;
    uint8_t *w = put32(w0, (uint32_t)size);
    w = put32(w, (uint32_t)(v2 ? RMQ_MSG_MAGIC_V2 : RMQ_MSG_MAGIC_V1));
    w = put32(w, (uint32_t)r->body_crc);
    w = put32(w, (uint32_t)r->queue_id);
    w = put32(w, (uint32_t)r->flag);
    w = put64(w, (uint64_t)r->queue_offset);
    w = put64(w, (uint64_t)r->physical_offset);
    w = put32(w, (uint32_t)r->sys_flag);
    w = put64(w, (uint64_t)r->born_ms);
    w = put_host(w, &r->born_host);
    w = put64(w, (uint64_t)r->store_ms);
    w = put_host(w, &r->store_host);
    w = put32(w, (uint32_t)r->reconsume_times);
    w = put64(w, (uint64_t)r->prepared_tx_offset);
    w = put32(w, r->body_len);
    if (r->body_len)
        memcpy(w, r->body, r->body_len);
    w += r->body_len;
    if (v2) {
        *w++ = (uint8_t)(r->topic_len >> 8);
    }
    *w++ = (uint8_t)r->topic_len;
    memcpy(w, r->topic, r->topic_len);
    w += r->topic_len;
    *w++ = (uint8_t)(r->props_len >> 8);
    *w++ = (uint8_t)r->props_len;
    if (r->props_len)
        memcpy(w, r->props, r->props_len);
    w += r->props_len;
    assert(w == w0 + size); /* rmq_msg_record_size counts exactly these fields */
    (void)w;
    buf_commit(out, size);
    return RMQ_OK;
}

/* A bounded reader over one record: every get checks the bytes are there
 * before reading them. */
struct rd {
    const uint8_t *p;
    size_t n, at;
    bool short_read;
};

static const uint8_t *take(struct rd *d, size_t k)
{
    if (d->short_read || d->n - d->at < k) {
        d->short_read = true;
        return NULL;
    }
    const uint8_t *q = d->p + d->at;
    d->at += k;
    return q;
}

static uint32_t get32(struct rd *d)
{
    const uint8_t *q = take(d, 4);
    return q ? (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3] : 0;
}

static uint64_t get64(struct rd *d)
{
    uint64_t hi = get32(d);
    return hi << 32 | get32(d);
}

static uint16_t get16(struct rd *d)
{
    const uint8_t *q = take(d, 2);
    return q ? (uint16_t)(q[0] << 8 | q[1]) : 0;
}

static void get_host(struct rd *d, bool v6, struct rmq_msg_host *h)
{
    size_t k = v6 ? 16 : 4;
    const uint8_t *q = take(d, k);
    h->v6 = v6;
    if (q)
        memcpy(h->ip, q, k);
    h->port = (int32_t)get32(d);
}

static int refuse(struct rmq_msg_record *r, int code, char *err, size_t errlen, const char *what)
{
    *r = (struct rmq_msg_record){0};
    return rmq_fail(err, errlen, code, "message record: %s", what);
}

/* The fields after TOTALSIZE, read from the record's own bytes. */
static int decode_fields(struct rd *d, struct rmq_msg_record *r, char *err, size_t errlen)
{
    r->magic = (int32_t)get32(d);
    if (r->magic != RMQ_MSG_MAGIC_V1 && r->magic != RMQ_MSG_MAGIC_V2)
        return refuse(r, RMQ_EPROTO, err, errlen, "bad MAGICCODE");
    r->body_crc = (int32_t)get32(d);
    r->queue_id = (int32_t)get32(d);
    r->flag = (int32_t)get32(d);
    r->queue_offset = (int64_t)get64(d);
    r->physical_offset = (int64_t)get64(d);
    r->sys_flag = (int32_t)get32(d);
    r->born_ms = (int64_t)get64(d);
    get_host(d, (r->sys_flag & RMQ_MSG_SYS_BORNHOST_V6) != 0, &r->born_host);
    r->store_ms = (int64_t)get64(d);
    get_host(d, (r->sys_flag & RMQ_MSG_SYS_STOREHOST_V6) != 0, &r->store_host);
    r->reconsume_times = (int32_t)get32(d);
    r->prepared_tx_offset = (int64_t)get64(d);
    uint32_t body_len = get32(d);
    if (d->short_read)
        return refuse(r, RMQ_EPROTO, err, errlen, "TOTALSIZE ends inside the fixed fields");
    if (body_len > RMQ_MSG_RECORD_MAX || body_len > d->n - d->at)
        return refuse(r, RMQ_EPROTO, err, errlen, "body length past TOTALSIZE");
    r->body_len = body_len;
    r->body = take(d, body_len);
    size_t topic_len;
    if (r->magic == RMQ_MSG_MAGIC_V1) {
        const uint8_t *q = take(d, 1);
        /* A Java reader takes this byte as signed: 128..255 is negative. */
        if (q && *q > 127)
            return refuse(r, RMQ_EPROTO, err, errlen, "v1 topic length over 127");
        topic_len = q ? *q : 0;
    } else {
        topic_len = get16(d);
        if (topic_len > INT16_MAX)
            return refuse(r, RMQ_EPROTO, err, errlen, "v2 topic length negative");
    }
    if (d->short_read || topic_len > d->n - d->at)
        return refuse(r, RMQ_EPROTO, err, errlen, "topic past TOTALSIZE");
    if (topic_len == 0)
        return refuse(r, RMQ_EPROTO, err, errlen, "empty topic");
    r->topic_len = (uint16_t)topic_len;
    r->topic = (const char *)take(d, topic_len);
    uint16_t props_len = get16(d);
    if (d->short_read)
        return refuse(r, RMQ_EPROTO, err, errlen, "properties length past TOTALSIZE");
    if (props_len > INT16_MAX)
        return refuse(r, RMQ_EPROTO, err, errlen, "properties length negative");
    if (props_len > d->n - d->at)
        return refuse(r, RMQ_EPROTO, err, errlen, "properties past TOTALSIZE");
    r->props_len = props_len;
    r->props = (const char *)take(d, props_len);
    if (d->at != d->n)
        return refuse(r, RMQ_EPROTO, err, errlen, "TOTALSIZE larger than the fields");
    return RMQ_OK;
}

int rmq_msg_record_decode(const uint8_t *p, size_t n, struct rmq_msg_record *r, size_t *used, char *err,
                          size_t errlen)
{
    *r = (struct rmq_msg_record){0};
    if (n < 4)
        return refuse(r, RMQ_EAGAIN, err, errlen, "truncated TOTALSIZE");
    uint32_t total = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    if (total < RMQ_MSG_RECORD_FIXED ||
        total > RMQ_MSG_RECORD_MAX + RMQ_MSG_RECORD_FIXED + 24 + 2 * INT16_MAX)
        return refuse(r, RMQ_EPROTO, err, errlen, "TOTALSIZE out of range");
    if (n < total)
        return refuse(r, RMQ_EAGAIN, err, errlen, "truncated record");
    struct rd d = {p, total, 4, false};
    int rc = decode_fields(&d, r, err, errlen);
    if (rc)
        return rc;
    if (r->body_len == 0)
        r->body = NULL;
    if (r->props_len == 0)
        r->props = NULL;
    *used = total;
    return RMQ_OK;
}
