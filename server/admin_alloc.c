/* admin_alloc.c — GET /api/groups/{group}/allocation, computed on the loop
 * thread from live members and the topic's route. Placeholder until the
 * allocation engine lands. */
#include "mailbox.h"
#include "server.h"

json_t *admin_allocation(struct server *s, const char *group, const json_t *query, int *status);

json_t *admin_allocation(struct server *s, const char *group, const json_t *query, int *status)
{
    (void)s;
    (void)group;
    (void)query;
    *status = 501;
    return json_pack("{s:s,s:s}", "error", "not implemented", "detail", "allocation view not built yet");
}
