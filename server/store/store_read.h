/* store_read.h — read-only SQLite access for the HTTP thread.
 *
 * A separate connection (WAL lets it read while the loop writes). Owned by
 * the thread that opened it. Results come back as new jansson references.
 */
#ifndef RMQ_STORE_READ_H
#define RMQ_STORE_READ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct store_reader;

int store_reader_open(const char *path, struct store_reader **out, char *err, size_t errlen);
void store_reader_close(struct store_reader *r);

/* Events with id > since_id (group NULL = every group), oldest first, at
 * most limit. Returns a new JSON object {"events":[{"id","ts","group","kind",
 * "clientId","channelId","before":[...],"after":[...]}],"next":<last id>}
 * or NULL on error (err filled). */
json_t *store_reader_events(struct store_reader *r, const char *group, int64_t since_id, int limit, char *err,
                            size_t errlen);

/* ---- queries of the admin surface (api_events.c, api_stream.c) ---- */

/* Highest event id so far (0 when none) into *out. 0 or RMQ_EIO. */
int store_reader_last_event_id(struct store_reader *r, int64_t *out, char *err, size_t errlen);
/* Events of group with from_ms <= ts <= to_ms and id > after_id, oldest
 * first, at most limit (1..1000): new {"events":[...],"lastId":id}. */
json_t *store_reader_group_history(struct store_reader *r, const char *group, int64_t from_ms, int64_t to_ms,
                                   int64_t after_id, int limit, char *err, size_t errlen);
/* The member list (client ids) of group as of time t_ms, from the latest
 * event at or before t: new {"members":[...],"eventId","eventTs"} (ids null
 * and members [] when the group had no event by then). NULL on error. */
json_t *store_reader_members_at(struct store_reader *r, const char *group, int64_t t_ms, char *err,
                                size_t errlen);
/* The clients row: new {"language","version","firstSeenMs","lastHeartbeatMs"},
 * json null when unknown, NULL on error. */
json_t *store_reader_client(struct store_reader *r, const char *client_id, char *err, size_t errlen);
/* How many events of kind the group had with ts >= since_ms. */
int store_reader_count_events(struct store_reader *r, const char *group, const char *kind, int64_t since_ms,
                              int64_t *out, char *err, size_t errlen);

#endif
