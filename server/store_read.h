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

#endif
