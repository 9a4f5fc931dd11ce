/* admin_extra.h — shared declarations of the admin surface's loop-side
 * files (admin_extra.c, admin_clients.c). Loop thread only. */
#ifndef RMQ_ADMIN_EXTRA_H
#define RMQ_ADMIN_EXTRA_H

#include <jansson.h>

struct server;

/* New {"error","detail"} object; sets *status to code. */
json_t *admin_extra_error(int *status, int code, const char *error, const char *detail);

/* admin_clients.c. Each returns a new reply (NULL on OOM) and sets *status. */
/* {"clients":[client...]} sorted by clientId: one entry per client id with
 * a live channel that has heartbeated. */
json_t *admin_clients_list(struct server *s, int *status);
/* One client (404 when no live channel carries the id). */
json_t *admin_client_get(struct server *s, const char *client_id, int *status);
/* Closes every channel of group whose member carries client_id; the close
 * path records the leave and notifies the rest of the group. */
json_t *admin_group_evict(struct server *s, const char *group, const char *client_id, int *status);

#endif
