/* notify_policy.h — who is sent NOTIFY_CONSUMER_IDS_CHANGED, and after
 * which membership changes. The daemon (server/requests: member_events.c
 * marks, notify.c sends) and the trace replayer (server/replay/replay.c)
 * both ask these, with the same broker dialect (dialect.h: the daemon's
 * --compat and notify flags, replay's --compat and its own flags), so a
 * replay predicts the daemon's NOTIFYs by the very same rule. Pure; any
 * thread.
 */
#ifndef RMQ_NOTIFY_POLICY_H
#define RMQ_NOTIFY_POLICY_H

#include "dialect.h"
#include "membership.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum notify_change {
    NOTIFY_CHANGE_JOIN,         /* a channel new to the group */
    NOTIFY_CHANGE_LEAVE,        /* the channel closed or sent UNREGISTER_CLIENT */
    NOTIFY_CHANGE_EXPIRE,       /* the channel missed its heartbeats */
    NOTIFY_CHANGE_SUBSCRIPTION, /* a topic added to or removed from the group's table */
};

/* Whether change to g marks the group for one NOTIFY (coalesced: the
 * group is sent it once, after the changes of the same turn), in dialect d
 * (its notify_on_expiry, notify_broadcast). */
bool notify_policy_marks(const struct mship_group *g, enum notify_change change,
                         const struct broker_dialect *d);

/* Whether a marked group is sent its NOTIFY when the turn ends, in dialect
 * d; if so, every member it has then gets one, a member that just joined
 * included. */
bool notify_policy_sends(const struct mship_group *g, const struct broker_dialect *d);

/* After an UNREGISTER_CLIENT naming g (what it removed, if anything, was a
 * leave of its own): whether g is marked besides, as a broker marks a live
 * group even when the channel was not in it (d->notify_noop_unregister). */
bool notify_policy_unregister_marks(const struct mship_group *g, const struct broker_dialect *d);

/* While the daemon's loop has more input ready than one turn takes, a
 * group's NOTIFYs are at least this far apart, and further for big groups
 * (NOTIFY_BACKLOG_US_PER_MEMBER): a storm of n joins (or closes) read in
 * turns of a few dozen would otherwise send every member a NOTIFY per turn,
 * O(n^2) frames. Per member it is about three times what queueing and
 * writing one NOTIFY costs, so fan-out stays under a quarter of the loop's
 * time during a storm; once the backlog drains the NOTIFY goes at once. */
#define NOTIFY_BACKLOG_MIN_MS 100
#define NOTIFY_BACKLOG_US_PER_MEMBER 50

/* When a group of nmembers marked at marked_ms may be sent its NOTIFY (ms,
 * the same clock): at once, unless the loop is backlogged (see above) or
 * coalesce_ms (--notify-coalesce-ms, 0 = off) has not passed since the
 * group's previous NOTIFY went out at sent_ms (INT64_MIN: none yet). A
 * group quiet for coalesce_ms is so notified at once, and a burst of
 * changes after it gets one more NOTIFY at the end of the window, sent to
 * the members the group has then. */
int64_t notify_policy_due_ms(int64_t marked_ms, int64_t sent_ms, size_t nmembers, int64_t coalesce_ms,
                             bool backlogged);

/* Whether a heartbeat's subscription change (its mship_flags) is a change
 * of its own: not when the same heartbeat joined the channel, which makes
 * the two one change, the join. */
bool notify_policy_subscription_counts(unsigned flags);

#endif
