/* request_dispatch.c — routes a request code to its handler; anything unknown gets
 * REQUEST_CODE_NOT_SUPPORTED with a remark (PROTOCOL: docs/protocol.md §2.1, never for a
 * oneway request). Loop thread only. */
#include "request_dispatch.h"
#include "admin_group_requests.h"
#include "admin_offset_requests.h"
#include "admin_topic_requests.h"
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
#include "send_back_requests.h"
#include "send_requests.h"

#include <assert.h>
#include <stdio.h>

struct route {
    int code;
    handler_fn fn;
};

static const struct route routes[] = {
    {RMQ_REQ_HEART_BEAT, consumer_req_heartbeat},
    {RMQ_REQ_UNREGISTER_CLIENT, consumer_req_unregister_client},
    {RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP, consumer_req_get_list},
    {RMQ_REQ_CHECK_CLIENT_CONFIG, consumer_req_check_client_config},
    {RMQ_REQ_GET_CONSUMER_CONNECTION_LIST, consumer_req_get_connection_list},
    {RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, route_req_get_route},
    {RMQ_REQ_GET_BROKER_CLUSTER_INFO, route_req_cluster_info},
    {RMQ_REQ_GET_KV_CONFIG, route_req_get_kv_config},
    {RMQ_REQ_QUERY_CONSUMER_OFFSET, offset_req_query},
    {RMQ_REQ_UPDATE_CONSUMER_OFFSET, offset_req_update},
    {RMQ_REQ_GET_MAX_OFFSET, offset_req_get_max},
    {RMQ_REQ_GET_MIN_OFFSET, offset_req_get_min},
    {RMQ_REQ_SEARCH_OFFSET_BY_TIMESTAMP, offset_req_search},
    {RMQ_REQ_GET_EARLIEST_MSG_STORETIME, offset_req_earliest_msg_storetime},
    {RMQ_REQ_SEND_MESSAGE, send_req_message},
    {RMQ_REQ_SEND_MESSAGE_V2, send_req_message},
    {320 /* SEND_BATCH_MESSAGE */, send_req_message},
    {RMQ_REQ_PULL_MESSAGE, pull_req_message},
    {RMQ_REQ_LITE_PULL_MESSAGE, pull_req_message},
    {RMQ_REQ_LOCK_BATCH_MQ, lock_req_lock_batch},
    {RMQ_REQ_UNLOCK_BATCH_MQ, lock_req_unlock_batch},
    {RMQ_REQ_CONSUMER_SEND_MSG_BACK, send_back_req},
    {RMQ_REQ_QUERY_ASSIGNMENT, consumer_req_query_assignment}, /* 3 unless --compat broker */
    /* Admin tools (admin_*_requests.c; tests/mqadmin/FINDINGS.md §3). */
    {RMQ_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, admin_topic_req_list},
    {RMQ_REQ_GET_TOPIC_STATS_INFO, admin_topic_req_stats},
    {RMQ_REQ_GET_TOPIC_CONFIG, admin_topic_req_config},
    {RMQ_REQ_GET_BROKER_RUNTIME_INFO, admin_topic_req_broker_runtime_info},
    {RMQ_REQ_UPDATE_AND_CREATE_TOPIC, admin_topic_req_create},
    {RMQ_REQ_DELETE_TOPIC_IN_BROKER, admin_topic_req_delete_in_broker},
    {RMQ_REQ_DELETE_TOPIC_IN_NAMESRV, admin_topic_req_noop},
    {RMQ_REQ_DELETE_KV_CONFIG, admin_topic_req_noop},
    {RMQ_REQ_UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, admin_group_req_update},
    {RMQ_REQ_GET_ALL_SUBSCRIPTIONGROUP_CONFIG, admin_group_req_get_all},
    {RMQ_REQ_DELETE_SUBSCRIPTIONGROUP, admin_group_req_delete},
    {RMQ_REQ_GET_CONSUMER_RUNNING_INFO, admin_group_req_forward_running_info},
    {RMQ_REQ_GET_CONSUME_STATS, admin_offset_req_consume_stats},
    {RMQ_REQ_INVOKE_BROKER_TO_RESET_OFFSET, admin_offset_req_reset},
};

void dispatch_request(struct broker *s, struct conn *c, struct rmq_cmd *req)
{
    assert(!rmq_cmd_is_response(req)); /* responses go to outbound.c (turn.c) */
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
