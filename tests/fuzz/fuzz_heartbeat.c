/* fuzz_heartbeat.c — the HeartbeatData body parser.
 *
 * Invariants: a rejected body returns RMQ_EPROTO with a reason and leaves
 * the struct zeroed; an accepted one satisfies what the parser promises
 * (non-empty ids and topics, enums in range, defaults filled in), copies
 * deeply (rmq_subscription_copy), and, written back by rmq_heartbeat_encode
 * (byte for byte what a piecewise reference writes), parses to an equal
 * struct; parse then clear leaves no leak (LeakSanitizer in the libFuzzer
 * build); with one allocation failed on purpose the parser either succeeds
 * identically or returns RMQ_ENOMEM and owns nothing.
 */
#include "err.h"
#include "fuzz_common.h"
#include "heartbeat_body.h"

static bool sub_equal(const struct rmq_subscription *a, const struct rmq_subscription *b)
{
    if (!fuzz_str_eq(a->topic, b->topic) || !fuzz_str_eq(a->sub_string, b->sub_string) ||
        !fuzz_str_eq(a->expression_type, b->expression_type) || a->sub_version != b->sub_version ||
        a->class_filter_mode != b->class_filter_mode || a->ntags != b->ntags || a->ncodes != b->ncodes)
        return false;
    for (size_t i = 0; i < a->ntags; i++)
        if (!fuzz_str_eq(a->tags[i], b->tags[i]))
            return false;
    return a->ncodes == 0 || memcmp(a->codes, b->codes, a->ncodes * sizeof *a->codes) == 0;
}

static bool hb_equal(const struct rmq_heartbeat *a, const struct rmq_heartbeat *b)
{
    if (!fuzz_str_eq(a->client_id, b->client_id) || a->nconsumers != b->nconsumers ||
        a->nproducers != b->nproducers || a->fingerprint != b->fingerprint ||
        a->without_sub != b->without_sub)
        return false;
    for (size_t i = 0; i < a->nproducers; i++)
        if (!fuzz_str_eq(a->producer_groups[i], b->producer_groups[i]))
            return false;
    for (size_t i = 0; i < a->nconsumers; i++) {
        const struct rmq_consumer_data *x = &a->consumers[i], *y = &b->consumers[i];
        if (!fuzz_str_eq(x->group, y->group) || x->consume_type != y->consume_type ||
            x->message_model != y->message_model || x->consume_from_where != y->consume_from_where ||
            x->unit_mode != y->unit_mode || x->nsubs != y->nsubs)
            return false;
        for (size_t j = 0; j < x->nsubs; j++)
            if (!sub_equal(&x->subs[j], &y->subs[j]))
                return false;
    }
    return true;
}

static void check_shape(const struct rmq_heartbeat *hb)
{
    FUZZ_CHECK(hb->client_id && hb->client_id[0]);
    FUZZ_CHECK(hb->nconsumers == 0 || hb->consumers);
    FUZZ_CHECK(hb->nproducers == 0 || hb->producer_groups);
    for (size_t i = 0; i < hb->nproducers; i++)
        FUZZ_CHECK(hb->producer_groups[i] && hb->producer_groups[i][0]);
    for (size_t i = 0; i < hb->nconsumers; i++) {
        const struct rmq_consumer_data *c = &hb->consumers[i];
        FUZZ_CHECK(c->group && c->group[0]);
        FUZZ_CHECK(c->consume_type == RMQ_CONSUME_ACTIVELY || c->consume_type == RMQ_CONSUME_PASSIVELY);
        FUZZ_CHECK(c->message_model == RMQ_MODEL_BROADCASTING || c->message_model == RMQ_MODEL_CLUSTERING);
        FUZZ_CHECK(c->consume_from_where >= 0 && c->consume_from_where <= 5);
        FUZZ_CHECK(c->nsubs == 0 || c->subs);
        for (size_t j = 0; j < c->nsubs; j++) {
            const struct rmq_subscription *s = &c->subs[j];
            FUZZ_CHECK(s->topic && s->topic[0]);
            FUZZ_CHECK(s->sub_string && s->sub_string[0]);
            FUZZ_CHECK(s->expression_type && s->expression_type[0]);
            FUZZ_CHECK(s->ntags == 0 || s->tags);
            FUZZ_CHECK(s->ncodes == 0 || s->codes);
            for (size_t k = 0; k < s->ntags; k++)
                FUZZ_CHECK(s->tags[k] != NULL);
            struct rmq_subscription copy;
            FUZZ_CHECK(rmq_subscription_copy(&copy, s) == RMQ_OK);
            FUZZ_CHECK(sub_equal(s, &copy));
            rmq_subscription_clear(&copy);
        }
    }
}

