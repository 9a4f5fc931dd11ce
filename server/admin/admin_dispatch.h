/* admin_dispatch.h — the loop side of the HTTP admin API: the mailbox
 * handler. Loop thread only. */
#ifndef RMQ_ADMIN_DISPATCH_H
#define RMQ_ADMIN_DISPATCH_H

struct mailbox_msg;

/* Answers one admin message (ctx is the struct broker): fills msg->status
 * and a new msg->reply, or defers it (completed later with mailbox_complete). */
void admin_dispatch_handle(void *ctx, struct mailbox_msg *msg);

#endif
