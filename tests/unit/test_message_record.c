/* test_message_record.c — the stored message record (exact bytes, round
 * trips, truncation at every byte, malformed fields), the properties
 * string, the offset id and unique key, the SEND_BATCH_MESSAGE body and
 * Java's String.hashCode as the tags code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "mem.h"
#include "message_batch.h"
#include "message_id.h"
#include "message_props.h"
#include "message_record.h"
#include "test_support.h"

#include <stdio.h>
#include <string.h>

/* The record of sample(), field by field. */
static const uint8_t fixture[] = {
    0x00, 0x00, 0x00, 0x6E,                              /* TOTALSIZE 110 */
    0xDA, 0xA3, 0x20, 0xA7,                              /* MAGICCODE v1 */
    0x36, 0x10, 0xA6, 0x86,                              /* BODYCRC of "hello": 907060870 */
    0x00, 0x00, 0x00, 0x03,                              /* QUEUEID */
    0x00, 0x00, 0x00, 0x07,                              /* FLAG */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,      /* QUEUEOFFSET */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,      /* PHYSICALOFFSET */
    0x00, 0x00, 0x00, 0x00,                              /* SYSFLAG */
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00,      /* BORNTIMESTAMP 1700000000000 */
    0x0A, 0x00, 0x00, 0x01, 0x00, 0x00, 0xC3, 0x50,      /* BORNHOST 10.0.0.1:50000 */
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x7B,      /* STORETIMESTAMP 1700000000123 */
    0xC0, 0xA8, 0x01, 0x02, 0x00, 0x00, 0x2A, 0x9F,      /* STOREHOST 192.168.1.2:10911 */
    0x00, 0x00, 0x00, 0x01,                              /* RECONSUMETIMES */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,      /* PREPARED TRANSACTION OFFSET */
    0x00, 0x00, 0x00, 0x05, 'h',  'e',  'l',  'l',  'o', /* body */
    0x02, 'T',  '1',                                     /* topic */
    0x00, 0x0C, 'U',  'N',  'I',  'Q',  '_',  'K',  'E', 'Y', 0x01, 'A', 'B', 0x02, /* properties */
};

static struct rmq_msg_record sample(void)
{
    struct rmq_msg_record r = {
        .queue_id = 3,
        .flag = 7,
        .queue_offset = 5,
        .physical_offset = 0x0102030405060708,
        .born_ms = 1700000000000,
        .born_host = {{10, 0, 0, 1}, false, 50000},
        .store_ms = 1700000000123,
        .store_host = {{192, 168, 1, 2}, false, 10911},
        .reconsume_times = 1,
        .body = (const uint8_t *)"hello",
        .body_len = 5,
        .topic = "T1",
        .topic_len = 2,
        .props = "UNIQ_KEY\x01"
                 "AB\x02",
        .props_len = 12,
    };
    r.body_crc = rmq_msg_body_crc(r.body, r.body_len);
    return r;
}

static void assert_host(const struct rmq_msg_host *a, const struct rmq_msg_host *b)
{
    assert_int_equal(a->v6, b->v6);
    assert_memory_equal(a->ip, b->ip, a->v6 ? 16 : 4);
    assert_int_equal(a->port, b->port);
}

static void assert_same_record(const struct rmq_msg_record *a, const struct rmq_msg_record *b)
{
    assert_int_equal(a->body_crc, b->body_crc);
    assert_int_equal(a->queue_id, b->queue_id);
    assert_int_equal(a->flag, b->flag);
    assert_true(a->queue_offset == b->queue_offset && a->physical_offset == b->physical_offset);
    assert_int_equal(a->sys_flag, b->sys_flag);
    assert_true(a->born_ms == b->born_ms && a->store_ms == b->store_ms);
    assert_host(&a->born_host, &b->born_host);
    assert_host(&a->store_host, &b->store_host);
    assert_int_equal(a->reconsume_times, b->reconsume_times);
    assert_true(a->prepared_tx_offset == b->prepared_tx_offset);
    assert_int_equal(a->body_len, b->body_len);
    if (a->body_len)
        assert_memory_equal(a->body, b->body, a->body_len);
    assert_int_equal(a->topic_len, b->topic_len);
    assert_memory_equal(a->topic, b->topic, a->topic_len);
    assert_int_equal(a->props_len, b->props_len);
    if (a->props_len)
        assert_memory_equal(a->props, b->props, a->props_len);
}

