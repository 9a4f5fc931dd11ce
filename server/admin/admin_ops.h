/* admin_ops.h — loop-side handlers of the admin surface's ops from
 * ADMIN_OP_EXTRA_FIRST on (reset, the virtual clock, diagnostics, the
 * allocation of a given member list). Loop thread only. */
#ifndef RMQ_ADMIN_OPS_H
#define RMQ_ADMIN_OPS_H

struct broker;
struct mailbox_msg;

/* Sets msg->status and a new msg->reply, or defers (status MAILBOX_DEFERRED). */
void admin_ops_handle(struct broker *s, struct mailbox_msg *msg);

#endif
