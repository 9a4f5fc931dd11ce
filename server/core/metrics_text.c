/* metrics_text.c — the Prometheus text exposition format (0.0.4) helpers
 * (see metrics_text.h). Pure: any thread. */
#include "metrics_text.h"

#include "err.h"
#include "utf8.h"

#include <stdio.h>
#include <string.h>

int metrics_header(struct buf *b, const char *name, const char *type, const char *help)
{
    return buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

int metrics_label_value(struct buf *b, const char *v)
{
    const unsigned char *p = (const unsigned char *)v;
    int rc = 0;
    while (*p && rc == 0) {
        if (*p == '\\' || *p == '"') {
            rc = buf_append_u8(b, '\\');
            if (rc == 0)
                rc = buf_append_u8(b, *p);
            p++;
        } else if (*p == '\n') {
            rc = buf_append_str(b, "\\n");
            p++;
        } else {
            size_t n = utf8_seq_len(p);
            rc = n ? buf_append(b, p, n) : buf_append_u8(b, '?');
            p += n ? n : 1;
        }
    }
    return rc;
}

int metrics_sample(struct buf *b, const char *name, const char *labels, uint64_t value)
{
    if (labels && *labels)
        return buf_appendf(b, "%s{%s} %llu\n", name, labels, (unsigned long long)value);
    return buf_appendf(b, "%s %llu\n", name, (unsigned long long)value);
}

int metrics_histogram(struct buf *b, const char *name, const char *labels, const struct stats_histogram *h)
{
    const char *sep = labels && *labels ? "," : "";
    const char *lab = labels ? labels : "";
    uint64_t cum = 0;
    int rc = 0;
    for (size_t i = 0; i < STATS_BUCKETS && rc == 0; i++) {
        cum += h->buckets[i];
        if (i < STATS_BUCKETS - 1)
            rc = buf_appendf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, lab, sep,
                             (double)stats_bucket_bounds_us[i] / 1e6, (unsigned long long)cum);
        else
            rc = buf_appendf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, lab, sep, (unsigned long long)cum);
    }
    if (rc == 0)
        rc = buf_appendf(b, "%s_sum%s%s%s %.6f\n", name, *lab ? "{" : "", lab, *lab ? "}" : "",
                         (double)h->sum_us / 1e6);
    if (rc == 0)
        rc = buf_appendf(b, "%s_count%s%s%s %llu\n", name, *lab ? "{" : "", lab, *lab ? "}" : "",
                         (unsigned long long)h->count);
    return rc;
}