static void test_record_exact_bytes(void **state)
{
    (void)state;
    struct rmq_msg_record r = sample();
    assert_int_equal(r.body_crc, 907060870); /* java.util.zip.CRC32 of "hello" & 0x7fffffff */
    assert_int_equal(rmq_msg_record_size(0, 5, 2, 12), sizeof fixture);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_msg_record_encode(&r, &b), RMQ_OK);
    assert_buf_equal(&b, fixture, sizeof fixture);
    struct rmq_msg_record d;
    size_t used = 0;
    char err[128] = "";
    assert_int_equal(rmq_msg_record_decode(fixture, sizeof fixture, &d, &used, err, sizeof err), RMQ_OK);
    assert_int_equal(used, sizeof fixture);
    assert_int_equal(d.magic, RMQ_MSG_MAGIC_V1);
    assert_same_record(&r, &d);
    buf_free(&b);
    /* The same message as the 4.9.7 jar's MessageDecoder.encode writes it
     * (4.9.8's is the same): no \x02 after the last property. */
    uint8_t v49[sizeof fixture - 1];
    memcpy(v49, fixture, sizeof v49);
    v49[3] = 0x6D;
    v49[97] = 0x0B;
    assert_int_equal(rmq_msg_record_decode(v49, sizeof v49, &d, &used, err, sizeof err), RMQ_OK);
    assert_int_equal(used, sizeof v49);
    assert_int_equal(d.props_len, 11);
    const char *v;
    size_t vl;
    assert_true(rmq_msg_props_find(d.props, d.props_len, RMQ_PROP_UNIQ_KEY, &v, &vl));
    assert_int_equal(vl, 2);
    assert_memory_equal(v, "AB", 2);
}

/* IPv6 hosts, an empty body, no properties, a 200-byte topic (v2 magic),
 * and two records back to back. */
static void test_record_round_trips(void **state)
{
    (void)state;
    char topic[200];
    memset(topic, 'x', sizeof topic);
    struct rmq_msg_record r = sample();
    r.sys_flag = RMQ_MSG_SYS_BORNHOST_V6 | RMQ_MSG_SYS_STOREHOST_V6 | RMQ_MSG_SYS_COMPRESSED;
    r.born_host = (struct rmq_msg_host){{0x20, 0x01, 0x0d, 0xb8, [15] = 1}, true, 1};
    r.store_host = (struct rmq_msg_host){{[15] = 1}, true, INT32_MAX};
    r.body = NULL;
    r.body_len = 0;
    r.props = NULL;
    r.props_len = 0;
    r.topic = topic;
    r.topic_len = sizeof topic;
    r.queue_offset = INT64_MAX;
    r.physical_offset = -1;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_msg_record_encode(&r, &b), RMQ_OK);
    size_t first = buf_live(&b);
    assert_int_equal(first, rmq_msg_record_size(r.sys_flag, 0, sizeof topic, 0));
    assert_int_equal(first, RMQ_MSG_RECORD_FIXED + 24 + 1 + sizeof topic);
    struct rmq_msg_record s = sample();
    assert_int_equal(rmq_msg_record_encode(&s, &b), RMQ_OK);
    struct rmq_msg_record d;
    size_t used = 0;
    assert_int_equal(rmq_msg_record_decode(buf_head(&b), buf_live(&b), &d, &used, NULL, 0), RMQ_OK);
    assert_int_equal(used, first);
    assert_int_equal(d.magic, RMQ_MSG_MAGIC_V2);
    assert_same_record(&r, &d);
    assert_null(d.body);
    assert_null(d.props);
    assert_int_equal(rmq_msg_record_decode(buf_head(&b) + used, buf_live(&b) - used, &d, &used, NULL, 0),
                     RMQ_OK);
    assert_same_record(&s, &d);
    /* 127 bytes still fit v1. */
    buf_reset(&b);
    r.topic_len = 127;
    assert_int_equal(rmq_msg_record_encode(&r, &b), RMQ_OK);
    assert_int_equal(rmq_msg_record_decode(buf_head(&b), buf_live(&b), &d, &used, NULL, 0), RMQ_OK);
    assert_int_equal(d.magic, RMQ_MSG_MAGIC_V1);
    /* The encoder refuses hosts that disagree with sysFlag, an empty topic,
     * and leaves the buffer as it was. */
    buf_reset(&b);
    r.sys_flag = 0;
    assert_int_equal(rmq_msg_record_encode(&r, &b), RMQ_EINVAL);
    s.topic_len = 0;
    assert_int_equal(rmq_msg_record_encode(&s, &b), RMQ_EINVAL);
    s = sample();
    s.props_len = 40000;
    assert_int_equal(rmq_msg_record_encode(&s, &b), RMQ_EINVAL);
    assert_int_equal(buf_live(&b), 0);
    buf_free(&b);
}