/* HeartbeatData JSON for hb, in Java's key order, written piece by piece:
 * the reference rmq_heartbeat_encode must agree with. */
static void encode_heartbeat(const struct rmq_heartbeat *hb, struct buf *out)
{
    int rc = buf_append_str(out, "{\"clientID\":");
    rc |= rmq_json_append_string(out, hb->client_id);
    rc |= buf_append_str(out, ",\"consumerDataSet\":[");
    for (size_t i = 0; i < hb->nconsumers; i++) {
        const struct rmq_consumer_data *c = &hb->consumers[i];
        rc |= buf_appendf(
            out, "%s{\"consumeFromWhere\":\"%s\",\"consumeType\":\"%s\",\"groupName\":", i ? "," : "",
            rmq_consume_from_where_name(c->consume_from_where), rmq_consume_type_name(c->consume_type));
        rc |= rmq_json_append_string(out, c->group);
        rc |= buf_appendf(out, ",\"messageModel\":\"%s\",\"subscriptionDataSet\":[",
                          rmq_message_model_name(c->message_model));
        for (size_t j = 0; j < c->nsubs; j++) {
            if (j)
                rc |= buf_append_u8(out, ',');
            rc |= rmq_subscription_encode(&c->subs[j], out);
        }
        rc |= buf_appendf(out, "],\"unitMode\":%s}", c->unit_mode ? "true" : "false");
    }
    rc |= buf_appendf(out, "],\"heartbeatFingerprint\":%d,\"producerDataSet\":[", (int)hb->fingerprint);
    for (size_t i = 0; i < hb->nproducers; i++) {
        rc |= buf_append_str(out, i ? ",{\"groupName\":" : "{\"groupName\":");
        rc |= rmq_json_append_string(out, hb->producer_groups[i]);
        rc |= buf_append_u8(out, '}');
    }
    rc |= buf_appendf(out, "],\"withoutSub\":%s}", hb->without_sub ? "true" : "false");
    FUZZ_CHECK(rc == 0);
}

static void check_round_trip(const struct rmq_heartbeat *hb)
{
    struct buf e, ref;
    buf_init(&e, 0);
    buf_init(&ref, 0);
    FUZZ_CHECK(rmq_heartbeat_encode(hb, true, &e) == RMQ_OK);
    encode_heartbeat(hb, &ref);
    FUZZ_CHECK(buf_live(&e) == buf_live(&ref) && memcmp(buf_head(&e), buf_head(&ref), buf_live(&e)) == 0);
    buf_free(&ref);
    struct rmq_heartbeat back = {0};
    char err[200] = "";
    int rc = rmq_heartbeat_parse(buf_head(&e), buf_live(&e), &back, err, sizeof err);
    if (rc)
        fprintf(stderr, "re-parse failed: %d %s\n%.*s\n", rc, err, (int)buf_live(&e),
                (const char *)buf_head(&e));
    FUZZ_CHECK(rc == RMQ_OK);
    FUZZ_CHECK(hb_equal(hb, &back));
    rmq_heartbeat_clear(&back);
    buf_free(&e);
}

static bool is_zero(const struct rmq_heartbeat *hb)
{
    static const struct rmq_heartbeat zero;
    return memcmp(hb, &zero, sizeof zero) == 0;
}

static void check_accepted(const struct rmq_heartbeat *hb)
{
    check_shape(hb);
    check_round_trip(hb);
}

FUZZ_DECODER(heartbeat, struct rmq_heartbeat, rmq_heartbeat_parse, rmq_heartbeat_parse,
             fuzz_fail_point_after_json, hb_equal, is_zero, rmq_heartbeat_clear, check_accepted)

FUZZ_DECODER_MAIN(heartbeat, struct rmq_heartbeat)
