/* remoting_header_json.h — the JSON header encoding of a remoting frame
 * (serialize type 0; remoting_header_json.c).
 *
 * Decode accepts any key order, unknown keys, a trailing newline, extFields
 * absent/null/{} and any JSON scalar as an extFields value (converted to
 * text: numbers as written, true/false, null skipped); language by name.
 * Encode writes compact JSON in fastjson's sorted key order, omits a NULL
 * remark, always writes flag and opaque, and writes every extFields value
 * as a JSON string. The decoder fills an initialised, empty cmd (header
 * fields only; the body is set by the frame layer) and returns 0,
 * RMQ_EPROTO (err says which field) or RMQ_ENOMEM. Pure; one thread.
 */
#ifndef RMQ_REMOTING_HEADER_JSON_H
#define RMQ_REMOTING_HEADER_JSON_H

#include "buf.h"
#include "remoting_cmd.h"

#include <stddef.h>
#include <stdint.h>

/* The common flat shape through remoting_header_json_fast.c, anything else
 * through jansson. */
int rmq_header_json_decode(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen);
int rmq_header_json_encode(const struct rmq_cmd *cmd, struct buf *out);
/* The full (jansson) decoder alone, for tests that compare the two. */
int rmq_header_json_decode_full(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen);

#endif
