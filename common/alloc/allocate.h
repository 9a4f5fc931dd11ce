/* allocate.h — the six client-side queue-allocation strategies, exact to the
 * Java client (RocketMQ 4.9.x/5.x), for reproducing a group's view on the
 * server (docs/protocol.md §11).
 *
 * Two entry points:
 *   allocate_one()   — one consumer's queues, exactly as the client's
 *                      strategy computes them from the lists it is given
 *                      (the client sorts both lists first: use
 *                      allocate_sort_queues / allocate_sort_consumers);
 *   allocate_group() — every consumer of a group in one pass from unsorted
 *                      lists (sorts once, builds the hash ring once), plus a
 *                      check: queue -> owners, unassigned and overlapping
 *                      queues.
 *
 * Ownership: every string is borrowed. Inputs are plain C arrays the caller
 * keeps alive for as long as it uses the results, because results point at
 * the caller's strings instead of copying them. Returned arrays and results
 * are new and owned by the caller.
 *
 * Strings are NUL-terminated UTF-8. They are ordered as Java's
 * String.compareTo orders them (UTF-16 code units), so names with characters
 * outside the BMP sort as the Java client sorts them.
 *
 * Pure C11: no I/O, no globals, no jansson; any thread.
 */
#ifndef RMQ_ALLOCATE_H
#define RMQ_ALLOCATE_H

#include "allocate_group.h"
#include "allocate_options.h"
#include "allocate_order.h"
#include "allocate_room.h"
#include "allocate_types.h"

#include <stddef.h>
#include <stdint.h>

/* Computes the queues consumer current_cid gets, as the Java strategy's
 * allocate(group, currentCID, mqAll, cidAll) returns them: in->queues and
 * in->consumers are used in the order given (the client passes them sorted).
 *
 * Returns 0 with *out a new array (free with rmq_free; non-NULL even when
 * *n_out is 0) whose strings are borrowed from in->queues or opt->config.
 * current_cid not in the consumer list gives 0 and an empty array (the Java
 * "[BUG] not in cidAll" path). Errors, with a message in err (err may be NULL;
 * err_len bytes, always NUL-terminated):
 *   RMQ_EINVAL — what Java throws for: empty current_cid, queue or consumer
 *                list empty, negative virtual_nodes, missing machine room;
 *                also a NULL string or a bad option value;
 *   RMQ_E2BIG  — the hash ring would exceed HASH_RING_MAX_VNODES;
 *   RMQ_ENOMEM.
 * CONFIG performs no checks: it returns opt->config whatever the inputs. */
int allocate_one(const struct allocate_options *opt, const struct allocate_input *in, const char *current_cid,
                 struct allocate_queue **out, size_t *n_out, char *err, size_t err_len);

#endif
