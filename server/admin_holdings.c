/* admin_holdings.c — placeholder. */
#include "mailbox.h"
#include "server.h"

bool admin_holdings_handle(struct server *s, struct mailbox_msg *msg)
{
    (void)s;
    msg->status = 501;
    msg->reply = json_pack("{s:s,s:s}", "error", "not implemented", "detail", "not built yet");
    return false;
}
