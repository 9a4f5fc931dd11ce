/* store_guard.h — what keeps the writer's store its own (store_guard.c):
 * the lock file, the check that the file is an rmqcoord store (before
 * anything writes to it), the log line for a 0-byte file, the check that
 * the file was not moved away, and the writer's bounded busy wait. Only
 * store.c calls them. Loop thread only.
 */
#ifndef RMQ_STORE_GUARD_H
#define RMQ_STORE_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* Takes the lock file: 0, or RMQ_ESTATE when another process holds it, or
 * -errno; err filled. */
int store_lock_acquire(struct store *s, const char *path, char *err, size_t errlen);
/* Records which file path is (after it exists), for store_file_moved. */
void store_note_file(struct store *s, const char *path);
/* Whether the database file was renamed away or deleted since it was
 * opened: later commits would go to a file nobody finds at the next
 * start. Sets errbuf when it was. */
bool store_file_moved(struct store *s);
void store_lock_release(struct store *s);
int store_check_ours(struct store *s, const char *path, int64_t version);
void store_note_empty_file(const char *path);
int store_bounded_busy(struct store *s);

#endif
