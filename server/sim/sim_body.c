/* sim_body.c — see sim_body.h: the HeartbeatData a simulated Java push
 * consumer sends, and the holdings line. Pure; any thread. */
#include "sim_body.h"

#include "body_json.h"
#include "err.h"
#include "mem.h"

#include <inttypes.h>
#include <string.h>

/* ---- HeartbeatData ---- */

struct rmq_subscription sim_sub_data(const struct sim_sub *s)
{
    return (struct rmq_subscription){
        .topic = (char *)s->topic,
        .sub_string = (char *)"*",
        .expression_type = (char *)"TAG",
        .sub_version = s->sub_version,
    };
}

int sim_heartbeat_encode(const struct sim_heartbeat_spec *hb, struct buf *out)
{
    struct rmq_subscription *subs = rmq_calloc(hb->nsubs ? hb->nsubs : 1, sizeof *subs);
    if (!subs)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < hb->nsubs; i++)
        subs[i] = sim_sub_data(&hb->subs[i]);
    struct rmq_consumer_data consumer = {
        .group = (char *)hb->group,
        .consume_type = RMQ_CONSUME_PASSIVELY,
        .message_model = hb->broadcast ? RMQ_MODEL_BROADCASTING : RMQ_MODEL_CLUSTERING,
        .consume_from_where = 0, /* CONSUME_FROM_LAST_OFFSET */
        .subs = subs,
        .nsubs = hb->nsubs,
    };
    char *producer = (char *)"CLIENT_INNER_PRODUCER";
    struct rmq_heartbeat body = {
        .client_id = (char *)hb->client_id,
        .consumers = &consumer,
        .nconsumers = 1,
        .producer_groups = &producer,
        .nproducers = 1,
    };
    int rc = rmq_heartbeat_encode(&body, hb->v5_fields, out);
    rmq_free(subs);
    return rc;
}

/* ---- holdings line ---- */

int sim_holdings_line_encode(struct buf *out, int64_t t_ms, const char *client_id, const char *topic,
                             const struct allocate_queue *qs, size_t n, const char *reason)
{
    size_t mark = buf_live(out);
    int rc = buf_appendf(out, "{\"t\":%" PRId64 ",", t_ms);
    if (!rc)
        rc = rmq_json_append_kv_str(out, "clientId", client_id, ',');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "topic", topic, ',');
    if (!rc)
        rc = buf_append_str(out, "\"queues\":[");
    for (size_t i = 0; !rc && i < n; i++) {
        rc = buf_append_str(out, i ? ",{\"brokerName\":" : "{\"brokerName\":");
        if (!rc)
            rc = rmq_json_append_string(out, qs[i].broker_name);
        if (!rc)
            rc = buf_appendf(out, ",\"queueId\":%" PRId32 "}", qs[i].queue_id);
    }
    if (!rc)
        rc = buf_append_str(out, "],");
    if (!rc)
        rc = rmq_json_append_kv_str(out, "reason", reason, 0);
    return rmq_json_end_object(out, mark, rc);
}
