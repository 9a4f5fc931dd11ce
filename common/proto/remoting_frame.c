/* remoting_frame.c — remoting frames: streaming decoder and encoder.
 *
 * Frame (PROTOCOL: docs/protocol.md §1.1, big-endian): total_length i32 (bytes after itself),
 * header_word i32 (serialize type << 24 | header length), header, body.
 * The decoder judges the length prefix and the header word as soon as they
 * arrive, so an oversized or malformed frame is refused before its bytes are
 * waited for or allocated. Nothing is consumed from the input until a frame
 * decodes, which makes RMQ_ENOMEM retryable. Pure; one thread.
 */
#include "remoting_frame.h"

#include "err.h"
#include "mem.h"
#include "remoting_header.h"

#include <assert.h>
#include <string.h>

#define FRAME_PREFIX 4
#define FRAME_HEADER_WORD 4

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void rmq_frame_decoder_init(struct rmq_frame_decoder *d, size_t max_frame, size_t max_header)
{
    /* The buffer is not capped: the caller bounds each read, and the frame
     * limit below bounds how much a single frame may make it wait for. */
    buf_init(&d->in, 0);
    d->max_frame = max_frame ? max_frame : RMQ_FRAME_MAX_DEFAULT;
    d->max_header = max_header ? max_header : RMQ_HEADER_MAX_DEFAULT;
    d->error[0] = 0;
}

void rmq_frame_decoder_free(struct rmq_frame_decoder *d)
{
    if (!d)
        return;
    buf_free(&d->in);
}

int rmq_frame_decoder_feed(struct rmq_frame_decoder *d, const uint8_t *data, size_t len)
{
    return buf_append(&d->in, data, len);
}

/* Validates what is known of the frame at p[0..avail) and, when the whole
 * frame is there, stores its size in *frame_len. RMQ_EAGAIN means the bytes
 * so far are acceptable but incomplete. */
static int check_frame(const uint8_t *p, size_t avail, size_t max_frame, size_t max_header, size_t *frame_len,
                       char *err, size_t errlen)
{
    if (avail < FRAME_PREFIX)
        return RMQ_EAGAIN;
    int32_t total = (int32_t)load_be32(p);
    if (total < FRAME_HEADER_WORD)
        return rmq_fail(err, errlen, RMQ_EPROTO, "frame: total_length %d is below 4", (int)total);
    /* PROTOCOL (docs/protocol.md §1.1): the limit counts the prefix too, like Netty's max frame. */
    if ((size_t)total + FRAME_PREFIX > max_frame)
        return rmq_fail(err, errlen, RMQ_E2BIG, "frame: %zu bytes is over the %zu-byte limit",
                        (size_t)total + FRAME_PREFIX, max_frame);
    if (avail < FRAME_PREFIX + FRAME_HEADER_WORD)
        return RMQ_EAGAIN;
    uint32_t word = load_be32(p + FRAME_PREFIX);
    unsigned type = word >> 24;
    size_t hlen = word & 0xFFFFFFu;
    if (type != RMQ_SERIALIZE_JSON && type != RMQ_SERIALIZE_ROCKETMQ)
        return rmq_fail(err, errlen, RMQ_EPROTO, "frame: unknown serialize type %u", type);
    if (hlen > (size_t)total - FRAME_HEADER_WORD)
        return rmq_fail(err, errlen, RMQ_EPROTO, "frame: header length %zu exceeds total_length %d", hlen,
                        (int)total);
    if (hlen > max_header)
        return rmq_fail(err, errlen, RMQ_E2BIG,
                        "frame: header of %zu bytes is over the %zu-byte header limit", hlen, max_header);
    if (avail - FRAME_PREFIX < (size_t)total)
        return RMQ_EAGAIN;
    *frame_len = FRAME_PREFIX + (size_t)total;
    assert(*frame_len <= avail && *frame_len <= max_frame);
    assert(FRAME_PREFIX + FRAME_HEADER_WORD + hlen <= *frame_len);
    return RMQ_OK;
}

/* Decodes the complete, checked frame p[0..frame_len) into cmd. On failure
 * cmd is left cleared. */
