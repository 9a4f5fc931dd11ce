/* trace_fmt.h — the heartbeat-trace record format (JSON Lines), encode and
 * decode (docs/trace-format.md).
 *
 * A trace is a header line {"rmqcoordTrace":1,"ts":<ms>,...} followed by one
 * event a line: connect, request, close, notify, route or holdings (what one
 * client said it held when the daemon asked it, --record-holdings-ms). A request keeps
 * what the membership logic consumes: code, header fields, extFields (as
 * strings) and the body, embedded as a JSON value when it is JSON (the
 * normal case) or as "bodyBase64" when it is not, so replay feeds the
 * daemon's own parser exactly the bytes the daemon saw.
 *
 * The decoder is a hand-written strict scanner rather than jansson because
 * replay must read >= 1M lines/s: it copies the line once into its own
 * buffer, unescapes strings in place and hands out borrowed pointers valid
 * until the next decode (a request line seen before but for its ts is
 * answered from the line cache below instead). It rejects anything malformed with a one-line reason
 * naming the line number and never reads outside the line, whatever the
 * input. Pure; one thread per decoder.
 */
#ifndef RMQ_TRACE_FMT_H
#define RMQ_TRACE_FMT_H

#include "trace_event.h"
#include "trace_fmt_enc.h"

#include <stddef.h>

void trace_decoder_init(struct trace_decoder *d);
void trace_decoder_free(struct trace_decoder *d);

/* Decodes one line (without or with its trailing newline) into *ev. lineno
 * only labels errors. Returns 0, RMQ_EPROTO (d->error says what and where),
 * RMQ_E2BIG (longer than TRACE_FMT_MAX_LINE) or RMQ_ENOMEM. */
int trace_decode_line(struct trace_decoder *d, const char *line, size_t len, size_t lineno,
                      struct trace_event *ev);

#endif
