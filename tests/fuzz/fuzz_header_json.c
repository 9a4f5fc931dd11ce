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

static void check_json_round_trip(const struct rmq_cmd *a)
{
    struct buf e1, e2;
    buf_init(&e1, 0);
    buf_init(&e2, 0);
    FUZZ_CHECK(rmq_header_json_encode(a, &e1) == RMQ_OK);
    struct rmq_cmd b;
    rmq_cmd_init(&b);
    char err[160] = "";
    int rc = rmq_header_json_decode(buf_head(&e1), buf_live(&e1), &b, err, sizeof err);
    if (rc)
        fprintf(stderr, "re-decode failed: %d %s\n%.*s\n", rc, err, (int)buf_live(&e1),
                (const char *)buf_head(&e1));
    FUZZ_CHECK(rc == RMQ_OK);
    FUZZ_CHECK(fuzz_cmd_equal(a, &b, true, false));
    FUZZ_CHECK(rmq_header_json_encode(&b, &e2) == RMQ_OK);
    FUZZ_CHECK(buf_live(&e1) == buf_live(&e2) && memcmp(buf_head(&e1), buf_head(&e2), buf_live(&e1)) == 0);
    rmq_cmd_clear(&b);
    buf_free(&e1);
    buf_free(&e2);
}

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    struct rmq_cmd a;
    rmq_cmd_init(&a);
    char err[160] = "";
    int rc = rmq_header_json_decode(data, size, &a, err, sizeof err);
    if (rc) {
        FUZZ_CHECK(rc == RMQ_EPROTO);
        FUZZ_CHECK(err[0] != 0);
        FUZZ_CHECK(fuzz_cmd_is_empty(&a));
    } else {
        FUZZ_CHECK(a.serialize_type == RMQ_SERIALIZE_JSON);
        for (size_t i = 0; i < a.ext_len; i++)
            FUZZ_CHECK(a.ext[i].key && a.ext[i].val);
        check_json_round_trip(&a);
        check_binary_cross(&a);
    }

    check_fast_path(data, size, rc, &a);

    struct rmq_cmd o;
    rmq_cmd_init(&o);
    /* The full decoder alone: the fast path in front would shift the fail
     * point into jansson's lexer (see fuzz_fail_point_after_json). */
    rmq_mem_fail_after(fuzz_fail_point_after_json(data, size));
    int orc = rmq_header_json_decode_full(data, size, &o, err, sizeof err);
    rmq_mem_fail_after(-1);
    if (orc == RMQ_OK) {
        FUZZ_CHECK(rc == RMQ_OK);
        FUZZ_CHECK(fuzz_cmd_equal(&a, &o, false, false));
    } else {
        if (orc != rc && orc != RMQ_ENOMEM)
            fprintf(stderr, "under fault injection: %d (%s), clean run: %d\n", orc, err, rc);
        FUZZ_CHECK(orc == rc || orc == RMQ_ENOMEM);
        FUZZ_CHECK(fuzz_cmd_is_empty(&o));
    }
    rmq_cmd_clear(&o);
    rmq_cmd_clear(&a);
    return 0;
}
