/* request_dispatch.c — routes a request code to its handler; anything unknown gets
 * REQUEST_CODE_NOT_SUPPORTED with a remark (PROTOCOL: docs/protocol.md §2.1, never for a
 * oneway request). Loop thread only. */
#include "request_dispatch.h"
#include "admin_requests.h"
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
    {RMQ_REQ_CHECK_CLIENT_CONFIG, handle_check_client_config},
    {RMQ_REQ_GET_CONSUMER_CONNECTION_LIST, handle_get_consumer_connection_list},
    {RMQ_REQ_GET_ROUTEINFO_BY_TOPIC, handle_get_route},
    {RMQ_REQ_GET_BROKER_CLUSTER_INFO, handle_cluster_info},
    {RMQ_REQ_GET_KV_CONFIG, handle_get_kv_config},
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
    {RMQ_REQ_CONSUMER_SEND_MSG_BACK, handle_send_back},
    {400 /* QUERY_ASSIGNMENT */, handle_query_assignment}, /* 3 unless --compat broker */
    /* Admin tools (admin_*_requests.c; tests/mqadmin/FINDINGS.md §3). */
    {RMQ_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, handle_topic_list},
    {RMQ_REQ_GET_TOPIC_STATS_INFO, handle_topic_stats},
    {RMQ_REQ_GET_TOPIC_CONFIG, handle_topic_config},
    {RMQ_REQ_GET_BROKER_RUNTIME_INFO, handle_broker_runtime_info},
    {RMQ_REQ_UPDATE_AND_CREATE_TOPIC, handle_create_topic},
    {RMQ_REQ_DELETE_TOPIC_IN_BROKER, handle_delete_topic_in_broker},
    {RMQ_REQ_DELETE_TOPIC_IN_NAMESRV, handle_admin_noop},
    {RMQ_REQ_DELETE_KV_CONFIG, handle_admin_noop},
    {RMQ_REQ_UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, handle_update_sub_group},
    {RMQ_REQ_GET_ALL_SUBSCRIPTIONGROUP_CONFIG, handle_get_all_sub_groups},
    {RMQ_REQ_DELETE_SUBSCRIPTIONGROUP, handle_delete_sub_group},
    {RMQ_REQ_GET_CONSUMER_RUNNING_INFO, handle_forward_running_info},
    {RMQ_REQ_GET_CONSUME_STATS, handle_consume_stats},
    {RMQ_REQ_INVOKE_BROKER_TO_RESET_OFFSET, handle_reset_offset},
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
