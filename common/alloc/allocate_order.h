/* allocate_order.h — the Java client's orders of queues and consumer ids,
 * and the sorts by them (allocate_order.c). Pure; any thread. */
#ifndef RMQ_ALLOCATE_ORDER_H
#define RMQ_ALLOCATE_ORDER_H

#include "allocate_types.h"

#include <stddef.h>
#include <stdint.h>

/* Java String.compareTo order of two UTF-8 strings: <0, 0, >0. Compares UTF-16
 * code units; invalid UTF-8 decodes to U+FFFD per maximal subpart, with a
 * final byte comparison so that the order stays total. */
int allocate_string_compare(const char *a, const char *b);
/* MessageQueue.compareTo: topic, brokerName, then queueId. (Java subtracts the
 * queueIds, which overflows only for ids 2^31 apart; this compares them.) */
int allocate_queue_compare(const struct allocate_queue *a, const struct allocate_queue *b);
/* Sorts in place into the client's order (no allocation). */
void allocate_sort_queues(struct allocate_queue *queues, size_t n);
void allocate_sort_consumers(const char **consumers, size_t n);

/* Writes q[0..n) into out in allocate_queue_compare order through a packed
 * radix sort; scratch has room for 2n keys. Returns 0, RMQ_ENOMEM, or
 * RMQ_E2BIG when the key does not fit 64 bits: the caller then takes the
 * comparison sort, which gives the same order. */
int allocate_sort_queues_packed(const struct allocate_queue *q, size_t n, struct allocate_queue *out,
                                uint64_t *scratch);

#endif