/* Every prefix of the fixture is "need more bytes"; cut short inside by a
 * smaller TOTALSIZE it is malformed. */
static void test_record_truncation(void **state)
{
    (void)state;
    struct rmq_msg_record d;
    size_t used = 0;
    char err[128];
    for (size_t n = 0; n < sizeof fixture; n++) {
        uint8_t *cut = rmq_malloc(n ? n : 1); /* exact size: ASan sees any over-read */
        memcpy(cut, fixture, n);
        assert_int_equal(rmq_msg_record_decode(cut, n, &d, &used, err, sizeof err), RMQ_EAGAIN);
        rmq_free(cut);
    }
    uint8_t copy[sizeof fixture];
    for (uint32_t total = 0; total < sizeof fixture; total++) {
        memcpy(copy, fixture, sizeof copy);
        copy[3] = (uint8_t)total;
        int rc = rmq_msg_record_decode(copy, total < 4 ? sizeof copy : total, &d, &used, err, sizeof err);
        assert_int_equal(rc, RMQ_EPROTO);
        assert_true(err[0] != 0);
    }
}

static void test_record_malformed(void **state)
{
    (void)state;
    static const struct {
        size_t at;
        uint8_t val[4];
        size_t len;
        const char *why;
    } cases[] = {
        {4, {0xDA, 0xA3, 0x20, 0xA8}, 4, "bad MAGICCODE"},
        {4, {0, 0, 0, 0}, 4, "bad MAGICCODE"},
        {36, {0, 0, 0, 0x10}, 4, "body length past TOTALSIZE"}, /* IPv6 born host: every field moves */
        {84, {0x80, 0, 0, 0}, 4, "body length"},                /* negative */
        {84, {0, 0, 0, 6}, 4, "topic past TOTALSIZE"},          /* one too many: the topic moves */
        {84, {0, 0, 0, 0x4B}, 4, "body length past TOTALSIZE"}, /* far past */
        {93, {0x80}, 1, "v1 topic length over 127"},            /* negative as a Java byte */
        {93, {0x11}, 1, "topic past TOTALSIZE"},
        {93, {0x10}, 1, "properties length past TOTALSIZE"},
        {93, {0x00}, 1, "empty topic"},
        {96, {0x80, 0x00}, 2, "properties length negative"},
        {96, {0x00, 0x0D}, 2, "properties past TOTALSIZE"},
        {96, {0x00, 0x0B}, 2, "TOTALSIZE larger than the fields"},
        {0, {0, 0, 0, 0}, 4, "TOTALSIZE out of range"},
        {0, {0x7F, 0xFF, 0xFF, 0xFF}, 4, "TOTALSIZE out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t copy[sizeof fixture];
        memcpy(copy, fixture, sizeof copy);
        memcpy(copy + cases[i].at, cases[i].val, cases[i].len);
        struct rmq_msg_record d;
        size_t used = 0;
        char err[128] = "";
        int rc = rmq_msg_record_decode(copy, sizeof copy, &d, &used, err, sizeof err);
        if (rc != RMQ_EPROTO || !strstr(err, cases[i].why))
            print_error("case %zu: %d %s\n", i, rc, err);
        assert_int_equal(rc, RMQ_EPROTO);
        assert_non_null(strstr(err, cases[i].why));
        assert_int_equal(d.topic_len, 0); /* zeroed */
    }
}

static void test_props_parse(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *want; /* re-encoded, with | for \x01 and ; for \x02 */
    } cases[] = {
        {"", 0, ""},
        {"A\x01"
         "1\x02"
         "B\x01"
         "2\x02",
         8, "A|1;B|2;"},
        {"A\x01"
         "1\x02"
         "B\x01"
         "2",
         7, "A|1;B|2;"}, /* no final separator */
        {"A\x01"
         "1\x02\x02\x02"
         "B\x01"
         "2\x02",
         10, "A|1;B|2;"}, /* empty pieces */
        {"A1\x02"
         "B\x01"
         "2\x02",
         6, "B|2;"}, /* a piece without \x01 */
        {"\x01"
         "1\x02"
         "B\x01"
         "2\x02",
         7, "B|2;"}, /* empty name */
        {"A\x01\x02"
         "B\x01"
         "2\x02",
         6, "B|2;"}, /* empty value */
        {"AB\x02"
         "C\x01"
         "D",
         6, "C|D;"}, /* \x01 only past the piece */
        {"A\x01"
         "1\x02"
         "B\x01"
         "2\x02"
         "A\x01"
         "3\x02",
         12, "A|3;B|2;"}, /* duplicate: last value */
        {"A\x01"
         "x\x01"
         "y\x02",
         6, "A|x\x01y;"}, /* the first \x01 splits */
        {"\x02\x02", 2, ""},
        {"A\x01", 2, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rmq_msg_props p;
        char err[100] = "";
        assert_int_equal(rmq_msg_props_parse(cases[i].in, cases[i].n, &p, err, sizeof err), RMQ_OK);
        struct buf b;
        buf_init(&b, 0);
        assert_int_equal(rmq_msg_props_encode(&p, &b), RMQ_OK);
        assert_int_equal(buf_terminate(&b), 0);
        for (size_t k = 0; k < b.len; k++)
            b.data[k] = b.data[k] == 1 && k + 1 < b.len && b.data[k - 1] != 'x' ? '|'
                        : b.data[k] == 2                                        ? ';'
                                                                                : b.data[k];
        if (strcmp((const char *)buf_head(&b), cases[i].want) != 0)
            print_error("case %zu: got %s\n", i, (const char *)buf_head(&b));
        assert_string_equal((const char *)buf_head(&b), cases[i].want);
        /* find agrees with the parsed array */
        for (size_t k = 0; k < p.n; k++) {
            const char *v;
            size_t vl;
            assert_true(rmq_msg_props_find(cases[i].in, cases[i].n, p.v[k].name, &v, &vl));
            assert_int_equal(vl, strlen(p.v[k].value));
            assert_memory_equal(v, p.v[k].value, vl);
        }
        buf_free(&b);
        rmq_msg_props_clear(&p);
    }
    struct rmq_msg_props p;
    char err[100] = "";
    assert_int_equal(rmq_msg_props_parse("A\x01"
                                         "\0\x02",
                                         4, &p, err, sizeof err),
                     RMQ_EPROTO);
    assert_int_equal(p.n, 0);
    const char *v;
    size_t vl;
    assert_false(rmq_msg_props_find("A\x01"
                                    "1\x02",
                                    4, "B", &v, &vl));
    assert_false(rmq_msg_props_find(NULL, 0, "B", &v, &vl));
}

static void test_props_edit(void **state)
{
    (void)state;
    struct rmq_msg_props p = {0};
    char err[100];
    const char in[] = "TAGS\x01"
                      "TagA\x02"
                      "KEYS\x01"
                      "k1 k2\x02"
                      "WAIT\x01"
                      "true\x02";
    assert_int_equal(rmq_msg_props_parse(in, sizeof in - 1, &p, err, sizeof err), RMQ_OK);
    assert_string_equal(rmq_msg_props_get(&p, RMQ_PROP_TAGS), "TagA");
    assert_string_equal(rmq_msg_props_get(&p, RMQ_PROP_KEYS), "k1 k2");
    assert_null(rmq_msg_props_get(&p, RMQ_PROP_UNIQ_KEY));
    assert_int_equal(rmq_msg_props_set(&p, RMQ_PROP_UNIQ_KEY, "0A0000010001DEADBEEF47B760000102"), RMQ_OK);
    assert_int_equal(rmq_msg_props_set(&p, RMQ_PROP_TAGS, "TagB"), RMQ_OK);
    assert_true(rmq_msg_props_remove(&p, RMQ_PROP_KEYS));
    assert_false(rmq_msg_props_remove(&p, RMQ_PROP_KEYS));
    assert_int_equal(rmq_msg_props_set(&p, "", "x"), RMQ_EINVAL);
    assert_int_equal(rmq_msg_props_set(&p, "N", ""), RMQ_EINVAL);
    assert_int_equal(rmq_msg_props_set(&p, "N",
                                       "a\x02"
                                       "b"),
                     RMQ_EINVAL);
    assert_int_equal(rmq_msg_props_set(&p, "N\x01", "a"), RMQ_EINVAL);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_msg_props_encode(&p, &b), RMQ_OK);
    const char want[] = "TAGS\x01"
                        "TagB\x02"
                        "WAIT\x01"
                        "true\x02"
                        "UNIQ_KEY\x01"
                        "0A0000010001DEADBEEF47B760000102\x02";
    assert_buf_equal(&b, want, sizeof want - 1);
    /* An encoder failure leaves the buffer as it was. */
    struct buf capped;
    buf_init(&capped, 10);
    assert_int_equal(buf_append_str(&capped, "xy"), 0);
    assert_int_equal(rmq_msg_props_encode(&p, &capped), RMQ_E2BIG);
    assert_int_equal(buf_live(&capped), 2);
    buf_free(&capped);
    buf_free(&b);
    rmq_msg_props_clear(&p);
    rmq_msg_props_clear(&p); /* twice is fine */
}

