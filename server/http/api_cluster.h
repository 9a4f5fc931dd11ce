/* api_cluster.h — the HTTP thread's half of GET /api/cluster?group=G on a
 * name server. HTTP thread only. */
#ifndef RMQ_API_CLUSTER_H
#define RMQ_API_CLUSTER_H

#include <jansson.h>

/* Adds to a namesrv's /api/cluster?group=G reply each live broker's member
 * list (HTTP GET of its /api/groups/G, 1 s bound, loopback only) and the
 * differences. Takes reply; returns the (same or new) reply or NULL. */
json_t *api_cluster_augment(json_t *reply);

#endif
