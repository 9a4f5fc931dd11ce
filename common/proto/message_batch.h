/* message_batch.h — the body of SEND_BATCH_MESSAGE (320): messages back to
 * back, each TOTALSIZE, MAGICCODE, BODYCRC, FLAG, body length + body,
 * properties length (2 bytes) + properties (docs/protocol.md, "Messages:
 * the stored record and the message id"). Pure; one thread.
 */
#ifndef RMQ_MESSAGE_BATCH_H
#define RMQ_MESSAGE_BATCH_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

/* The size of an inner message with an empty body and no properties. */
#define RMQ_MSG_BATCH_ITEM_FIXED 22

/* One inner message; body and props point into the decoded input. */
struct rmq_msg_batch_item {
    int32_t magic;    /* clients write 0; brokers ignore it */
    int32_t body_crc; /* clients write 0; brokers compute their own */
    int32_t flag;
    const uint8_t *body; /* NULL when body_len is 0 */
    uint32_t body_len;
    const char *props; /* name \x01 value \x02 ...; NULL when props_len is 0 */
    uint16_t props_len;
};

struct rmq_msg_batch {
    struct rmq_msg_batch_item *items; /* owned */
    size_t n;
};

/* Decodes a whole batch body p[0..n) into *out (zero it first): at least
 * one message, each TOTALSIZE equal to its fields' sizes, the last ending
 * at n. The item array is counted before it is allocated. 0, RMQ_EPROTO
 * (err names the message and the field) or RMQ_ENOMEM; on failure *out is
 * empty. The items borrow p. */
int rmq_msg_batch_decode(const uint8_t *p, size_t n, struct rmq_msg_batch *out, char *err, size_t errlen);
void rmq_msg_batch_clear(struct rmq_msg_batch *b);

/* Appends one inner message as a client encodes it (MAGICCODE and BODYCRC
 * 0). RMQ_EINVAL for properties over 32767 bytes or a body over INT32_MAX
 * minus the fixed part; out unchanged on error. */
int rmq_msg_batch_encode_item(int32_t flag, const uint8_t *body, size_t body_len, const char *props,
                              size_t props_len, struct buf *out);

#endif
