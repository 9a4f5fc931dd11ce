/* request_codes.h — RocketMQ request and response codes used by rmqcoord
 * (values from the remoting protocol's RequestCode / ResponseCode). */
#ifndef RMQ_REQUEST_CODES_H
#define RMQ_REQUEST_CODES_H

enum rmq_request_code {
    RMQ_REQ_SEND_MESSAGE = 10,
    RMQ_REQ_PULL_MESSAGE = 11,
    RMQ_REQ_QUERY_CONSUMER_OFFSET = 14,
    RMQ_REQ_UPDATE_CONSUMER_OFFSET = 15,
    RMQ_REQ_SEARCH_OFFSET_BY_TIMESTAMP = 29,
    RMQ_REQ_GET_MAX_OFFSET = 30,
    RMQ_REQ_GET_MIN_OFFSET = 31,
    RMQ_REQ_GET_EARLIEST_MSG_STORETIME = 32,
    RMQ_REQ_HEART_BEAT = 34,
    RMQ_REQ_UNREGISTER_CLIENT = 35,
    RMQ_REQ_CONSUMER_SEND_MSG_BACK = 36,
    RMQ_REQ_GET_CONSUMER_LIST_BY_GROUP = 38,
    RMQ_REQ_NOTIFY_CONSUMER_IDS_CHANGED = 40,
    RMQ_REQ_LOCK_BATCH_MQ = 41,
    RMQ_REQ_UNLOCK_BATCH_MQ = 42,
    RMQ_REQ_CHECK_CLIENT_CONFIG = 46,
    RMQ_REQ_GET_KV_CONFIG = 101,
    RMQ_REQ_GET_ROUTEINFO_BY_TOPIC = 105,
    RMQ_REQ_GET_BROKER_CLUSTER_INFO = 106,
    RMQ_REQ_GET_CONSUMER_CONNECTION_LIST = 203,
    RMQ_REQ_GET_CONSUMER_RUNNING_INFO = 307,
    RMQ_REQ_SEND_MESSAGE_V2 = 310,
    RMQ_REQ_LITE_PULL_MESSAGE = 361,
};

enum rmq_response_code {
    RMQ_RESP_SUCCESS = 0,
    RMQ_RESP_SYSTEM_ERROR = 1,
    RMQ_RESP_SYSTEM_BUSY = 2,
    RMQ_RESP_REQUEST_CODE_NOT_SUPPORTED = 3,
    RMQ_RESP_NO_PERMISSION = 16,
    RMQ_RESP_TOPIC_NOT_EXIST = 17,
    RMQ_RESP_PULL_NOT_FOUND = 19,
    RMQ_RESP_PULL_RETRY_IMMEDIATELY = 20,
    RMQ_RESP_PULL_OFFSET_MOVED = 21,
    RMQ_RESP_QUERY_NOT_FOUND = 22,
    RMQ_RESP_SUBSCRIPTION_NOT_EXIST = 24,
    RMQ_RESP_CONSUMER_NOT_ONLINE = 206,
};

/* Static name of a request code ("UNKNOWN" when not in the table). */
static inline const char *rmq_request_name(int code)
{
    switch (code) {
    case 10: return "SEND_MESSAGE";
    case 11: return "PULL_MESSAGE";
    case 14: return "QUERY_CONSUMER_OFFSET";
    case 15: return "UPDATE_CONSUMER_OFFSET";
    case 29: return "SEARCH_OFFSET_BY_TIMESTAMP";
    case 30: return "GET_MAX_OFFSET";
    case 31: return "GET_MIN_OFFSET";
    case 32: return "GET_EARLIEST_MSG_STORETIME";
    case 34: return "HEART_BEAT";
    case 35: return "UNREGISTER_CLIENT";
    case 36: return "CONSUMER_SEND_MSG_BACK";
    case 38: return "GET_CONSUMER_LIST_BY_GROUP";
    case 40: return "NOTIFY_CONSUMER_IDS_CHANGED";
    case 41: return "LOCK_BATCH_MQ";
    case 42: return "UNLOCK_BATCH_MQ";
    case 46: return "CHECK_CLIENT_CONFIG";
    case 101: return "GET_KV_CONFIG";
    case 105: return "GET_ROUTEINFO_BY_TOPIC";
    case 106: return "GET_BROKER_CLUSTER_INFO";
    case 203: return "GET_CONSUMER_CONNECTION_LIST";
    case 307: return "GET_CONSUMER_RUNNING_INFO";
    case 310: return "SEND_MESSAGE_V2";
    case 361: return "LITE_PULL_MESSAGE";
    default: return "UNKNOWN";
    }
}

/* rmqcoord's own REGISTER_BROKER extField naming the broker's HTTP admin
 * address (host:port), so a name server can compare brokers' views of a group.
 * Real name servers ignore unknown extFields. */
#define CLUSTER_EXT_HTTP "rmqcoordHttp"

#endif