static void test_props_alloc_failures(void **state)
{
    (void)state;
    char in[400] = "";
    size_t n = 0;
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(in + n, sizeof in - n, "N%d\x01v%d\x02", i, i);
    int ok = 0;
    for (long k = 0; k < 200 && !ok; k++) {
        struct rmq_msg_props p;
        rmq_mem_fail_after(k);
        int rc = rmq_msg_props_parse(in, n, &p, NULL, 0);
        rmq_mem_fail_after(-1);
        if (rc == RMQ_OK) {
            assert_int_equal(p.n, 20);
            ok = 1;
        } else {
            assert_int_equal(rc, RMQ_ENOMEM);
            assert_int_equal(p.n, 0);
            assert_null(p.v);
        }
        rmq_msg_props_clear(&p);
    }
    assert_true(ok);
    /* set under failure leaves the set as it was */
    struct rmq_msg_props p = {0};
    assert_int_equal(rmq_msg_props_set(&p, "A", "1"), RMQ_OK);
    for (long k = 0; k < 4; k++) {
        rmq_mem_fail_after(k);
        int rc = rmq_msg_props_set(&p, k % 2 ? "A" : "B", "2");
        rmq_mem_fail_after(-1);
        assert_true(rc == RMQ_OK || rc == RMQ_ENOMEM);
        if (rc == RMQ_ENOMEM)
            assert_true(p.n == 1 || p.n == 2);
    }
    rmq_msg_props_clear(&p);
}

