/* notify_policy.c — see notify_policy.h. Pure; any thread. */
#include "notify_policy.h"

bool notify_policy_marks(const struct mship_group *g, enum notify_change change,
                         const struct broker_dialect *d)
{
    /* PROTOCOL (docs/protocol.md §4.5): the broker stays silent on expiry;
     * rmqcoord notifies unless told not to. */
    if (change == NOTIFY_CHANGE_EXPIRE && !d->notify_on_expiry)
        return false;
    /* PROTOCOL (docs/protocol.md §4.4): broadcast groups are not notified, but by a 4.9 broker. */
    return d->notify_broadcast || mship_notifies(g);
}

bool notify_policy_sends(const struct mship_group *g, const struct broker_dialect *d)
{
    return g->nmembers > 0 && (d->notify_broadcast || mship_notifies(g));
}

bool notify_policy_unregister_marks(const struct mship_group *g, const struct broker_dialect *d)
{
    /* PROTOCOL (docs/protocol.md §4.6): the broker notifies a live group whoever unregistered. */
    return d->notify_noop_unregister && g->nmembers > 0 && notify_policy_marks(g, NOTIFY_CHANGE_LEAVE, d);
}

bool notify_policy_subscription_counts(unsigned flags)
{
    return !(flags & MSHIP_JOINED);
}

int64_t notify_policy_due_ms(int64_t marked_ms, int64_t sent_ms, size_t nmembers, int64_t coalesce_ms,
                             bool backlogged)
{
    int64_t due = marked_ms;
    if (backlogged) {
        int64_t gap = (int64_t)(nmembers * NOTIFY_BACKLOG_US_PER_MEMBER / 1000);
        gap = gap > NOTIFY_BACKLOG_MIN_MS ? gap : NOTIFY_BACKLOG_MIN_MS;
        int64_t from = sent_ms > marked_ms ? sent_ms : marked_ms;
        due = from + gap;
    }
    /* The window runs from the previous NOTIFY (sent_ms may be INT64_MIN). */
    if (coalesce_ms > 0 && sent_ms > marked_ms - coalesce_ms && sent_ms + coalesce_ms > due)
        due = sent_ms + coalesce_ms;
    return due;
}
