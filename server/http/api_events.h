/* api_events.h — history from the read-only store (api_events.c).
 * HTTP thread, inside the MHD access handler; int results are MHD_Result. */
#ifndef RMQ_API_EVENTS_H
#define RMQ_API_EVENTS_H

#include <jansson.h>
#include <stdint.h>

struct MHD_Connection;
struct store_reader;

/* Opens *reader from store_path on first use. 0, or answers 503 itself and
 * returns -1 with *r set. */
int api_store_reader(struct MHD_Connection *conn, const char *store_path, struct store_reader **reader,
                     int *r);

/* GET /api/events?group=G&since=ID&cursor=C&limit=N. query is the decoded
 * query object (borrowed). *reader is the HTTP thread's store_read
 * connection, opened from store_path on first use (NULL until then, and after
 * a failed open so the next request retries); the caller closes it. */
int api_events_get(struct MHD_Connection *conn, const json_t *query, const char *store_path,
                   struct store_reader **reader);
/* GET /api/groups/{group}/history?from=&to=&limit=&cursor=. */
int api_group_history(struct MHD_Connection *conn, const char *group, const json_t *query,
                      const char *store_path, struct store_reader **reader);
/* GET /api/groups/{group}/at?t=: the membership part. Returns 0 with *out a
 * new {"group","t","members","eventId","eventTs"} object, or -1 after
 * answering an error (*r set). */
int api_group_at(struct MHD_Connection *conn, const char *group, const json_t *query, const char *store_path,
                 struct store_reader **reader, json_t **out, int *r);
/* Adds what the store knows to a loop reply (reply borrowed, changed in
 * place): firstSeenMs for clients, subscription churn for diagnostics.
 * Errors are ignored: the live answer stands on its own. */
void api_augment_client(struct store_reader *reader, json_t *client);
void api_augment_diagnostics(struct store_reader *reader, json_t *diag, int64_t now_ms);

#endif