/* Expected values from Java 17: new String(bytes, UTF_8).hashCode(). */
static void test_java_hash(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int32_t want;
    } v[] = {
        {"TagA", 2598919},
        {"", 0},
        {"a", 97},
        {"\xe6\xa0\x87\xe7\xad\xbe", 857175}, /* two CJK characters */
        {"a\xf0\x9f\x98\x80"
         "b",
         57849694}, /* U+1F600 as a surrogate pair */
        {"\xf0\x9f\x98\x80", 1772899},
        {"\xc3\x9c"
         "n\xc3\xaf"
         "c\xc3\xb8"
         "d\xc3\xa9-tag",
         2057818916}, /* wraps past INT32_MAX */
        {"TagA||TagB", 1789476431},
        {"a\xff"
         "b",
         2124838}, /* an invalid byte reads as U+FFFD */
        /* malformed UTF-8 as Java 17 decodes it (30,000 random inputs agreed) */
        {"\xe2\x82"
         "A",
         2031588},                        /* a cut-short sequence: one U+FFFD */
        {"\xc0\x80", 2097056},            /* an overlong form: one per byte */
        {"\xf0\x9f\x98", 65533},          /* cut short at the end: one in all */
        {"\xed\xa0\x80", 65533},          /* a surrogate: one for its three bytes */
        {"\xe0\x80\x80", 65074269},       /* overlong: one per byte */
        {"\xf4\x90\x80\x80", 2017367872}, /* past U+10FFFF: one per byte */
        {"\xf0\x9f"
         "A",
         2031588},
        {"\x80", 65533},
        {"\xff"
         "A",
         2031588},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        assert_int_equal(rmq_java_string_hash(v[i].s, strlen(v[i].s)), v[i].want);
    assert_int_equal(rmq_msg_tags_code("TagA", 4), 2598919);
    assert_int_equal(rmq_msg_tags_code("", 0), 0);
    assert_int_equal(rmq_msg_tags_code(NULL, 0), 0);
    /* A truncated sequence at the end is read inside its bounds. */
    char *cut = rmq_malloc(2);
    memcpy(cut, "a\xf0", 2);
    assert_int_equal(rmq_java_string_hash(cut, 2), 97 * 31 + 0xFFFD);
    rmq_free(cut);
}

