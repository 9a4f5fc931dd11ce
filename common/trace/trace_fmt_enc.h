/* trace_fmt_enc.h — the encoding half of the trace format: one event to
 * one JSON line (trace_fmt_enc.c). Pure; any thread. */
#ifndef RMQ_TRACE_FMT_ENC_H
#define RMQ_TRACE_FMT_ENC_H

#include "buf.h"
#include "trace_event.h"

/* Appends ev as one line, newline included. Strings that are not valid
 * UTF-8 are written with U+FFFD in place of the bad bytes (JSON must be
 * UTF-8); a body that is not strict JSON goes out as "bodyBase64". 0,
 * RMQ_EINVAL (an unusable event, e.g. a route without a topic) or
 * RMQ_ENOMEM / RMQ_E2BIG from the buffer (left unchanged then). */
int trace_encode_event(const struct trace_event *ev, struct buf *out);

/* "connect", "request", ... ("header" for TRACE_HEADER); static string. */
const char *trace_kind_name(enum trace_kind k);

/* The base64 alphabet of "bodyBase64" (the decoder reads it back). */
extern const char trace_fmt_b64[65];

#endif
