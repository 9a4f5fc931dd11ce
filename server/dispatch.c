/* dispatch.c — routes a request code to its handler; anything unknown gets
 * REQUEST_CODE_NOT_SUPPORTED with a remark (PROTOCOL: §2.1, never for a
 * oneway request). Loop thread only. */
#include "conn.h"
#include "log.h"
#include "request_codes.h"
#include "server.h"

#include <stdio.h>

struct route {
    int code;
    handler_fn fn;
};

static const struct route routes[] = {
    {RMQ_REQ_HEART_BEAT, h_heartbeat},
    {RMQ_REQ_UNREGISTER_CLIENT, h_unregister_client},
    {RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP, h_get_consumer_list},
    {RMQ_REQ_CHECK_CLIENT_CONFIG, h_reply_success},
    {RMQ_REQ_GET_CONSUMER_CONNECTION_LIST, h_get_consumer_connection_list},
    {RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, h_get_route},
    {RMQ_REQ_GET_BROKER_CLUSTER_INFO, h_cluster_info},
    {RMQ_REQ_QUERY_CONSUMER_OFFSET, h_query_offset},
    {RMQ_REQ_UPDATE_CONSUMER_OFFSET, h_update_offset},
    {RMQ_REQ_GET_MAX_OFFSET, h_get_max_offset},
    {RMQ_REQ_GET_MIN_OFFSET, h_get_min_offset},
    {RMQ_REQ_SEARCH_OFFSET_BY_TIMESTAMP, h_search_offset},
    {RMQ_REQ_GET_EARLIEST_MSG_STORETIME, h_earliest_msg_storetime},
    {RMQ_REQ_PULL_MESSAGE, h_pull},
    {RMQ_REQ_LITE_PULL_MESSAGE, h_pull},
    {RMQ_REQ_LOCK_BATCH_MQ, h_lock_batch},
    {RMQ_REQ_UNLOCK_BATCH_MQ, h_unlock_batch},
    {RMQ_REQ_CONSUMER_SEND_MSG_BACK, h_reply_success},
};

void dispatch_request(struct server *s, struct conn *c, struct rmq_cmd *req)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (routes[i].code == req->code) {
            routes[i].fn(s, c, req);
            return;
        }
    }
    char remark[128];
    snprintf(remark, sizeof remark, "request code %d (%s) is not supported by rmqcoord", req->code,
             rmq_request_name(req->code));
    log_debug("%s from %s", remark, c->peer);
    server_reply_code(s, c, req, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, remark);
}