static int decode_checked(const uint8_t *p, size_t frame_len, struct rmq_cmd *cmd, char *err, size_t errlen)
{
    uint32_t word = load_be32(p + FRAME_PREFIX);
    size_t hlen = word & 0xFFFFFFu;
    const uint8_t *hdr = p + FRAME_PREFIX + FRAME_HEADER_WORD;
    assert(FRAME_PREFIX + FRAME_HEADER_WORD + hlen <= frame_len); /* check_frame vouched */
    size_t body_len = frame_len - FRAME_PREFIX - FRAME_HEADER_WORD - hlen;
    int rc = (word >> 24) == RMQ_SERIALIZE_JSON ? rmq_header_json_decode(hdr, hlen, cmd, err, errlen)
                                                : rmq_header_rmq_decode(hdr, hlen, cmd, err, errlen);
    if (rc)
        return rc;
    if (rmq_cmd_set_body_copy(cmd, hdr + hlen, body_len)) {
        rmq_cmd_clear(cmd);
        return rmq_fail(err, errlen, RMQ_ENOMEM, "out of memory");
    }
    assert(cmd->body_len == body_len);
    return RMQ_OK;
}

static int decode_limited(const uint8_t *data, size_t len, size_t max_frame, size_t max_header,
                          struct rmq_cmd *cmd, size_t *consumed, char *err, size_t errlen)
{
    size_t frame_len = 0;
    int rc = check_frame(data, len, max_frame, max_header, &frame_len, err, errlen);
    if (rc)
        return rc;
    rc = decode_checked(data, frame_len, cmd, err, errlen);
    if (!rc && consumed)
        *consumed = frame_len;
    return rc;
}

int rmq_frame_decode(const uint8_t *data, size_t len, size_t max_frame, struct rmq_cmd *cmd, size_t *consumed,
                     char *err, size_t errlen)
{
    return decode_limited(data, len, max_frame ? max_frame : RMQ_FRAME_MAX_DEFAULT, RMQ_HEADER_MAX_DEFAULT,
                          cmd, consumed, err, errlen);
}

int rmq_frame_decoder_next(struct rmq_frame_decoder *d, struct rmq_cmd *cmd)
{
    size_t used = 0;
    int rc = decode_limited(buf_head(&d->in), buf_live(&d->in), d->max_frame, d->max_header, cmd, &used,
                            d->error, sizeof d->error);
    if (rc)
        return rc;
    assert(used > 0 && used <= buf_live(&d->in));
    buf_consume(&d->in, used);
    return RMQ_OK;
}

/* Appends the frame: the two length words are reserved first and patched
 * once the header's size is known, so the header is encoded only once. On
 * failure the buffer is restored. RMQ_E2BIG when the header or the whole
 * frame cannot be described by the length fields. */
int rmq_frame_encode(const struct rmq_cmd *cmd, struct buf *out)
{
    static const uint8_t zero[FRAME_PREFIX + FRAME_HEADER_WORD];
    size_t mark = buf_live(out);
    int rc = buf_append(out, zero, sizeof zero);
    if (rc)
        return rc;
    rc = cmd->serialize_type == RMQ_SERIALIZE_ROCKETMQ ? rmq_header_rmq_encode(cmd, out)
                                                       : rmq_header_json_encode(cmd, out);
    if (rc)
        goto fail;
    size_t hlen = buf_live(out) - mark - sizeof zero;
    if (hlen > 0xFFFFFFu || cmd->body_len > (size_t)INT32_MAX - FRAME_HEADER_WORD - hlen) {
        rc = RMQ_E2BIG;
        goto fail;
    }
    if ((rc = buf_append(out, cmd->body, cmd->body_len)))
        goto fail;
    assert(buf_live(out) == mark + sizeof zero + hlen + cmd->body_len);
    uint8_t *w = out->data + out->pos + mark;
    store_be32(w, (uint32_t)(FRAME_HEADER_WORD + hlen + cmd->body_len));
    uint8_t type =
        cmd->serialize_type == RMQ_SERIALIZE_ROCKETMQ ? RMQ_SERIALIZE_ROCKETMQ : RMQ_SERIALIZE_JSON;
    store_be32(w + FRAME_PREFIX, (uint32_t)type << 24 | (uint32_t)hlen);
    return RMQ_OK;
fail:
    out->len = out->pos + mark;
    return rc;
}
