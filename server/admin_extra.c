/* admin_extra.c — loop-side handlers of the admin surface's routes beyond
 * the first slice (ops from ADMIN_OP_EXTRA_FIRST on). Placeholder until the
 * admin-surface module lands. Loop thread only. */
#include "mailbox.h"
#include "server.h"

void admin_extra_handle(struct server *s, struct mailbox_msg *msg)
{
    (void)s;
    msg->status = 404;
    msg->reply = json_pack("{s:s,s:s}", "error", "unknown operation", "detail", "not served by this build");
}
