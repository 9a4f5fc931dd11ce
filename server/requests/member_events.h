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

#endif
