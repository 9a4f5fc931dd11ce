/* proto_checks.c — see proto_checks.h. */
#include "proto_checks.h"

#include "buf.h"
#include "err.h"
#include "remoting_frame.h"
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

void assert_frame_bytes(const struct rmq_cmd *c, const uint8_t *want, size_t len)
{
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_frame_encode(c, &b), RMQ_OK);
    assert_buf_equal(&b, want, len);
    buf_free(&b);
}
