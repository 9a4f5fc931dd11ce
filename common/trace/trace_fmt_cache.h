/* trace_fmt_cache.h — the decoder's line cache (trace_fmt_cache.c): request
 * lines equal but for "ts" to one decoded before are answered from a copy
 * of that decode. One thread per decoder. */
#ifndef RMQ_TRACE_FMT_CACHE_H
#define RMQ_TRACE_FMT_CACHE_H

#include <stdbool.h>
#include <stddef.h>

struct trace_decoder;
struct trace_event;

/* The line cache (trace_fmt_cache.c). trace_line_hit: whether line equals a
 * cached request line but for "ts", then *ev is that decode with this ts.
 * trace_line_remember: keeps a request line that decoded in full, its
 * unescaped copy at p (failing to keep it costs only speed). */
bool trace_line_hit(struct trace_decoder *d, const unsigned char *line, size_t len, struct trace_event *ev);
void trace_line_remember(struct trace_decoder *d, const unsigned char *line, size_t len,
                         const unsigned char *p, struct trace_event *ev);
void trace_line_cache_free(struct trace_decoder *d);

#endif
