/* remoting_frame.h — RocketMQ remoting frames: encode and streaming decode.
 *
 * Layout (big-endian): total_length(4) = 4 + header_len + body_len;
 * header_word(4) = serialize_type << 24 | header_len; header; body.
 * The decoder accepts bytes in any chunking, enforces the frame limit before
 * allocating, and decodes the header with the codec its type byte names
 * (remoting_header_json / remoting_header_rmq). Pure; one thread.
 */
#ifndef RMQ_REMOTING_FRAME_H
#define RMQ_REMOTING_FRAME_H

#include "buf.h"
#include "remoting_cmd.h"

#include <stddef.h>
#include <stdint.h>

#define RMQ_FRAME_MAX_DEFAULT (16u * 1024u * 1024u)
/* A real client's header is a few hundred bytes (its payloads travel in the
 * body); the cap bounds the work one header can cost the decoder, which is
 * linear in the header but runs on the loop thread. */
#define RMQ_HEADER_MAX_DEFAULT (64u * 1024u)

struct rmq_frame_decoder {
    struct buf in;     /* buffered, not yet decoded bytes */
    size_t max_frame;  /* limit on total_length + 4 */
    size_t max_header; /* limit on the header length */
    char error[160];   /* why the last RMQ_EPROTO/RMQ_E2BIG happened */
};

/* max_frame / max_header 0 take the defaults above. */
void rmq_frame_decoder_init(struct rmq_frame_decoder *d, size_t max_frame, size_t max_header);
void rmq_frame_decoder_free(struct rmq_frame_decoder *d);

/* Appends received bytes. 0, or RMQ_ENOMEM. (The frame limit is checked in
 * rmq_frame_decoder_next, which sees the length prefix.) */
int rmq_frame_decoder_feed(struct rmq_frame_decoder *d, const uint8_t *data, size_t len);

/* Decodes the next complete frame into *cmd (which must be initialised and
 * empty; on success it owns new memory). Returns 0 when a frame was decoded,
 * RMQ_EAGAIN when no complete frame is buffered, RMQ_E2BIG when the length
 * prefix is over the limit, RMQ_EPROTO for a malformed frame or header, or
 * RMQ_ENOMEM. After any error other than RMQ_EAGAIN the stream is unusable
 * and the connection must be closed; d->error says why. */
int rmq_frame_decoder_next(struct rmq_frame_decoder *d, struct rmq_cmd *cmd);

/* One-shot decode of a complete frame in data[0..len) (e.g. a capture);
 * *consumed receives the frame's size. Same returns as above; the header
 * limit is RMQ_HEADER_MAX_DEFAULT. */
int rmq_frame_decode(const uint8_t *data, size_t len, size_t max_frame, struct rmq_cmd *cmd, size_t *consumed,
                     char *err, size_t errlen);

/* Appends the whole frame for cmd, header in cmd->serialize_type. */
int rmq_frame_encode(const struct rmq_cmd *cmd, struct buf *out);

#endif
