/* notify_policy.h — who is sent NOTIFY_CONSUMER_IDS_CHANGED, and after
 * which membership changes. The daemon (server/requests: member_events.c
 * marks, notify.c sends) and the trace replayer (server/replay/replay.c)
 * both ask these, so a replay predicts the daemon's NOTIFYs by the very same
 * rule. Pure; any thread.
 */
#ifndef RMQ_NOTIFY_POLICY_H
#define RMQ_NOTIFY_POLICY_H

#include "membership.h"

#include <stdbool.h>

enum notify_change {
    NOTIFY_CHANGE_JOIN,         /* a channel new to the group */
    NOTIFY_CHANGE_LEAVE,        /* the channel closed or sent UNREGISTER_CLIENT */
    NOTIFY_CHANGE_EXPIRE,       /* the channel missed its heartbeats */
    NOTIFY_CHANGE_SUBSCRIPTION, /* a topic added to or removed from the group's table */
};

/* Whether change to g marks the group for one NOTIFY (coalesced: the
 * group is sent it once, after the changes of the same turn).
 * notify_on_expiry is --notify-on-expiry (on by default). */
bool notify_policy_marks(const struct mship_group *g, enum notify_change change, bool notify_on_expiry);

/* Whether a marked group is sent its NOTIFY when the turn ends; if so,
 * every member it has then gets one, a member that just joined included. */
bool notify_policy_sends(const struct mship_group *g);

/* Whether a heartbeat's subscription change (its mship_flags) is a change
 * of its own: not when the same heartbeat joined the channel, which makes
 * the two one change, the join. */
bool notify_policy_subscription_counts(unsigned flags);

#endif
