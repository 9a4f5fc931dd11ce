/* metrics.h — the Prometheus text exposition (format 0.0.4) of /metrics.
 *
 * The loop thread renders its own state (metrics_loop_snapshot, via the
 * ADMIN_OP_METRICS mailbox op); the HTTP thread appends its request counters
 * with the same helpers (core/metrics_text.h) and serves the whole text.
 */
#ifndef RMQ_METRICS_H
#define RMQ_METRICS_H

#include "metrics_text.h"

#include <jansson.h>
#include <stdint.h>

struct broker;

/* Loop thread: new {"text": "..."} with every series of the loop's state;
 * *status 200, or NULL on OOM. */
json_t *metrics_loop_snapshot(struct broker *s, int *status);

#endif
