/* notify_policy.c — see notify_policy.h. Pure; any thread. */
#include "notify_policy.h"

bool notify_policy_marks(const struct mship_group *g, enum notify_change change, bool notify_on_expiry)
{
    /* PROTOCOL (docs/protocol.md §4.5): the broker stays silent on expiry;
     * rmqcoord notifies unless told not to. */
    if (change == NOTIFY_CHANGE_EXPIRE && !notify_on_expiry)
        return false;
    /* PROTOCOL (docs/protocol.md §4.4): broadcast groups are not notified. */
    return mship_notifies(g);
}

bool notify_policy_sends(const struct mship_group *g)
{
    return g->nmembers > 0 && mship_notifies(g);
}

bool notify_policy_subscription_counts(unsigned flags)
{
    return !(flags & MSHIP_JOINED);
}
