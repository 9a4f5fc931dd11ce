/* allocate.h — the six client-side queue-allocation strategies, exact to the
 * Java client (RocketMQ 4.9.x/5.x), for reproducing a group's view on the
 * server (docs/protocol.md §11).
 *
 * Two entry points:
 *   allocate_one()   — one consumer's queues, exactly as the client's
 *                      strategy computes them from the lists it is given
 *                      (the client sorts both lists first: use
 *                      allocate_sort_queues / allocate_sort_consumers);
 *   allocate_group() — every consumer of a group in one pass from unsorted
 *                      lists (sorts once, builds the hash ring once), plus a
 *                      check: queue -> owners, unassigned and overlapping
 *                      queues.
 *
 * Ownership: every string is borrowed. Inputs are plain C arrays the caller
 * keeps alive for as long as it uses the results, because results point at
 * the caller's strings instead of copying them. Returned arrays and results
 * are new and owned by the caller.
 *
 * Strings are NUL-terminated UTF-8. They are ordered as Java's
 * String.compareTo orders them (UTF-16 code units), so names with characters
 * outside the BMP sort as the Java client sorts them.
 *
 * Pure C11: no I/O, no globals, no jansson; any thread.
 */
#ifndef RMQ_ALLOCATE_H
#define RMQ_ALLOCATE_H

#include <stddef.h>
#include <stdint.h>

/* A message queue (Java MessageQueue). Strings borrowed. */
struct allocate_queue {
    const char *topic;
    const char *broker_name;
    int32_t queue_id;
};

enum allocate_strategy {
    ALLOCATE_AVG = 0,             /* AllocateMessageQueueAveragely */
    ALLOCATE_AVG_BY_CIRCLE,       /* ...AveragelyByCircle */
    ALLOCATE_CONFIG,              /* ...ByConfig: the configured list, no checks */
    ALLOCATE_MACHINE_ROOM,        /* ...ByMachineRoom: broker names "room@name" */
    ALLOCATE_MACHINE_ROOM_NEARBY, /* AllocateMachineRoomNearby over AVG or AVG_BY_CIRCLE */
    ALLOCATE_CONSISTENT_HASH,     /* ...ConsistentHash (MD5 ring) */
};
#define ALLOCATE_STRATEGY_COUNT 6

#define ALLOCATE_DEFAULT_VIRTUAL_NODES 10
/* Upper bound on the entries of one allocate_group result (CONFIG hands the
 * whole list to every consumer, so its size is n_config * n_consumers). */
#define ALLOCATE_MAX_ASSIGNED ((size_t)1 << 25)
/* allocate_assignment.queue_index of a queue that is not in the queue list. */
#define ALLOCATE_NO_INDEX SIZE_MAX

/* One entry of a name -> machine room map. Strings borrowed. */
struct allocate_room {
    const char *name; /* broker name, or client id */
    const char *room;
};

/* What a strategy is configured with. Start from allocate_options_init(),
 * then set the fields of the chosen strategy; the others are ignored. All
 * pointers are borrowed. */
struct allocate_options {
    enum allocate_strategy strategy;

    /* CONSISTENT_HASH: virtual nodes per consumer (default 10). Negative is an
     * error (Java throws); 0 gives an empty ring, so nobody gets anything. */
    long virtual_nodes;

    /* CONFIG: the list every consumer returns as-is. */
    const struct allocate_queue *config;
    size_t n_config;

    /* MACHINE_ROOM: the consumer's room set ("consumeridcs"). */
    const char *const *idcs;
    size_t n_idcs;

    /* MACHINE_ROOM_NEARBY: inner strategy, ALLOCATE_AVG or
     * ALLOCATE_AVG_BY_CIRCLE (default AVG). */
    enum allocate_strategy inner;
    /* MACHINE_ROOM_NEARBY rooms. With rooms_by_rule set, every room comes from
     * allocate_room_by_rule() and the maps are ignored. Otherwise a queue's
     * room is broker_rooms[brokerName] and a consumer's is
     * consumer_rooms[clientId] (the last entry wins for a repeated name).
     * A missing or empty room is an error, like the Java resolver's
     * IllegalArgumentException. */
    int rooms_by_rule;
    const struct allocate_room *broker_rooms;
    size_t n_broker_rooms;
    const struct allocate_room *consumer_rooms;
    size_t n_consumer_rooms;
};

/* The group's lists (mqAll, cidAll). Borrowed. Duplicated consumer ids are
 * kept, as the client keeps them: each copy's index is the first
 * occurrence's. */
struct allocate_input {
    const struct allocate_queue *queues;
    size_t n_queues;
    const char *const *consumers;
    size_t n_consumers;
};

/* Sets defaults: the given strategy, 10 virtual nodes, inner AVG, no config,
 * no rooms. */
void allocate_options_init(struct allocate_options *opt, enum allocate_strategy strategy);

/* The strategy's short name ("AVG", "AVG_BY_CIRCLE", "CONFIG",
 * "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH"); static string,
 * "?" for an invalid value. */
const char *allocate_strategy_name(enum allocate_strategy s);
/* Parses a short name (exact, case-sensitive). Returns 0 or RMQ_EINVAL. */
int allocate_strategy_parse(const char *name, enum allocate_strategy *out);

/* Java String.compareTo order of two UTF-8 strings: <0, 0, >0. Compares UTF-16
 * code units; invalid UTF-8 decodes to U+FFFD per maximal subpart, with a
 * final byte comparison so that the order stays total. */
