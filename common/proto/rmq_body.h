/* rmq_body.h — every JSON body codec of the daemon in one include, for the
 * callers that use several. Each body type has its own file that both
 * parses and encodes it:
 *
 *   heartbeat_body.h      HeartbeatData, SubscriptionData
 *   route_body.h          TopicRouteData
 *   consumer_list_body.h  ConsumerListBody
 *   lock_body.h           LockBatchRequestBody, LockBatchResponseBody
 *   running_info_body.h   ConsumerRunningInfo (not included here)
 *   cluster_info.h        ClusterInfo (not included here)
 *   body_json.h           shared readers and writers, MessageQueue
 */
#ifndef RMQ_BODY_H
#define RMQ_BODY_H

#include "body_json.h"
#include "consumer_list_body.h"
#include "heartbeat_body.h"
#include "lock_body.h"
#include "route_body.h"

#endif
