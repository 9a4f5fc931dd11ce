/* cluster_info.h — the ClusterInfo body (GET_BROKER_CLUSTER_INFO, 106). Pure. */
#ifndef RMQ_CLUSTER_INFO_H
#define RMQ_CLUSTER_INFO_H

#include "buf.h"

#include <stddef.h>

/* One broker of a ClusterInfo body (strings borrowed). */
struct cluster_info_broker {
    const char *broker_name;
    const char *cluster;
    const char *addr; /* master, brokerId 0 */
};
/* Appends ClusterInfo JSON: {"brokerAddrTable":{name:BrokerData},
 * "clusterAddrTable":{cluster:[names]}}, brokerAddrs keys bare as the
 * RocketMQ name server writes them (PROTOCOL: docs/protocol.md §3.5). brokers sorted by name.
 * 0 or RMQ_ENOMEM. */
int cluster_info_encode(const struct cluster_info_broker *brokers, size_t n, struct buf *out);

#endif
