/* bench_load_requests.c — bench_load's requests, pre-encoded once with the
 * project's codec (rmq_frame_encode) so the load loop only copies bytes.
 * One thread.
 */
#include "bench_load_internal.h"
#include "remoting_cmd.h"
#include "remoting_frame.h"

int encode_request(int32_t code, const char *k, const char *v, const char *body, size_t body_len,
                   struct buf *out)
{
    struct rmq_cmd cmd;
    rmq_cmd_init_request(&cmd, code, 1, 0);
    cmd.language = RMQ_LANG_JAVA;
    cmd.version = 409;
    int rc = k ? rmq_cmd_ext_set(&cmd, k, v) : 0;
    if (rc == 0 && body)
        rc = rmq_cmd_set_body_copy(&cmd, body, body_len);
    buf_init(out, 0);
    if (rc == 0)
        rc = rmq_frame_encode(&cmd, out);
    rmq_cmd_clear(&cmd);
    return rc;
}

/* A HeartbeatData body naming ngroups groups PREFIX{first}.., each subscribed to "T". */
int heartbeat_frame(const char *client_id, const char *prefix, int first, int ngroups, struct buf *out)
{
    return heartbeat_frame_padded(client_id, prefix, first, ngroups, 0, out);
}

int heartbeat_frame_padded(const char *client_id, const char *prefix, int first, int ngroups, int pad,
                           struct buf *out)
{
    struct buf body;
    buf_init(&body, 0);
    int rc = buf_appendf(&body, "{\"clientID\":\"%s\",\"consumerDataSet\":[", client_id);
    for (int i = 0; rc == 0 && i < ngroups; i++)
        rc = buf_appendf(
            &body,
            "%s{\"groupName\":\"%s%d\",\"consumeType\":\"CONSUME_PASSIVELY\","
            "\"messageModel\":\"CLUSTERING\",\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\","
            "\"subscriptionDataSet\":[{\"topic\":\"T\",\"subString\":\"*\",\"subVersion\":1,"
            "\"tagsSet\":[],\"codeSet\":[],\"classFilterMode\":false,\"expressionType\":\"TAG\"}],"
            "\"unitMode\":false}",
            i ? "," : "", prefix, first + i);
    if (rc == 0)
        rc = buf_append_str(&body, "],\"producerDataSet\":[]");
    for (int i = 0; rc == 0 && i < pad; i++)
        rc = buf_append_u8(&body, ' ');
    if (rc == 0)
        rc = buf_append_u8(&body, '}');
    if (rc == 0)
        rc = encode_request(34, NULL, NULL, (const char *)buf_head(&body), buf_live(&body), out);
    buf_free(&body);
    return rc;
}
