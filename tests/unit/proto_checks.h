/* proto_checks.h — assertions shared by the remoting codec tests (linked
 * only into tests that link common/proto; test_support.c is not). */
#ifndef RMQ_PROTO_CHECKS_H
#define RMQ_PROTO_CHECKS_H

#include "remoting_cmd.h"

#include <stddef.h>
#include <stdint.h>

/* Asserts that c encodes as a frame to exactly want[0..len): a decoded
 * frame that re-encodes to the bytes it came from. */
void assert_frame_bytes(const struct rmq_cmd *c, const uint8_t *want, size_t len);

#endif
