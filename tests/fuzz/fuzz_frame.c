/* fuzz_frame.c — the streaming frame decoder under random chunkings.
 *
 * The input is a byte stream of frames. It is decoded twice: once with the
 * one-shot rmq_frame_decode, frame after frame, as the reference; once
 * through rmq_frame_decoder_feed/next in chunks whose sizes come from a hash
 * of the input. Invariants: both see the same frames and end the same way
 * (the decoder's verdict does not depend on how bytes arrive); a failed
 * decode leaves the command empty and says why; every decoded frame
 * re-encodes, decodes to the same command and re-encodes to the same bytes;
 * with an allocation failed on purpose a decode either succeeds with the
 * same command or reports RMQ_ENOMEM and owns nothing.
 */
#include "err.h"
#include "fuzz_common.h"
#include "remoting_frame.h"

#define SMALL_LIMIT_MIN 16u

/* Encodes a, decodes the encoding, and checks the result against a; then
 * checks that encoding is a fixed point. */
static void check_round_trip(const struct rmq_cmd *a)
{
    struct buf e1, e2;
    buf_init(&e1, 0);
    buf_init(&e2, 0);
    FUZZ_CHECK(rmq_frame_encode(a, &e1) == RMQ_OK);
    struct rmq_cmd b;
    rmq_cmd_init(&b);
    size_t used = 0;
    char err[160] = "";
    int rc = rmq_frame_decode(buf_head(&e1), buf_live(&e1), 0, &b, &used, err, sizeof err);
    if (rc)
        fprintf(stderr, "re-decode failed: %d %s\n", rc, err);
    FUZZ_CHECK(rc == RMQ_OK);
    FUZZ_CHECK(used == buf_live(&e1));
    FUZZ_CHECK(fuzz_cmd_equal(a, &b, a->serialize_type == RMQ_SERIALIZE_JSON, true));
    FUZZ_CHECK(rmq_frame_encode(&b, &e2) == RMQ_OK);
    FUZZ_CHECK(buf_live(&e1) == buf_live(&e2) && memcmp(buf_head(&e1), buf_head(&e2), buf_live(&e1)) == 0);
    rmq_cmd_clear(&b);
    buf_free(&e1);
    buf_free(&e2);
}

/* One-shot decode of the first frame with allocation number `fail` failing. */
static void check_oom(const uint8_t *data, size_t size, size_t max_frame, const struct rmq_cmd *ref,
                      long fail)
{
    struct rmq_cmd c;
    rmq_cmd_init(&c);
    size_t used = 0;
    char err[160];
    rmq_mem_fail_after(fail);
    int rc = rmq_frame_decode(data, size, max_frame, &c, &used, err, sizeof err);
    rmq_mem_fail_after(-1);
    FUZZ_CHECK(rc == RMQ_OK || rc == RMQ_ENOMEM);
    if (rc == RMQ_OK)
        FUZZ_CHECK(fuzz_cmd_equal(ref, &c, false, true));
    else
        FUZZ_CHECK(fuzz_cmd_is_empty(&c));
    rmq_cmd_clear(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    uint64_t seed = fuzz_hash(data, size);
    /* One input in eight runs against a tiny limit, to reach RMQ_E2BIG. */
    size_t max_frame = (seed & 7) == 0 ? SMALL_LIMIT_MIN + (size_t)(seed >> 8) % 512 : (size_t)1 << 16;

    /* Reference: one-shot decodes, frame after frame. */
    struct rmq_cmd *ref = NULL;
    size_t nref = 0, cap = 0, pos = 0;
    int ref_rc;
    for (;;) {
        if (nref == cap) {
            cap = cap ? cap * 2 : 8;
            ref = realloc(ref, cap * sizeof *ref);
            FUZZ_CHECK(ref != NULL);
        }
        rmq_cmd_init(&ref[nref]);
        size_t used = 0;
        char err[160] = "";
        ref_rc = rmq_frame_decode(data + pos, size - pos, max_frame, &ref[nref], &used, err, sizeof err);
        if (ref_rc) {
            FUZZ_CHECK(fuzz_cmd_is_empty(&ref[nref]));
            FUZZ_CHECK(ref_rc == RMQ_EAGAIN || err[0] != 0);
            FUZZ_CHECK(ref_rc == RMQ_EAGAIN || ref_rc == RMQ_EPROTO || ref_rc == RMQ_E2BIG);
            break;
        }
        FUZZ_CHECK(used >= 8 && used <= size - pos && used <= max_frame);
        pos += used;
        nref++;
    }

    /* Streaming, in chunks chosen by the input's hash. */
    struct rmq_frame_decoder d;
    rmq_frame_decoder_init(&d, max_frame, 0);
    size_t fed = 0, got = 0;
    int rc = RMQ_EAGAIN;
    uint64_t rng = seed;
    while (rc == RMQ_EAGAIN && fed < size) {
        uint64_t r = fuzz_next(&rng);
        size_t chunk;
        switch (r & 3) {
        case 0: chunk = 1; break;
        case 1: chunk = 1 + (size_t)(r >> 8) % 16; break;
        case 2: chunk = 1 + (size_t)(r >> 8) % 4096; break;
        default: chunk = size - fed; break;
        }
        if (chunk > size - fed)
            chunk = size - fed;
        FUZZ_CHECK(rmq_frame_decoder_feed(&d, data + fed, chunk) == RMQ_OK);
        fed += chunk;
        for (;;) {
            struct rmq_cmd c;
            rmq_cmd_init(&c);
            rc = rmq_frame_decoder_next(&d, &c);
            if (rc) {
                FUZZ_CHECK(fuzz_cmd_is_empty(&c));
                break;
            }
            FUZZ_CHECK(got < nref);
            FUZZ_CHECK(fuzz_cmd_equal(&ref[got], &c, false, true));
            got++;
            rmq_cmd_clear(&c);
        }
    }
    FUZZ_CHECK(got == nref);
    FUZZ_CHECK(rc == ref_rc);
    FUZZ_CHECK(rc == RMQ_EAGAIN || d.error[0] != 0);
    rmq_frame_decoder_free(&d);

    for (size_t i = 0; i < nref; i++)
        check_round_trip(&ref[i]);
    if (nref) {
        /* A JSON header is parsed by jansson first: fail only after it. */
        size_t hlen = ((size_t)data[5] << 16 | (size_t)data[6] << 8 | data[7]);
        long fail = ref[0].serialize_type == RMQ_SERIALIZE_JSON ? fuzz_fail_point_after_json(data + 8, hlen)
                                                                : fuzz_fail_point(data, size);
        check_oom(data, size, max_frame, &ref[0], fail);
    }

    for (size_t i = 0; i <= nref && i < cap; i++)
        rmq_cmd_clear(&ref[i]);
    free(ref);
    return 0;
}