static void test_offset_id(void **state)
{
    (void)state;
    struct rmq_msg_host h = {{192, 168, 1, 2}, false, 10911};
    char id[RMQ_MSG_ID_V6_LEN + 1];
    assert_int_equal(rmq_msg_offset_id(&h, 0x0102030405060708, id), 32);
    assert_string_equal(id, "C0A8010200002A9F0102030405060708");
    struct rmq_msg_host back;
    int64_t off = 0;
    assert_int_equal(rmq_msg_offset_id_parse(id, 32, &back, &off), RMQ_OK);
    assert_host(&back, &h);
    assert_true(off == 0x0102030405060708);
    assert_int_equal(rmq_msg_offset_id_parse("c0a8010200002a9f0102030405060708", 32, &back, &off), RMQ_OK);
    assert_true(off == 0x0102030405060708);
    struct rmq_msg_host h6 = {{0xfe, 0x80, [15] = 0x01}, true, 8080};
    assert_int_equal(rmq_msg_offset_id(&h6, -1, id), 56);
    assert_string_equal(id, "FE80000000000000000000000000000100001F90FFFFFFFFFFFFFFFF");
    assert_int_equal(rmq_msg_offset_id_parse(id, 56, &back, &off), RMQ_OK);
    assert_host(&back, &h6);
    assert_true(off == -1);
    assert_int_equal(rmq_msg_offset_id_parse(id, 55, &back, &off), RMQ_EPROTO);
    assert_int_equal(rmq_msg_offset_id_parse("G0A8010200002A9F0102030405060708", 32, &back, &off),
                     RMQ_EPROTO);
    assert_int_equal(rmq_msg_offset_id_parse(NULL, 32, &back, &off), RMQ_EPROTO);
}

static void test_uniq_id(void **state)
{
    (void)state;
    assert_true(rmq_msg_month_start_ms(1700000000000) == 1698796800000); /* 2023-11-01 */
    assert_true(rmq_msg_month_start_ms(1709251199999) == 1706745600000); /* 2024-02-29 23:59:59.999 */
    assert_true(rmq_msg_month_start_ms(1709251200000) == 1709251200000); /* 2024-03-01 */
    assert_true(rmq_msg_month_start_ms(0) == 0);
    const uint8_t ip[4] = {10, 0, 0, 1};
    char id[RMQ_MSG_UNIQ_LEN + 1];
    rmq_msg_uniq_id(ip, 0x12345, 0xDEADBEEF, 1700000000000, 0x0102, id);
    /* ip, pid & 0xffff, salt, ms since 2023-11-01 (0x47B76000), counter */
    assert_string_equal(id, "0A0000012345DEADBEEF47B760000102");
    assert_int_equal(strlen(id), RMQ_MSG_UNIQ_LEN);
}

