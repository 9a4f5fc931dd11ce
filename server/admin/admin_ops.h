/* admin_ops.h — loop-side handlers of the admin surface's ops from
 * ADMIN_OP_EXTRA_FIRST on (reset, the virtual clock, diagnostics, the
 * allocation of a given member list), and the error object every loop-side
 * admin handler answers with. Loop thread only. */
#ifndef RMQ_ADMIN_OPS_H
#define RMQ_ADMIN_OPS_H

#include <jansson.h>

struct broker;
struct mailbox_msg;

/* New {"error","detail"} object; sets *status to code. */
json_t *admin_error_json(int *status, int code, const char *error, const char *detail);

/* A name (group, topic, client id) as a JSON string. Names come from the
 * wire or from stores written by older versions and may hold bytes that
 * are not UTF-8, which jansson refuses: each such byte becomes the four
 * characters \xHH (uppercase hex), the rest is kept. NULL only when out of
 * memory. Every admin reply writes names through this. */
json_t *admin_json_name(const char *name);

/* Sets msg->status and a new msg->reply, or defers (status MAILBOX_DEFERRED). */
void admin_ops_handle(struct broker *s, struct mailbox_msg *msg);

#endif
