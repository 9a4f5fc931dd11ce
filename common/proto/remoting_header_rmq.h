/* remoting_header_rmq.h — the ROCKETMQ binary header encoding of a remoting
 * frame (serialize type 1; remoting_header_rmq.c): the 21-byte fixed part,
 * remark and the length-prefixed extFields map; language by byte. The
 * decoder fills an initialised, empty cmd (header fields only) and returns
 * 0, RMQ_EPROTO (err says which field) or RMQ_ENOMEM. Pure; one thread.
 */
#ifndef RMQ_REMOTING_HEADER_RMQ_H
#define RMQ_REMOTING_HEADER_RMQ_H

#include "buf.h"
#include "remoting_cmd.h"

#include <stddef.h>
#include <stdint.h>

int rmq_header_rmq_decode(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen);
int rmq_header_rmq_encode(const struct rmq_cmd *cmd, struct buf *out);

#endif
