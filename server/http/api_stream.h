/* api_stream.h — GET /api/events/stream, Server-Sent Events
 * (api_stream.c). HTTP thread; the int result is MHD_Result. */
#ifndef RMQ_API_STREAM_H
#define RMQ_API_STREAM_H

#include "api_host.h"

#include <jansson.h>

struct MHD_Connection;
struct store_reader;
struct http_admin;

/* Starts a stream answer on conn (query borrowed); host and h are the
 * server's (both borrowed, outliving the stream). Returns the MHD result. */
int api_stream_start(const struct api_host *host, struct http_admin *h, struct MHD_Connection *conn,
                     const json_t *query, const char *last_event_id, const char *store_path,
                     struct store_reader **reader);

#endif
