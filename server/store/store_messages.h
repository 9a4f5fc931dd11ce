/* store_messages.h — the writer's message rows (schema/0005_messages.sql):
 * puts in the open batch, reads on the writer's own connection (so the
 * loop reads what it has just written, committed or not), lookups by
 * physical id and by key, and retention that removes the oldest messages
 * in bounded chunks. Loop thread only. Returns 0 or a negative RMQ_E*
 * code like the rest of store.h (RMQ_EEXIST for a taken (topic, queue,
 * offset) or physical id); strings and bytes are borrowed.
 */
#ifndef RMQ_STORE_MESSAGES_H
#define RMQ_STORE_MESSAGES_H

#include "message_record.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/* One message row. To put: every field but size (computed here); read:
 * every field, pointers valid only during the callback. */
struct store_message {
    int64_t physical_id; /* > 0, increasing: the caller hands them out */
    const char *topic;
    int queue_id;
    int64_t queue_offset;
    int64_t size; /* the record's TOTALSIZE (rmq_msg_record_size) */
    int64_t born_ms;
    int64_t store_ms;
    int32_t flag;
    int32_t sys_flag; /* its host bits must match born_host / store_host */
    int64_t tags_code;
    int32_t reconsume_times;
    int32_t body_crc;
    int64_t deliver_ms;   /* a delayed message: not before; 0 = at once */
    const char *uniq_key; /* the UNIQ_KEY property; may be NULL */
    const char *keys;     /* put only: the KEYS property (space-separated); may be NULL */
    struct rmq_msg_host born_host;
    struct rmq_msg_host store_host;
    const char *properties; /* name \x01 value \x02 ... */
    size_t properties_len;
    const uint8_t *body;
    size_t body_len;
};

/* Appends a message (and its keys) to the batch. RMQ_EINVAL for a row
 * rmq_msg_record_encode would refuse (empty topic, hosts that disagree
 * with sys_flag, a length out of range), a negative queue id or offset;
 * RMQ_EEXIST when its (topic, queue, offset) or physical id is taken. */
int store_put_message(struct store *s, const struct store_message *m);

/* Per stored queue: its lowest and highest offset, message count and the
 * sum of its sizes (kept per queue by the schema's triggers: one row and
 * two index probes per queue, not a scan of the messages). */
typedef int (*store_queue_range_cb)(void *ctx, const char *topic, int queue_id, int64_t min_offset,
                                    int64_t max_offset, int64_t count, int64_t bytes);
/* Calls cb per queue (by topic, queue id); *max_physical_id (may be NULL)
 * gets the highest physical id ever stored (0 for none), also when the
 * row holding it is gone: the next one to hand out is one more. A
 * non-zero cb return stops and is returned. */
int store_load_queue_ranges(struct store *s, store_queue_range_cb cb, void *ctx, int64_t *max_physical_id);

/* Called per message read; m is borrowed for the call, and cb must not
 * write to the store (the scan is still running). A non-zero return stops
 * the scan and is returned. */
typedef int (*store_message_cb)(void *ctx, const struct store_message *m);

/* The messages of (topic, queue_id) from from_offset on, in offset order:
 * at most max_n, and no more than max_bytes of sizes in all, except that
 * the first is always given. *n_out (may be NULL) gets how many cb saw. */
int store_read_messages(struct store *s, const char *topic, int queue_id, int64_t from_offset, int max_n,
                        int64_t max_bytes, store_message_cb cb, void *ctx, int *n_out);
/* The message with this physical id: cb once, or RMQ_ENOTFOUND. */
int store_message_by_physical_id(struct store *s, int64_t physical_id, store_message_cb cb, void *ctx);
/* Messages whose UNIQ_KEY is uniq_key / whose KEYS hold key, oldest first,
 * at most max_n. *n_out (may be NULL) gets how many. */
int store_messages_by_unique_key(struct store *s, const char *uniq_key, int max_n, store_message_cb cb,
                                 void *ctx, int *n_out);
int store_messages_by_key(struct store *s, const char *key, int max_n, store_message_cb cb, void *ctx,
                          int *n_out);

/* Deletes the messages of (topic, queue_id) below offset, but never the
 * queue's newest (it holds the queue's next offset across restarts). In
 * the batch; *deleted (may be NULL) gets how many. */
int store_delete_messages_below(struct store *s, const char *topic, int queue_id, int64_t offset,
                                int *deleted);

/* How many messages the store holds and their bytes in all (the per-queue
 * summary the triggers keep: a few rows, not a scan). 0 or an error. */
int store_message_totals(struct store *s, int64_t *messages, int64_t *bytes);

/* Called per message retention removed, oldest first: a queue's min offset
 * is then queue_offset + 1. */
typedef void (*store_message_gone_cb)(void *ctx, const char *topic, int queue_id, int64_t queue_offset,
                                      int64_t size);

/* Retention of one queue holding count messages of bytes in all (the
 * caller's running figures): removes its oldest messages, at most chunk
 * of them and never the newest, until count <= max_count and bytes <=
 * max_bytes (0: no bound). In the batch, one statement; cb (may be NULL)
 * hears of each. *deleted (may be NULL) gets how many; fewer than needed
 * means call again. */
int store_retain_queue(struct store *s, const char *topic, int queue_id, int64_t count, int64_t bytes,
                       int64_t max_count, int64_t max_bytes, int chunk, store_message_gone_cb cb, void *ctx,
                       int *deleted);
/* Retention of the whole store holding total_bytes: removes the oldest
 * messages of any queue (by physical id, never a queue's newest), at most
 * chunk, until total_bytes <= max_total_bytes. In the batch (a savepoint:
 * all or none); cb and *deleted as above. */
int store_retain_total(struct store *s, int64_t total_bytes, int64_t max_total_bytes, int chunk,
                       store_message_gone_cb cb, void *ctx, int *deleted);

#endif
