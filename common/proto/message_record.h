/* message_record.h — one stored message in the broker's binary layout, the
 * form PULL_MESSAGE's FOUND body carries (records back to back): encoded
 * from fields, and decoded into views of the input for tests, replay and
 * peeking (docs/protocol.md, "Messages: the stored record and the message
 * id"). Pure; one thread; no allocation.
 */
#ifndef RMQ_MESSAGE_RECORD_H
#define RMQ_MESSAGE_RECORD_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* MAGICCODE: v1 has a 1-byte topic length, v2 (5.x, topics longer than
 * 127 bytes) a 2-byte one. */
#define RMQ_MSG_MAGIC_V1 INT32_C(-626843481) /* 0xDAA320A7 */
#define RMQ_MSG_MAGIC_V2 INT32_C(-626843477) /* 0xDAA320AB */

/* sysFlag bits (MessageSysFlag). */
#define RMQ_MSG_SYS_COMPRESSED 0x1
#define RMQ_MSG_SYS_MULTI_TAGS 0x2
#define RMQ_MSG_SYS_TRAN_PREPARED 0x4
#define RMQ_MSG_SYS_TRAN_COMMIT 0x8
#define RMQ_MSG_SYS_TRAN_ROLLBACK 0xC
#define RMQ_MSG_SYS_BORNHOST_V6 0x10
#define RMQ_MSG_SYS_STOREHOST_V6 0x20

/* The fixed part of a record with IPv4 hosts: every field up to and
 * including the body length, plus the properties length and a 1-byte topic
 * length. */
#define RMQ_MSG_RECORD_FIXED 91
/* The largest record the decoder accepts: the 4 MiB body limit of a default
 * broker plus the 64 KiB it reserves for the rest. */
#define RMQ_MSG_RECORD_MAX (4 * 1024 * 1024 + 64 * 1024)

/* An address as a record carries it: 4 or 16 address bytes, then the port
 * as a 4-byte int. */
struct rmq_msg_host {
    uint8_t ip[16];
    bool v6;
    int32_t port;
};

/* One record. Decoded: body, topic and props point into the input. To
 * encode: born_host.v6 and store_host.v6 must agree with sys_flag's
 * BORNHOST_V6 / STOREHOST_V6 bits. */
struct rmq_msg_record {
    int32_t magic; /* decoded; the encoder picks it from the topic length */
    int32_t body_crc;
    int32_t queue_id;
    int32_t flag;
    int64_t queue_offset;
    int64_t physical_offset;
    int32_t sys_flag;
    int64_t born_ms;
    struct rmq_msg_host born_host;
    int64_t store_ms;
    struct rmq_msg_host store_host;
    int32_t reconsume_times;
    int64_t prepared_tx_offset;
    const uint8_t *body;
    uint32_t body_len;
    const char *topic; /* not NUL-terminated */
    uint16_t topic_len;
    const char *props; /* name \x01 value \x02 ..., not NUL-terminated */
    uint16_t props_len;
};

/* TOTALSIZE of a record with these lengths (its encoded size), or 0 when
 * a length is out of range (body over RMQ_MSG_RECORD_MAX, topic over
 * 32767, properties over 32767). */
size_t rmq_msg_record_size(int32_t sys_flag, size_t body_len, size_t topic_len, size_t props_len);

/* Appends r's record; body_crc is written as given (rmq_msg_body_crc
 * computes a broker's). Magic v1 for topics up to 127 bytes, v2 above
 * (what a 5.3.3 broker writes; 4.9.8 clients read only v1). 0,
 * RMQ_EINVAL (a host disagrees with sys_flag, an empty topic, a length out
 * of range) or the buf error; out unchanged on error. */
int rmq_msg_record_encode(const struct rmq_msg_record *r, struct buf *out);

/* Decodes the record at the front of p[0..n) into *r; *used gets its
 * size. RMQ_EAGAIN when p ends before the record does (n < 4 or n <
 * TOTALSIZE), RMQ_EPROTO for a record that is malformed (magic, a size
 * out of range, fields that disagree with TOTALSIZE, a negative length);
 * err says which. On failure *r is zeroed. */
int rmq_msg_record_decode(const uint8_t *p, size_t n, struct rmq_msg_record *r, size_t *used, char *err,
                          size_t errlen);

/* The body CRC a broker stores: CRC-32 of the body & 0x7fffffff. */
int32_t rmq_msg_body_crc(const uint8_t *body, size_t len);

#endif
