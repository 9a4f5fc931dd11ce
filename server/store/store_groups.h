/* store_groups.h — subscription-group configs and offset deletions
 * (store_groups.c), for the admin codes. Included by store.h; strings are
 * borrowed; 0 or a negative RMQ_E* code (store.h).
 */
#ifndef RMQ_STORE_GROUPS_H
#define RMQ_STORE_GROUPS_H

#include <stdint.h>

struct store;

/* Replaces group's config (a JSON object's text, kept as given). In the batch. */
int store_put_group_config(struct store *s, const char *group, const char *config_json, int64_t now_ms);
/* Deletes group's config (no row is not an error). In the batch. */
int store_delete_group_config(struct store *s, const char *group);
/* Deletes the committed offsets of group and/or topic (NULL = any). In the batch. */
int store_delete_offsets(struct store *s, const char *group, const char *topic);
typedef int (*store_group_config_cb)(void *ctx, const char *group, const char *config_json);
/* Calls cb per stored config, by group name; a non-zero cb return stops and is returned. */
int store_load_group_configs(struct store *s, store_group_config_cb cb, void *ctx);
typedef int (*store_offset_time_cb)(void *ctx, const char *group, const char *topic, int queue_id,
                                    int64_t updated_ms);
/* Calls cb with each stored offset's last commit time. */
int store_load_offset_times(struct store *s, store_offset_time_cb cb, void *ctx);

#endif
