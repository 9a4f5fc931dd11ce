/* fuzz_message_batch.c — the SEND_BATCH_MESSAGE body decoder.
 *
 * Invariants: a rejected body returns RMQ_EPROTO with a reason and an
 * empty batch; an accepted one has at least one message, every body and
 * properties string inside the input, and the messages written back with
 * rmq_msg_batch_encode_item give the input again, MAGICCODE and BODYCRC
 * aside (clients write 0 there, brokers ignore them); with one allocation
 * failed on purpose the decoder either succeeds identically or returns
 * RMQ_ENOMEM and owns nothing.
 */
#include "fuzz_common.h"
#include "message_batch.h"

static const uint8_t *fuzz_input;
static size_t fuzz_input_len;

static bool batch_equal(const struct rmq_msg_batch *a, const struct rmq_msg_batch *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const struct rmq_msg_batch_item *x = &a->items[i], *y = &b->items[i];
        if (x->magic != y->magic || x->body_crc != y->body_crc || x->flag != y->flag || x->body != y->body ||
            x->body_len != y->body_len || x->props != y->props || x->props_len != y->props_len)
            return false;
    }
    return true;
}

static bool batch_empty(const struct rmq_msg_batch *b)
{
    return b->items == NULL && b->n == 0;
}

static void check_batch(const struct rmq_msg_batch *b)
{
    FUZZ_CHECK(b->n > 0 && b->items);
    struct buf e;
    buf_init(&e, 0);
    for (size_t i = 0; i < b->n; i++) {
        const struct rmq_msg_batch_item *it = &b->items[i];
        FUZZ_CHECK((it->body_len == 0) == (it->body == NULL));
        FUZZ_CHECK((it->props_len == 0) == (it->props == NULL));
        FUZZ_CHECK(!it->body ||
                   (it->body >= fuzz_input && it->body + it->body_len <= fuzz_input + fuzz_input_len));
        size_t mark = buf_live(&e);
        FUZZ_CHECK(rmq_msg_batch_encode_item(it->flag, it->body, it->body_len, it->props, it->props_len,
                                             &e) == RMQ_OK);
        uint8_t *w = e.data + e.pos + mark;
        for (int k = 0; k < 4; k++) {
            w[4 + k] = (uint8_t)((uint32_t)it->magic >> (24 - 8 * k));
            w[8 + k] = (uint8_t)((uint32_t)it->body_crc >> (24 - 8 * k));
        }
    }
    FUZZ_CHECK(buf_live(&e) == fuzz_input_len && memcmp(buf_head(&e), fuzz_input, fuzz_input_len) == 0);
    buf_free(&e);
}

FUZZ_DECODER(message_batch, struct rmq_msg_batch, rmq_msg_batch_decode, rmq_msg_batch_decode, fuzz_fail_point,
             batch_equal, batch_empty, rmq_msg_batch_clear, check_batch)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input = data;
    fuzz_input_len = size;
    struct rmq_msg_batch a = {0}, o = {0};
    return fuzz_decode_run(&message_batch, data, size, &a, &o);
}
