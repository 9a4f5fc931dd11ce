/* cluster_info.c — the ClusterInfo body of GET_BROKER_CLUSTER_INFO
 * (see cluster_info.h). Pure. */
#include "cluster_info.h"

#include "body_json.h"

#include <stdbool.h>
#include <string.h>

int cluster_info_encode(const struct cluster_info_broker *brokers, size_t n, struct buf *out)
{
    int rc = buf_append_str(out, "{\"brokerAddrTable\":{");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (rc == 0)
            rc = rmq_json_append_string(out, brokers[i].broker_name);
        if (rc == 0)
            rc = buf_append_str(out, ":{\"brokerAddrs\":{0:");
        if (rc == 0)
            rc = rmq_json_append_string(out, brokers[i].addr);
        if (rc == 0)
            rc = buf_append_str(out, "},");
        if (rc == 0)
            rc = rmq_json_append_kv_str(out, "brokerName", brokers[i].broker_name, ',');
        if (rc == 0)
            rc = rmq_json_append_kv_str(out, "cluster", brokers[i].cluster, '}');
    }
    if (rc == 0)
        rc = buf_append_str(out, "},\"clusterAddrTable\":{");
    bool first_cluster = true;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !strcmp(brokers[k].cluster, brokers[i].cluster);
        if (seen)
            continue; /* listed with the first broker of its cluster */
        rc = buf_append_str(out, first_cluster ? "" : ",");
        first_cluster = false;
        if (rc == 0)
            rc = rmq_json_append_string(out, brokers[i].cluster);
        if (rc == 0)
            rc = buf_append_str(out, ":[");
        bool first = true;
        for (size_t k = i; rc == 0 && k < n; k++) {
            if (strcmp(brokers[k].cluster, brokers[i].cluster))
                continue;
            if (!first)
                rc = buf_append_u8(out, ',');
            first = false;
            if (rc == 0)
                rc = rmq_json_append_string(out, brokers[k].broker_name);
        }
        if (rc == 0)
            rc = buf_append_u8(out, ']');
    }
    if (rc == 0)
        rc = buf_append_str(out, "}}");
    return rc;
}
