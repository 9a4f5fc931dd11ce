/* fuzz_message_record.c — the stored message record decoder, its
 * properties and its offset id.
 *
 * Invariants: records are decoded back to back from the input; a
 * rejection is RMQ_EAGAIN (the input ends inside a record) or RMQ_EPROTO,
 * with a reason and a zeroed record; an accepted record lies inside the
 * input, re-encodes to the same bytes (when its magic is the one the
 * encoder picks for its topic length) and its size is
 * rmq_msg_record_size's; its properties parse (or hold a NUL), every parsed
 * name is found in the raw string with the same value, and they parse the
 * same with one allocation failed on purpose, or fail with RMQ_ENOMEM
 * owning nothing; its store host and physical offset survive the offset id.
 */
#include "fuzz_common.h"
#include "message_id.h"
#include "message_props.h"
#include "message_record.h"

static bool props_equal(const struct rmq_msg_props *a, const struct rmq_msg_props *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].name, b->v[i].name) || strcmp(a->v[i].value, b->v[i].value))
            return false;
    return true;
}

static void check_props(const struct rmq_msg_record *r, long fail_at)
{
    struct rmq_msg_props p, o;
    char err[128] = "";
    int rc = rmq_msg_props_parse(r->props, r->props_len, &p, err, sizeof err);
    FUZZ_CHECK(rc == RMQ_OK || (rc == RMQ_EPROTO && memchr(r->props, 0, r->props_len)));
    for (size_t i = 0; i < p.n; i++) {
        const char *v;
        size_t vl;
        FUZZ_CHECK(p.v[i].name[0] && p.v[i].value[0]);
        FUZZ_CHECK(rmq_msg_props_find(r->props, r->props_len, p.v[i].name, &v, &vl));
        FUZZ_CHECK(vl == strlen(p.v[i].value) && memcmp(v, p.v[i].value, vl) == 0);
    }
    /* Written back and read again: the same set. */
    struct buf b;
    buf_init(&b, 0);
    FUZZ_CHECK(rmq_msg_props_encode(&p, &b) == RMQ_OK);
    struct rmq_msg_props again;
    FUZZ_CHECK(rmq_msg_props_parse((const char *)buf_head(&b), buf_live(&b), &again, NULL, 0) == RMQ_OK);
    FUZZ_CHECK(props_equal(&p, &again));
    rmq_msg_props_clear(&again);
    buf_free(&b);
    rmq_mem_fail_after(fail_at);
    int orc = rmq_msg_props_parse(r->props, r->props_len, &o, NULL, 0);
    rmq_mem_fail_after(-1);
    FUZZ_CHECK(orc == rc || orc == RMQ_ENOMEM);
    if (orc == RMQ_OK)
        FUZZ_CHECK(props_equal(&p, &o));
    else
        FUZZ_CHECK(o.n == 0 && o.v == NULL);
    const char *tags = rmq_msg_props_get(&p, RMQ_PROP_TAGS);
    if (tags)
        FUZZ_CHECK(rmq_msg_tags_code(tags, strlen(tags)) == rmq_java_string_hash(tags, strlen(tags)));
    rmq_msg_props_clear(&o);
    rmq_msg_props_clear(&p);
}

static void check_record(const uint8_t *p, size_t used, const struct rmq_msg_record *r, long fail_at)
{
    /* A v2 record with a short topic is one byte longer than the encoder's. */
    size_t extra = r->magic == RMQ_MSG_MAGIC_V2 && r->topic_len <= 127;
    FUZZ_CHECK(used == rmq_msg_record_size(r->sys_flag, r->body_len, r->topic_len, r->props_len) + extra);
    FUZZ_CHECK(r->topic_len > 0 && r->topic >= (const char *)p &&
               r->topic + r->topic_len <= (const char *)p + used);
    if ((r->magic == RMQ_MSG_MAGIC_V2) == (r->topic_len > 127)) {
        struct buf b;
        buf_init(&b, 0);
        FUZZ_CHECK(rmq_msg_record_encode(r, &b) == RMQ_OK);
        FUZZ_CHECK(buf_live(&b) == used && memcmp(buf_head(&b), p, used) == 0);
        buf_free(&b);
    }
    char id[RMQ_MSG_ID_V6_LEN + 1];
    size_t n = rmq_msg_offset_id(&r->store_host, r->physical_offset, id);
    struct rmq_msg_host h;
    int64_t off;
    FUZZ_CHECK(rmq_msg_offset_id_parse(id, n, &h, &off) == RMQ_OK);
    FUZZ_CHECK(off == r->physical_offset && h.v6 == r->store_host.v6 && h.port == r->store_host.port);
    FUZZ_CHECK(memcmp(h.ip, r->store_host.ip, h.v6 ? 16 : 4) == 0);
    check_props(r, fail_at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    long fail_at = fuzz_fail_point(data, size);
    size_t at = 0;
    while (at < size) {
        struct rmq_msg_record r;
        size_t used = 0;
        char err[128] = "";
        int rc = rmq_msg_record_decode(data + at, size - at, &r, &used, err, sizeof err);
        if (rc) {
            FUZZ_CHECK(rc == RMQ_EAGAIN || rc == RMQ_EPROTO);
            FUZZ_CHECK(err[0] != 0);
            FUZZ_CHECK(r.topic == NULL && r.topic_len == 0 && r.body == NULL);
            break;
        }
        FUZZ_CHECK(used > 0 && used <= size - at);
        check_record(data + at, used, &r, fail_at);
        at += used;
    }
    return 0;
}
