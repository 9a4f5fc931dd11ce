/* admin_clients.h — the clients view of the admin API and evictions.
 * Loop thread only. Each returns a new reply (NULL on OOM) and sets *status. */
#ifndef RMQ_ADMIN_CLIENTS_H
#define RMQ_ADMIN_CLIENTS_H

#include <jansson.h>

struct broker;

/* {"clients":[client...]} sorted by clientId: one entry per client id with
 * a live channel that has heartbeated. */
json_t *admin_clients_list(struct broker *s, int *status);
/* One client (404 when no live channel carries the id). */
json_t *admin_client_get(struct broker *s, const char *client_id, int *status);
/* Closes every channel of group whose member carries client_id; the close
 * path records the leave and notifies the rest of the group. */
json_t *admin_group_evict(struct broker *s, const char *group, const char *client_id, int *status);

#endif
