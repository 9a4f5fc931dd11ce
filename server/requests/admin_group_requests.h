/* admin_group_requests.h — subscription-group configs set by admin tools
 * (200, 201, 207) and GET_CONSUMER_RUNNING_INFO (307) forwarded to the
 * client (tests/mqadmin/FINDINGS.md §3). Loop thread only. */
#ifndef RMQ_ADMIN_GROUP_REQUESTS_H
#define RMQ_ADMIN_GROUP_REQUESTS_H

#include "broker.h"

#include <stdbool.h>
#include <stdint.h>

void admin_group_req_update(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_group_req_get_all(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_group_req_delete(struct broker *s, struct conn *c, struct rmq_cmd *req);
void admin_group_req_forward_running_info(struct broker *s, struct conn *c, struct rmq_cmd *req);

/* At start: the stored subscription-group configs and the offsets' commit
 * times. 0 or an error (logged). */
int admin_group_req_load(struct broker *s);
/* Frees the config table (shutdown, reset); s->group_configs is NULL after. */
void admin_group_req_free(struct broker *s);

#endif