int allocate_string_compare(const char *a, const char *b);
/* MessageQueue.compareTo: topic, brokerName, then queueId. (Java subtracts the
 * queueIds, which overflows only for ids 2^31 apart; this compares them.) */
int allocate_queue_compare(const struct allocate_queue *a, const struct allocate_queue *b);
/* Sorts in place into the client's order (no allocation). */
void allocate_sort_queues(struct allocate_queue *queues, size_t n);
void allocate_sort_consumers(const char **consumers, size_t n);

/* The room rule used when no room maps are given: the text after the last
 * '-' of a broker name or client id ("broker-a-hz" -> "hz",
 * "10.0.0.1@123-hz" -> "hz"). Returns a pointer into name (borrowed), or NULL
 * when name has no '-' or ends with one (no room: an error for NEARBY). */
const char *allocate_room_by_rule(const char *name);

/* Computes the queues consumer current_cid gets, as the Java strategy's
 * allocate(group, currentCID, mqAll, cidAll) returns them: in->queues and
 * in->consumers are used in the order given (the client passes them sorted).
 *
 * Returns 0 with *out a new array (free with rmq_free; non-NULL even when
 * *n_out is 0) whose strings are borrowed from in->queues or opt->config.
 * current_cid not in the consumer list gives 0 and an empty array (the Java
 * "[BUG] not in cidAll" path). Errors, with a message in err (err may be NULL;
 * err_len bytes, always NUL-terminated):
 *   RMQ_EINVAL — what Java throws for: empty current_cid, queue or consumer
 *                list empty, negative virtual_nodes, missing machine room;
 *                also a NULL string or a bad option value;
 *   RMQ_E2BIG  — the hash ring would exceed HASH_RING_MAX_VNODES;
 *   RMQ_ENOMEM.
 * CONFIG performs no checks: it returns opt->config whatever the inputs. */
int allocate_one(const struct allocate_options *opt, const struct allocate_input *in, const char *current_cid,
                 struct allocate_queue **out, size_t *n_out, char *err, size_t err_len);

/* One queue handed to a consumer in an allocate_group result. */
struct allocate_assignment {
    struct allocate_queue queue; /* strings borrowed from the input or opt->config */
    size_t queue_index;          /* index into result->queues, or ALLOCATE_NO_INDEX */
};

/* Every consumer's allocation plus the group check. Owned by the caller
 * (allocate_result_free, the only way to free any of its arrays); all arrays
 * belong to the result, all strings are borrowed from the input and options
 * given to allocate_group(). */
struct allocate_result {
    enum allocate_strategy strategy;
    /* The client's sorted mqAll and cidAll. */
    struct allocate_queue *queues;
    size_t n_queues;
    const char **consumers;
    size_t n_consumers;
    /* consumer_first[i]: index of the first occurrence of consumers[i]; a
     * duplicated id computes (and so holds) the same queues as its first. */
    size_t *consumer_first;
    /* Consumer i's queues in the strategy's own order:
     * assigned[assigned_start[i] .. assigned_start[i + 1]). */
    size_t *assigned_start; /* n_consumers + 1 entries */
    struct allocate_assignment *assigned;
    size_t n_assigned;
    /* Owners view: queues[q] is held by consumers
     * owners[owner_start[q] .. owner_start[q + 1]) (consumer indexes,
     * ascending). Each position of a duplicated id counts as an owner, since
     * each of those processes pulls the queue. */
    size_t *owner_start; /* n_queues + 1 entries */
    size_t *owners;
    /* Queue indexes with no owner, and with two or more, ascending. */
    size_t *unassigned;
    size_t n_unassigned;
    size_t *overlapping;
    size_t n_overlapping;
    /* Assignments of queues that are not in the queue list (CONFIG only). */
    size_t n_foreign;
    /* Private to allocate.c: most arrays above share one block, so they are
     * freed only by allocate_result_free(), never one by one. */
    void *mem_;
    size_t mem_len_;
    size_t assigned_cap_;
};

/* Allocates the whole group in one pass: sorts in->queues and in->consumers
 * as the client does, then gives each consumer (in sorted order) exactly what
 * allocate_one() would give it on the sorted lists, and fills the owners
 * view. Returns 0 with *out new (allocate_result_free), or the errors of
 * allocate_one() (no current_cid here: an empty consumer id is RMQ_EINVAL
 * for every strategy but CONFIG), RMQ_E2BIG over ALLOCATE_MAX_ASSIGNED.
 * CONFIG accepts empty lists. */
int allocate_group(const struct allocate_options *opt, const struct allocate_input *in,
                   struct allocate_result **out, char *err, size_t err_len);

/* Frees a result; NULL is fine. */
void allocate_result_free(struct allocate_result *r);

/* Index of the first occurrence of cid in r->consumers. Returns 0 or
 * RMQ_ENOTFOUND. */
int allocate_result_find(const struct allocate_result *r, const char *cid, size_t *index);

/* Consumer i's queues (borrowed from r) and how many. */
static inline const struct allocate_assignment *allocate_result_queues_of(const struct allocate_result *r,
                                                                          size_t i)
{
    return r->assigned + r->assigned_start[i];
}
static inline size_t allocate_result_count_of(const struct allocate_result *r, size_t i)
{
    return r->assigned_start[i + 1] - r->assigned_start[i];
}
/* Number of owners of queue q. */
static inline size_t allocate_result_owner_count(const struct allocate_result *r, size_t q)
{
    return r->owner_start[q + 1] - r->owner_start[q];
}

#endif
