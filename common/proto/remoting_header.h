/* remoting_header.h — the two header encodings of a remoting frame.
 *
 * JSON (serialize type 0): decode accepts any key order, unknown keys, a
 * trailing newline, extFields absent/null/{} and any JSON scalar as an
 * extFields value (converted to text: numbers as written, true/false, null
 * skipped); language by name. Encode writes compact JSON in fastjson's
 * sorted key order, omits a NULL remark, always writes flag and opaque, and
 * writes every extFields value as a JSON string.
 * ROCKETMQ binary (serialize type 1): the 21-byte fixed part, remark and the
 * length-prefixed extFields map; language by byte.
 * Decoders fill an initialised, empty cmd (header fields only; the body is
 * set by the frame layer) and return 0, RMQ_EPROTO (err says which field) or
 * RMQ_ENOMEM. Pure; one thread.
 */
#ifndef RMQ_REMOTING_HEADER_H
#define RMQ_REMOTING_HEADER_H

#include "buf.h"
#include "remoting_cmd.h"

#include <stddef.h>
#include <stdint.h>

int rmq_header_json_decode(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen);
int rmq_header_json_encode(const struct rmq_cmd *cmd, struct buf *out);

int rmq_header_rmq_decode(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen);
int rmq_header_rmq_encode(const struct rmq_cmd *cmd, struct buf *out);

#endif
