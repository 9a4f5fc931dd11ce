/* http_counts.c — the admin API's request counters (see http_counts.h). */
#include "http_counts.h"

#include "metrics_text.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>

void http_counts_add(struct http_counts *c, unsigned route, unsigned method, unsigned status)
{
    assert(route < API_ROUTE_COUNT);
    struct http_count *slot = NULL;
    for (size_t i = 0; i < HTTP_COUNT_SLOTS && !slot; i++) {
        struct http_count *e = &c->slot[route][i];
        if (e->method == 0 || (e->method == method && e->status == status))
            slot = e;
    }
    if (slot) {
        slot->method = method ? method : 0x100; /* 0x100: a method we do not serve */
        slot->status = status;
        slot->count++;
    } else {
        c->overflow++;
    }
}

static const char *method_name(unsigned bit)
{
    switch (bit) {
    case API_GET: return "GET";
    case API_PUT: return "PUT";
    case API_DELETE: return "DELETE";
    case API_POST: return "POST";
    default: return "other";
    }
}

int http_counts_append(const struct http_counts *c, unsigned streams, struct buf *b)
{
    int rc = metrics_header(b, "rmqcoord_http_requests_total", "counter",
                            "Admin HTTP requests answered, by route template, method and status");
    for (unsigned r = 0; r < API_ROUTE_COUNT && rc == 0; r++) {
        const struct api_route_def *d = api_routes_def((enum api_route)r);
        for (size_t i = 0; i < HTTP_COUNT_SLOTS && rc == 0 && c->slot[r][i].method; i++) {
            assert(c->slot[r][i].count > 0); /* a slot is taken by its first request */
            char labels[256];
            snprintf(labels, sizeof labels, "route=\"%s\",method=\"%s\",status=\"%u\"",
                     d ? d->path : "unmatched", method_name(c->slot[r][i].method), c->slot[r][i].status);
            rc = metrics_sample(b, "rmqcoord_http_requests_total", labels, c->slot[r][i].count);
        }
    }
    if (rc == 0)
        rc = metrics_header(b, "rmqcoord_http_requests_uncounted_total", "counter",
                            "Requests not counted by route (more distinct statuses than slots)");
    if (rc == 0)
        rc = metrics_sample(b, "rmqcoord_http_requests_uncounted_total", "", c->overflow);
    if (rc == 0)
        rc = metrics_header(b, "rmqcoord_event_streams", "gauge", "Open /api/events/stream connections");
    if (rc == 0)
        rc = metrics_sample(b, "rmqcoord_event_streams", "", streams);
    return rc;
}
