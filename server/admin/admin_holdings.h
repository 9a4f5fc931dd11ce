/* admin_holdings.h — running-info / consistency / converged: the daemon asks
 * each client (GET_CONSUMER_RUNNING_INFO) and answers when all replied or
 * timed out. Loop thread only. */
#ifndef RMQ_ADMIN_HOLDINGS_H
#define RMQ_ADMIN_HOLDINGS_H

#include "broker.h"

#include <stdbool.h>

struct mailbox_msg;

/* Returns true when the message was deferred (completed later with
 * mailbox_complete); false when msg->status and msg->reply are already set. */
bool admin_holdings_handle(struct broker *s, struct mailbox_msg *msg);
/* --record-holdings-ms: asks every member of every group for its queues
 * and records each answer in the trace as it arrives (a group whose last
 * round is still waiting is skipped this time). Each ask waits half the
 * period, at most 3 s. */
void admin_holdings_record_tick(struct broker *s);
/* Shutdown: completes every holdings check still running (503). */
void admin_holdings_abort_all(struct broker *s);

#endif
