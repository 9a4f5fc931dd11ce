/* store_topics.h — the writer's topic and offset rows (store_topics.c):
 * topics with their per-broker queue counts, committed consumer offsets,
 * and the scans that load both back at start. Included by store.h;
 * strings are borrowed; 0 or a negative RMQ_E* code (store.h).
 */
#ifndef RMQ_STORE_TOPICS_H
#define RMQ_STORE_TOPICS_H

#include <stddef.h>
#include <stdint.h>

struct store;

struct store_topic_broker {
    const char *broker_name;
    int read_queue_nums;
    int write_queue_nums;
    int perm;
};

typedef int (*store_topic_cb)(void *ctx, const char *topic, const struct store_topic_broker *brokers,
                              size_t n);
typedef int (*store_offset_cb)(void *ctx, const char *group, const char *topic, int queue_id, int64_t offset);
/* Calls cb for each stored topic / offset; a non-zero cb return stops and is returned. */
int store_load_topics(struct store *s, store_topic_cb cb, void *ctx);
int store_load_offsets(struct store *s, store_offset_cb cb, void *ctx);

/* Batched writes. */
int store_put_topic(struct store *s, const char *topic, const struct store_topic_broker *brokers, size_t n,
                    int64_t now_ms);
int store_delete_topic(struct store *s, const char *topic);
int store_put_offset(struct store *s, const char *group, const char *topic, int queue_id, int64_t offset,
                     int64_t now_ms);

#endif
