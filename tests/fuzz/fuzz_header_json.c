/* fuzz_header_json.c — the JSON header decoder (serialize type 0).
 *
 * Invariants: a rejected header leaves the command empty with a reason and
 * RMQ_EPROTO; an accepted one re-encodes to JSON that decodes to the same
 * command and re-encodes to the same bytes; it also survives the binary
 * codec (with the fields the binary header narrows narrowed); with one
 * allocation failed on purpose the decoder either succeeds identically or
 * returns RMQ_ENOMEM and owns nothing. The jansson-free fast path must agree
 * with the full decoder on every header it accepts, and decline (owning
 * nothing) everything else.
 */
#include "err.h"
#include "fuzz_common.h"
#include "remoting_header.h"
#include "remoting_header_json_fast.h"

/* JSON -> binary: code and version narrow to int16, language to a byte. */
static void check_binary_cross(const struct rmq_cmd *a)
{
    struct buf e;
    buf_init(&e, 0);
    int rc = rmq_header_rmq_encode(a, &e);
    bool long_key = false;
    for (size_t i = 0; i < a->ext_len; i++)
        long_key |= strlen(a->ext[i].key) > INT16_MAX;
    FUZZ_CHECK(rc == (long_key ? RMQ_EINVAL : RMQ_OK));
    if (rc == RMQ_OK) {
        struct rmq_cmd b;
        rmq_cmd_init(&b);
        FUZZ_CHECK(rmq_header_rmq_decode(buf_head(&e), buf_live(&e), &b, NULL, 0) == RMQ_OK);
        struct rmq_cmd n = *a;
        n.code = (int16_t)a->code;
        n.version = (int16_t)a->version;
        n.language = (uint8_t)a->language;
        FUZZ_CHECK(fuzz_cmd_equal(&n, &b, false, false));
        rmq_cmd_clear(&b);
    }
    buf_free(&e);
}

/* The fast path accepts only what the full decoder decodes the same way. */
static void check_fast_path(const uint8_t *data, size_t size, int rc, const struct rmq_cmd *a)
{
    struct rmq_cmd f, full;
    rmq_cmd_init(&f);
    rmq_cmd_init(&full);
    int frc = rmq_header_json_decode_fast(data, size, &f);
    FUZZ_CHECK(frc == RMQ_OK || frc == RMQ_EAGAIN);
    char err[160] = "";
    int urc = rmq_header_json_decode_full(data, size, &full, err, sizeof err);
    FUZZ_CHECK(urc == rc);
    if (frc == RMQ_OK) {
        FUZZ_CHECK(urc == RMQ_OK);
        FUZZ_CHECK(fuzz_cmd_equal(&f, &full, true, false));
    } else {
        FUZZ_CHECK(fuzz_cmd_is_empty(&f));
    }
    if (rc == RMQ_OK)
        FUZZ_CHECK(fuzz_cmd_equal(a, &full, true, false));
    rmq_cmd_clear(&full);
    /* With one allocation failed: the same answer, a decline, or RMQ_ENOMEM, owning nothing on failure. */
    struct rmq_cmd o;
    rmq_cmd_init(&o);
    rmq_mem_fail_after(fuzz_fail_point(data, size));
    int orc = rmq_header_json_decode_fast(data, size, &o);
    rmq_mem_fail_after(-1);
    FUZZ_CHECK(orc == frc || orc == RMQ_ENOMEM);
    if (orc == RMQ_OK)
        FUZZ_CHECK(fuzz_cmd_equal(&f, &o, true, false));
    else
        FUZZ_CHECK(fuzz_cmd_is_empty(&o));
    rmq_cmd_clear(&o);
    rmq_cmd_clear(&f);
}

static void check_accepted(const struct rmq_cmd *a)
{
    FUZZ_CHECK(a->serialize_type == RMQ_SERIALIZE_JSON);
    for (size_t i = 0; i < a->ext_len; i++)
        FUZZ_CHECK(a->ext[i].key && a->ext[i].val);
    fuzz_cmd_round_trip(a, rmq_header_json_encode, rmq_header_json_decode, true);
    check_binary_cross(a);
}

/* Faulted, the full decoder runs alone: the fast path in front would shift
 * the fail point into jansson's lexer (see fuzz_fail_point_after_json). */
FUZZ_DECODER(header_json, struct rmq_cmd, rmq_header_json_decode, rmq_header_json_decode_full,
             fuzz_fail_point_after_json, fuzz_cmd_same, fuzz_cmd_is_empty, rmq_cmd_clear, check_accepted)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rmq_cmd a, o;
    rmq_cmd_init(&a);
    rmq_cmd_init(&o);
    int rc = fuzz_decode_checks(&header_json, data, size, &a, &o);
    check_fast_path(data, size, rc, &a);
    rmq_cmd_clear(&a);
    return 0;
}
