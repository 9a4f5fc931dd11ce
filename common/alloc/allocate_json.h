/* allocate_json.h — JSON glue for the allocation engine (jansson lives here
 * so that allocate.c stays free of it).
 *
 * Input is one case object in the format of tests/data/allocation.jsonl
 * (tests/data/allocation.jsonl, the cases of docs/allocation.md):
 *   {"strategy": "AVG" | "AVG_BY_CIRCLE" | "CONFIG" | "MACHINE_ROOM" |
 *                "MACHINE_ROOM_NEARBY" | "CONSISTENT_HASH",
 *    "queues":    [{"topic": s, "brokerName": s, "queueId": int32}, ...],
 *    "consumers": [clientId, ...],
 *    "options":   {...}}            (optional; other fields are ignored)
 * with options per strategy:
 *   CONFIG               "config": [queue, ...]                 (required)
 *   MACHINE_ROOM         "consumerIdcs": [room, ...]            (required)
 *   MACHINE_ROOM_NEARBY  "inner": "AVG" | "AVG_BY_CIRCLE"       (default AVG)
 *                        "brokerRooms": {brokerName: room},
 *                        "consumerRooms": {clientId: room}      (both or
 *                        neither; neither = allocate_room_by_rule)
 *   CONSISTENT_HASH      "virtualNodes": int >= 0               (default 10)
 *
 * Output is {"allocation": {clientId: [queue, ...], ...}} with consumers in
 * sorted order as keys (a duplicated id once) and each list in the
 * strategy's own order, or {"error": "..."}. Any thread.
 */
#ifndef RMQ_ALLOCATE_JSON_H
#define RMQ_ALLOCATE_JSON_H

#include "allocate.h"

#include <jansson.h>
#include <stddef.h>

/* A parsed case. options and input point into the case's own arrays and,
 * for every string, into the json_t it was parsed from (borrowed: keep that
 * value alive while using the case). */
struct allocate_json_case {
    struct allocate_options options;
    struct allocate_input input;
    /* Arrays owned by the case (allocate_json_case_clear frees them). */
    struct allocate_queue *queues;
    const char **consumers;
    struct allocate_queue *config;
    const char **idcs;
    struct allocate_room *broker_rooms;
    struct allocate_room *consumer_rooms;
};

/* Parses a case object (borrowed) into c. Returns 0, RMQ_EINVAL with a
 * message naming the field (missing, wrong type, out of range, unknown
 * strategy), or RMQ_ENOMEM. On error c needs no clear. */
int allocate_json_case_parse(struct allocate_json_case *c, const json_t *obj, char *err, size_t err_len);

/* Frees the case's arrays; a zeroed case is fine. */
void allocate_json_case_clear(struct allocate_json_case *c);

/* Parses {"topic","brokerName","queueId"} (borrowed) into *q, strings
 * borrowed from v; `what` names the value in the error. Returns 0 or
 * RMQ_EINVAL. */
int allocate_json_queue_parse(const json_t *v, struct allocate_queue *q, const char *what, char *err,
                              size_t err_len);

/* New {"topic","brokerName","queueId"} object; NULL on ENOMEM. */
json_t *allocate_json_queue_new(const struct allocate_queue *q);

/* New {"allocation": {...}} object for a result (borrowed); NULL on ENOMEM. */
json_t *allocate_json_allocation_new(const struct allocate_result *r);

/* New {"error": msg} object; NULL on ENOMEM. */
json_t *allocate_json_error_new(const char *msg);

/* Parses and computes one case (borrowed) with allocate_group(). Returns 0
 * with *reply new: the allocation object, or an error object when the case
 * cannot be computed. Returns RMQ_ENOMEM (*reply NULL) when not even the
 * error object could be built. */
int allocate_json_run(const json_t *case_obj, json_t **reply);

#endif
