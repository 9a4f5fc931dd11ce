/* admin_allocation.h — the expected allocation of a group for an admin query
 * (GET /api/groups/{group}/allocation and the holdings checks). Loop thread. */
#ifndef RMQ_ADMIN_ALLOC_H
#define RMQ_ADMIN_ALLOC_H

#include "allocate.h"

#include <jansson.h>
#include <stdbool.h>

struct broker;
struct alloc_args;

struct alloc_view {
    struct alloc_args *args; /* owned: the inputs result borrows from */
    struct allocate_options opt;
    enum allocate_strategy strategy; /* the strategy asked for (opt.strategy is CONFIG for broadcast) */
    bool broadcast;                  /* BROADCASTING group: every member takes every queue */
    struct allocate_result *result;  /* owned; NULL when the group has no member or the topic no queue */
    const char *topic;               /* borrowed from the topic table: use before the loop runs again */
};

/* Computes the view for query (topic, strategy and its options) over the
 * group's live members. 0 with *out new (admin_alloc_view_free); otherwise
 * *error is a new JSON error with *status, or NULL for out of memory. */
int admin_alloc_view_new(struct broker *s, const char *group, const json_t *query, struct alloc_view **out,
                         int *status, json_t **error);
/* The same, with the queue set widened by extra (borrowed until the view is
 * freed; queues of another broker the clients reported, see
 * admin_holdings.c; without duplicates, the caller's promise): a queue
 * already in the route is not added twice. */
int admin_alloc_view_new_ex(struct broker *s, const char *group, const json_t *query,
                            const struct allocate_queue *extra, size_t n_extra, struct alloc_view **out,
                            int *status, json_t **error);
void admin_alloc_view_free(struct alloc_view *v);
/* New JSON of the view ({"allocation","owners","unassigned","overlaps",...}). */
json_t *admin_alloc_view_json(const struct alloc_view *v, const char *group);
/* New {"topic","brokerName","queueId"} of q. */
json_t *admin_alloc_queue_json(const struct allocate_queue *q);
/* New {"allocation","owners","unassigned","overlaps"} of r (borrowed). */
json_t *admin_alloc_result_json(const struct allocate_result *r);
/* GET /api/groups/{group}/allocation: new reply, *status set. */
json_t *admin_allocation(struct broker *s, const char *group, const json_t *query, int *status);

#endif
