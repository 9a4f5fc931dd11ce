/* admin_reply.h — the error object and the JSON names every loop-side admin
 * handler answers with. Loop thread only (jansson values are not shared). */
#ifndef RMQ_ADMIN_REPLY_H
#define RMQ_ADMIN_REPLY_H

#include <jansson.h>

/* New {"error","detail"} object; sets *status to code. */
json_t *admin_error_json(int *status, int code, const char *error, const char *detail);

/* A name (group, topic, client id) as a JSON string. Names come from the
 * wire or from stores written by older versions and may hold bytes that
 * are not UTF-8, which jansson refuses: each such byte becomes the four
 * characters \xHH (uppercase hex), the rest is kept. NULL only when out of
 * memory. Every admin reply writes names through this. */
json_t *admin_json_name(const char *name);

#endif
