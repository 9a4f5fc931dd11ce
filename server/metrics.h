/* metrics.h — the Prometheus text exposition (format 0.0.4) of /metrics.
 *
 * The loop thread renders its own state (metrics_loop_snapshot, via the
 * ADMIN_OP_METRICS mailbox op); the HTTP thread appends its request counters
 * with the same helpers and serves the whole text. The helpers are pure and
 * write into a struct buf (common/buf.h); they return 0 or RMQ_ENOMEM.
 */
#ifndef RMQ_METRICS_H
#define RMQ_METRICS_H

#include "buf.h"
#include "stats.h"

#include <jansson.h>
#include <stdint.h>

struct server;

/* "# HELP name help\n# TYPE name type\n". */
int metrics_header(struct buf *b, const char *name, const char *type, const char *help);
/* A label value with \\, \" and \n escaped, invalid UTF-8 bytes as '?'. */
int metrics_label_value(struct buf *b, const char *v);
/* "name{labels} value\n"; labels is already formatted (may be ""). */
int metrics_sample(struct buf *b, const char *name, const char *labels, uint64_t value);
/* The _bucket (cumulative, le in seconds, ending with +Inf), _sum (seconds)
 * and _count lines of a stats histogram, whose buckets are not cumulative. */
int metrics_histogram(struct buf *b, const char *name, const char *labels, const struct stats_histogram *h);

/* Loop thread: new {"text": "..."} with every series of the loop's state;
 * *status 200, or NULL on OOM. */
json_t *metrics_loop_snapshot(struct server *s, int *status);

#endif
