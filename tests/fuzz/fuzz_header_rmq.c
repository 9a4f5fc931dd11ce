/* fuzz_header_rmq.c — the ROCKETMQ binary header decoder (serialize type 1).
 *
 * Invariants: a rejected header leaves the command empty with a reason and
 * RMQ_EPROTO; an accepted one re-encodes to a header that decodes to the
 * same command and re-encodes to the same bytes; when all its strings are
 * well-formed UTF-8 it also survives the JSON codec; with one allocation
 * failed on purpose the decoder either succeeds identically or returns
 * RMQ_ENOMEM and owns nothing.
 */
#include "err.h"
#include "fuzz_common.h"
#include "remoting_header.h"

/* binary -> JSON, for commands whose strings JSON can carry. */
static void check_json_cross(const struct rmq_cmd *a)
{
    if (a->remark && !fuzz_utf8_valid(a->remark))
        return;
    for (size_t i = 0; i < a->ext_len; i++)
        if (!fuzz_utf8_valid(a->ext[i].key) || !fuzz_utf8_valid(a->ext[i].val))
            return;
    struct buf e;
    struct rmq_cmd b;
    fuzz_cmd_redecode(a, rmq_header_json_encode, rmq_header_json_decode, true, &e, &b);
    rmq_cmd_clear(&b);
    buf_free(&e);
}

static void check_accepted(const struct rmq_cmd *a)
{
    FUZZ_CHECK(a->serialize_type == RMQ_SERIALIZE_ROCKETMQ);
    FUZZ_CHECK(a->remark == NULL || a->remark[0] != 0);
    fuzz_cmd_round_trip(a, rmq_header_rmq_encode, rmq_header_rmq_decode, false);
    check_json_cross(a);
}

FUZZ_DECODER(header_rmq, struct rmq_cmd, rmq_header_rmq_decode, rmq_header_rmq_decode, fuzz_fail_point,
             fuzz_cmd_same, fuzz_cmd_is_empty, rmq_cmd_clear, check_accepted)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rmq_cmd a, o;
    rmq_cmd_init(&a);
    rmq_cmd_init(&o);
    return fuzz_decode_run(&header_rmq, data, size, &a, &o);
}