static void test_batch_decode(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_msg_batch_encode_item(1, (const uint8_t *)"ab", 2,
                                               "K\x01"
                                               "v\x02",
                                               4, &b),
                     RMQ_OK);
    assert_int_equal(rmq_msg_batch_encode_item(0, NULL, 0, NULL, 0, &b), RMQ_OK);
    assert_int_equal(rmq_msg_batch_encode_item(-1, (const uint8_t *)"xyz", 3,
                                               "UNIQ_KEY\x01"
                                               "U\x02",
                                               11, &b),
                     RMQ_OK);
    static const uint8_t first[] = {0, 0, 0, 28, 0, 0, 0,   0,   0, 0, 0,   0, 0,   0,
                                    0, 1, 0, 0,  0, 2, 'a', 'b', 0, 4, 'K', 1, 'v', 2};
    assert_memory_equal(buf_head(&b), first, sizeof first);
    struct rmq_msg_batch mb;
    char err[128] = "";
    assert_int_equal(rmq_msg_batch_decode(buf_head(&b), buf_live(&b), &mb, err, sizeof err), RMQ_OK);
    assert_int_equal(mb.n, 3);
    assert_int_equal(mb.items[0].flag, 1);
    assert_int_equal(mb.items[0].body_len, 2);
    assert_memory_equal(mb.items[0].body, "ab", 2);
    assert_int_equal(mb.items[0].props_len, 4);
    assert_null(mb.items[1].body);
    assert_null(mb.items[1].props);
    assert_int_equal(mb.items[2].flag, -1);
    assert_memory_equal(mb.items[2].props,
                        "UNIQ_KEY\x01"
                        "U\x02",
                        11);
    rmq_msg_batch_clear(&mb);
    /* Every prefix is refused. */
    for (size_t n = 0; n < buf_live(&b); n++) {
        if (n == 28 || n == 50)
            continue; /* whole messages: a shorter, valid batch */
        uint8_t *cut = rmq_malloc(n ? n : 1);
        memcpy(cut, buf_head(&b), n);
        assert_int_equal(rmq_msg_batch_decode(cut, n, &mb, err, sizeof err), RMQ_EPROTO);
        assert_null(mb.items);
        rmq_free(cut);
    }
    /* Malformed fields of the first message. */
    static const struct {
        size_t at;
        uint8_t val[4];
        size_t len;
        const char *why;
    } cases[] = {
        {0, {0, 0, 0, 21}, 4, "TOTALSIZE 21 out of range"},
        {0, {0, 0, 0, 29}, 4, "disagrees"},
        {0, {0, 0, 0, 27}, 4, "disagrees"},
        {0, {0xFF, 0xFF, 0xFF, 0xFF}, 4, "out of range"},
        {16, {0, 0, 0, 7}, 4, "body length 7 past TOTALSIZE"},
        {16, {0x80, 0, 0, 0}, 4, "past TOTALSIZE"},
        {22, {0x80, 0x04}, 2, "properties length negative"},
        {22, {0, 5}, 2, "disagrees"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf c;
        buf_init(&c, 0);
        assert_int_equal(buf_append(&c, buf_head(&b), buf_live(&b)), 0);
        memcpy(c.data + cases[i].at, cases[i].val, cases[i].len);
        int rc = rmq_msg_batch_decode(buf_head(&c), buf_live(&c), &mb, err, sizeof err);
        if (rc != RMQ_EPROTO || !strstr(err, cases[i].why))
            print_error("case %zu: %d %s\n", i, rc, err);
        assert_int_equal(rc, RMQ_EPROTO);
        assert_non_null(strstr(err, cases[i].why));
        buf_free(&c);
    }
    assert_int_equal(rmq_msg_batch_decode(NULL, 0, &mb, err, sizeof err), RMQ_EPROTO);
    /* The item array is the decoder's only allocation. */
    rmq_mem_fail_after(0);
    int rc = rmq_msg_batch_decode(buf_head(&b), buf_live(&b), &mb, err, sizeof err);
    rmq_mem_fail_after(-1);
    assert_int_equal(rc, RMQ_ENOMEM);
    assert_null(mb.items);
    assert_int_equal(rmq_msg_batch_encode_item(0, NULL, 0, "x", 40000, &b), RMQ_EINVAL);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_exact_bytes),
        cmocka_unit_test(test_record_round_trips),
        cmocka_unit_test(test_record_truncation),
        cmocka_unit_test(test_record_malformed),
        cmocka_unit_test(test_props_parse),
        cmocka_unit_test(test_props_edit),
        cmocka_unit_test(test_props_alloc_failures),
        cmocka_unit_test(test_java_hash),
        cmocka_unit_test(test_offset_id),
        cmocka_unit_test(test_uniq_id),
        cmocka_unit_test(test_batch_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
