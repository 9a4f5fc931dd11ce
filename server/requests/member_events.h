/* member_events.h — the registry hooks of the daemon: membership changes
 * persisted, logged and turned into NOTIFYs. Loop thread only. */
#ifndef RMQ_MEMBER_EVENTS_H
#define RMQ_MEMBER_EVENTS_H

#include "broker.h"

/* Fills out with the hooks that record s's membership changes (ctx = s). */
void member_events_hooks(struct broker *s, struct registry_hooks *out);
/* The next event of every group stores full member lists: after a lost
 * batch the snapshot that later deltas would refer to may be gone. */
void member_events_need_snapshots(struct broker *s);
/* When the store asks for it (store_resync_due: a write or commit failed),
 * re-writes into the open batch every live channel, group, member and
 * subscription, an event with each group's full member list (kind
 * "resync"), and ends what the store still has live but the registry does
 * not: the joins, leaves and closes of lost batches reach the store once it
 * works again. */
void member_events_resync(struct broker *s);
/* Marks g for a NOTIFY as a member's leaving would (the broker's NOTIFY after an
 * UNREGISTER_CLIENT that removed nothing, --notify-on-noop-unregister). */
void member_events_mark_notify(struct broker *s, struct reg_group *g);

#endif
