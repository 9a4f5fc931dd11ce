/* metrics_text.h — writing the Prometheus text exposition (format 0.0.4).
 * The loop thread renders its state with these helpers (admin/metrics.c) and
 * the HTTP thread appends its request counters with the same ones. Each
 * writes into a struct buf and returns 0 or RMQ_ENOMEM. Pure: any thread. */
#ifndef RMQ_METRICS_TEXT_H
#define RMQ_METRICS_TEXT_H

#include "buf.h"
#include "stats.h"

#include <stdint.h>

/* "# HELP name help\n# TYPE name type\n". */
int metrics_header(struct buf *b, const char *name, const char *type, const char *help);
/* A label value with \\, \" and \n escaped, invalid UTF-8 bytes as '?'. */
int metrics_label_value(struct buf *b, const char *v);
/* "name{labels} value\n"; labels is already formatted (may be ""). */
int metrics_sample(struct buf *b, const char *name, const char *labels, uint64_t value);
/* The _bucket (cumulative, le in seconds, ending with +Inf), _sum (seconds)
 * and _count lines of a stats histogram, whose buckets are not cumulative. */
int metrics_histogram(struct buf *b, const char *name, const char *labels, const struct stats_histogram *h);

#endif
