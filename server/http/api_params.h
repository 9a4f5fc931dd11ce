/* api_params.h — cursors, pagination, names, tokens and the request
 * headers the router checks (api_params.c). Pure: any thread. */
#ifndef RMQ_API_PARAMS_H
#define RMQ_API_PARAMS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_ADMIN_NAME_MAX 255u /* longest decoded group / topic / client id, in bytes */
#define API_TOPIC_NAME_MAX 127u  /* RocketMQ Validators.TOPIC_MAX_LENGTH (PUT creates only these) */
#define API_LIST_LIMIT_DEFAULT 100
#define API_LIST_LIMIT_MAX 1000

/* New opaque cursor (rmq_free) naming the position after value in a list of
 * kind ('n' name-sorted lists, 'e' events). NULL on OOM. */
char *api_cursor_encode(char kind, const char *value);
/* Decodes a cursor of kind into a new *value (rmq_free). 0, RMQ_EINVAL for
 * a cursor that is not ours or of another list, RMQ_ENOMEM. */
int api_cursor_decode(const char *cursor, char kind, char **value);
/* Reads limit (default API_LIST_LIMIT_DEFAULT, 1..API_LIST_LIMIT_MAX) and
 * cursor (of kind, decoded into *after, NULL when absent) from query.
 * Returns 0, RMQ_EINVAL with why set to a static message, or RMQ_ENOMEM. */
int api_page_params(const json_t *query, char kind, int64_t *limit, char **after, const char **why);
/* Keeps, in reply[key] (an array of objects sorted by their string field),
 * the first limit entries whose field sorts after `after` (NULL: from the
 * start), and sets reply["next"] to the cursor past the last kept entry when
 * more follow, else null. 0, RMQ_EINVAL (no such array), RMQ_ENOMEM. */
int api_page_slice(json_t *reply, const char *key, const char *field, const char *after, int64_t limit);
/* For a page the loop built: replaces reply["_nextHex"] (hex of the last
 * name's raw bytes, or null on the last page) with reply["next"], the
 * cursor past it. 0, RMQ_EINVAL (malformed), RMQ_ENOMEM. */
int api_page_next_from_hex(json_t *reply);
/* Whether name is a topic RocketMQ accepts: ^[%|a-zA-Z0-9_-]+$, at most
 * API_TOPIC_NAME_MAX bytes (%RETRY%G and %DLQ%G pass). */
bool api_name_topic_valid(const char *name);
/* A name looked up (not created): 1..255 bytes, no control characters. */
bool api_name_lookup_valid(const char *name);
/* Constant-time comparison of a presented token with the expected one: the
 * time taken depends only on the expected token's length. */
bool api_token_equal(const char *given, size_t given_len, const char *want, size_t want_len);
/* The token of an "Authorization: Bearer TOKEN" header value (borrowed
 * pointer into header, length in *len), or NULL if it is not that form. */
const char *api_bearer_token(const char *header, size_t *len);

/* Whether a Host header value names this server: localhost (or a name
 * under .localhost), a loopback address (127.0.0.0/8, ::1), or cfg_host
 * (the --http host; a wildcard 0.0.0.0 / :: accepts any Host). The port is
 * not checked (a tunnel may forward another one). Stops DNS rebinding: a
 * page of evil.example whose name now resolves to 127.0.0.1 still sends
 * Host: evil.example. */
bool api_host_allowed(const char *host, const char *cfg_host);
/* Whether a Content-Type value is application/json (parameters such as
 * charset allowed, case-insensitive). A browser sends it cross-site only
 * after a CORS preflight, which this server never grants. */
bool api_content_type_json(const char *ct);

#endif
