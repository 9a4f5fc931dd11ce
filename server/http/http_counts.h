/* http_counts.h — the admin API's request counters for /metrics: requests
 * answered, by route, method and status (http_counts.c). Not locked: the
 * owner (http_admin.c) guards them with its lock and formats a copy. */
#ifndef RMQ_HTTP_COUNTS_H
#define RMQ_HTTP_COUNTS_H

#include "api_routes.h"

#include <stdint.h>

struct buf;

#define HTTP_COUNT_SLOTS 16 /* distinct (method, status) pairs counted per route */

struct http_count {
    unsigned method; /* enum api_method bit, 0 = free slot */
    unsigned status;
    uint64_t count;
};

struct http_counts {
    struct http_count slot[API_ROUTE_COUNT][HTTP_COUNT_SLOTS];
    uint64_t overflow; /* requests of a route whose slots were all taken */
};

/* Counts one answered request (route API_ROUTE_NONE for a 404; method 0
 * for a method no route serves). */
void http_counts_add(struct http_counts *c, unsigned route, unsigned method, unsigned status);

/* Appends the counters and the open stream gauge as metrics text to b.
 * 0, or RMQ_ENOMEM. */
int http_counts_append(const struct http_counts *c, unsigned streams, struct buf *b);

#endif
