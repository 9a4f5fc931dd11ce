/* request_dispatch.c — routes a request code to its handler; anything unknown gets
 * REQUEST_CODE_NOT_SUPPORTED with a remark (PROTOCOL: docs/protocol.md §2.1, never for a
 * oneway request). Loop thread only. */
#include "request_dispatch.h"
#include "broker.h"
#include "conn.h"
#include "consumer_requests.h"
#include "lock_requests.h"
#include "log.h"
#include "offset_requests.h"
#include "pull_requests.h"
#include "reply.h"
#include "request_codes.h"
#include "route_requests.h"

#include <stdio.h>

struct route {
    int code;
    handler_fn fn;
};

static const struct route routes[] = {
    {RMQ_REQ_HEART_BEAT, handle_heartbeat},
    {RMQ_REQ_UNREGISTER_CLIENT, handle_unregister_client},
    {RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP, handle_get_consumer_list},
    {RMQ_REQ_CHECK_CLIENT_CONFIG, handle_reply_success},
    {RMQ_REQ_GET_CONSUMER_CONNECTION_LIST, handle_get_consumer_connection_list},
    {RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, handle_get_route},
    {RMQ_REQ_GET_BROKER_CLUSTER_INFO, handle_cluster_info},
    {RMQ_REQ_QUERY_CONSUMER_OFFSET, handle_query_offset},
    {RMQ_REQ_UPDATE_CONSUMER_OFFSET, handle_update_offset},
    {RMQ_REQ_GET_MAX_OFFSET, handle_get_max_offset},
    {RMQ_REQ_GET_MIN_OFFSET, handle_get_min_offset},
    {RMQ_REQ_SEARCH_OFFSET_BY_TIMESTAMP, handle_search_offset},
    {RMQ_REQ_GET_EARLIEST_MSG_STORETIME, handle_earliest_msg_storetime},
    {RMQ_REQ_PULL_MESSAGE, handle_pull},
    {RMQ_REQ_LITE_PULL_MESSAGE, handle_pull},
    {RMQ_REQ_LOCK_BATCH_MQ, handle_lock_batch},
    {RMQ_REQ_UNLOCK_BATCH_MQ, handle_unlock_batch},
    {RMQ_REQ_CONSUMER_SEND_MSG_BACK, handle_reply_success},
};

void dispatch_request(struct broker *s, struct conn *c, struct rmq_cmd *req)
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
    reply_code(s, c, req, RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED, remark);
}
