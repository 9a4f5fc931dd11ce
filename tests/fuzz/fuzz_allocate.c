/* fuzz_allocate.c — the `allocate` input reader and the allocation engine.
 *
 * The input is one case in the tests/data/allocation.jsonl format. It is
 * parsed with allocate_json_case_parse and, when the case is small enough
 * to compute in well under a millisecond (bounds below: a single input must
 * not take seconds), run through allocate_group. Invariants: a rejected
 * case names its field; a result is internally consistent (sorted lists,
 * slices, owners view, duplicated ids share their first's queues); without
 * duplicated ids the splitting strategies hand every queue to exactly one
 * consumer; allocate_one agrees with allocate_group; allocate_json_run
 * builds the same JSON; with one allocation failed on purpose
 * allocate_group either succeeds identically or returns RMQ_ENOMEM.
 */
#include "allocate_json.h"
#include "err.h"
#include "fuzz_common.h"

#define MAX_QUEUES 512
#define MAX_CONSUMERS 128
#define MAX_LIST 256
#define MAX_VNODES 64
#define MAX_CHECKED_CONSUMERS 4

static bool small_enough(const struct allocate_json_case *c)
{
    const struct allocate_options *o = &c->options;
    return c->input.n_queues <= MAX_QUEUES && c->input.n_consumers <= MAX_CONSUMERS &&
           o->n_config <= MAX_LIST && o->n_idcs <= MAX_LIST && o->n_broker_rooms <= MAX_LIST &&
           o->n_consumer_rooms <= MAX_LIST && o->virtual_nodes <= MAX_VNODES;
}

static bool queue_same(const struct allocate_queue *a, const struct allocate_queue *b)
{
    return !strcmp(a->topic, b->topic) && !strcmp(a->broker_name, b->broker_name) &&
           a->queue_id == b->queue_id;
}

static void check_result(const struct allocate_json_case *c, const struct allocate_result *r)
{
    size_t nq = r->n_queues, nc = r->n_consumers;
    FUZZ_CHECK(nq == c->input.n_queues && nc == c->input.n_consumers);
    FUZZ_CHECK(r->strategy == c->options.strategy);
    for (size_t q = 1; q < nq; q++)
        FUZZ_CHECK(allocate_queue_compare(&r->queues[q - 1], &r->queues[q]) <= 0);
    bool dups = false;
    for (size_t i = 0; i < nc; i++) {
        if (i)
            FUZZ_CHECK(allocate_string_compare(r->consumers[i - 1], r->consumers[i]) <= 0);
        size_t f = r->consumer_first[i];
        FUZZ_CHECK(f <= i && !strcmp(r->consumers[f], r->consumers[i]));
        FUZZ_CHECK(f == i || r->consumer_first[f] == f);
        if (f != i) {
            dups = true;
            FUZZ_CHECK(allocate_result_count_of(r, i) == allocate_result_count_of(r, f));
            for (size_t k = 0; k < allocate_result_count_of(r, i); k++)
                FUZZ_CHECK(queue_same(&allocate_result_queues_of(r, i)[k].queue,
                                      &allocate_result_queues_of(r, f)[k].queue));
        }
        size_t found = SIZE_MAX;
        FUZZ_CHECK(allocate_result_find(r, r->consumers[i], &found) == 0 && found == f);
        FUZZ_CHECK(r->assigned_start[i] <= r->assigned_start[i + 1]);
    }
    FUZZ_CHECK(r->assigned_start[0] == 0 && r->assigned_start[nc] == r->n_assigned);

    /* Owners view against a recount. */
    size_t *count = calloc(nq + 1, sizeof *count);
    FUZZ_CHECK(count != NULL);
    size_t foreign = 0;
    for (size_t a = 0; a < r->n_assigned; a++) {
        size_t q = r->assigned[a].queue_index;
        if (q == ALLOCATE_NO_INDEX) {
            foreign++;
            continue;
        }
        FUZZ_CHECK(q < nq && queue_same(&r->assigned[a].queue, &r->queues[q]));
        count[q]++;
    }
    FUZZ_CHECK(foreign == r->n_foreign);
    FUZZ_CHECK(c->options.strategy == ALLOCATE_CONFIG || foreign == 0);
    size_t unassigned = 0, overlapping = 0;
    for (size_t q = 0; q < nq; q++) {
        FUZZ_CHECK(allocate_result_owner_count(r, q) == count[q]);
        for (size_t o = r->owner_start[q]; o + 1 < r->owner_start[q + 1]; o++)
            FUZZ_CHECK(r->owners[o] < r->owners[o + 1]);
        if (count[q] == 0)
            FUZZ_CHECK(unassigned < r->n_unassigned && r->unassigned[unassigned++] == q);
        if (count[q] > 1)
            FUZZ_CHECK(overlapping < r->n_overlapping && r->overlapping[overlapping++] == q);
    }
    FUZZ_CHECK(unassigned == r->n_unassigned && overlapping == r->n_overlapping);

    /* Splitting strategies over distinct ids: every queue exactly once. */
    enum allocate_strategy s = c->options.strategy;
    bool partition =
        !dups && (s == ALLOCATE_AVG || s == ALLOCATE_AVG_BY_CIRCLE || s == ALLOCATE_MACHINE_ROOM_NEARBY ||
                  (s == ALLOCATE_CONSISTENT_HASH && c->options.virtual_nodes > 0));
    if (s != ALLOCATE_CONFIG && !dups)
        FUZZ_CHECK(r->n_overlapping == 0);
    if (partition)
        FUZZ_CHECK(r->n_unassigned == 0 && r->n_assigned == nq);
    if (s == ALLOCATE_CONFIG)
        FUZZ_CHECK(r->n_assigned == nc * c->options.n_config);
    free(count);
}

/* allocate_one on the sorted lists gives each consumer its group slice. */
static void check_one(const struct allocate_json_case *c, const struct allocate_result *r)
{
    struct allocate_input sorted = {r->queues, r->n_queues, r->consumers, r->n_consumers};
    size_t nc = r->n_consumers;
    size_t picks[MAX_CHECKED_CONSUMERS] = {0, nc / 3, (2 * nc) / 3, nc ? nc - 1 : 0};
    for (size_t p = 0; p < MAX_CHECKED_CONSUMERS && nc; p++) {
        size_t i = picks[p];
        struct allocate_queue *out = NULL;
        size_t n = 0;
        char err[256];
        int rc = allocate_one(&c->options, &sorted, r->consumers[i], &out, &n, err, sizeof err);
        if (rc)
            fprintf(stderr, "allocate_one failed where allocate_group did not: %d %s\n", rc, err);
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(n == allocate_result_count_of(r, i));
        for (size_t k = 0; k < n; k++)
            FUZZ_CHECK(queue_same(&out[k], &allocate_result_queues_of(r, i)[k].queue));
        rmq_free(out);
    }
}

static void check_json(const json_t *case_obj, const struct allocate_result *r)
{
    json_t *mine = allocate_json_allocation_new(r);
    FUZZ_CHECK(mine != NULL);
    size_t distinct = 0;
    for (size_t i = 0; i < r->n_consumers; i++)
        distinct += r->consumer_first[i] == i;
    FUZZ_CHECK(json_object_size(json_object_get(mine, "allocation")) == distinct);
    json_t *reply = NULL;
    FUZZ_CHECK(allocate_json_run(case_obj, &reply) == 0 && reply);
    FUZZ_CHECK(json_equal(mine, reply));
    json_decref(reply);
    json_decref(mine);
}

static void check_oom(const struct allocate_json_case *c, const struct allocate_result *clean, int clean_rc,
                      long fail)
{
    struct allocate_result *r = NULL;
    char err[256];
    rmq_mem_fail_after(fail);
    int rc = allocate_group(&c->options, &c->input, &r, err, sizeof err);
    rmq_mem_fail_after(-1);
    FUZZ_CHECK(rc == clean_rc || rc == RMQ_ENOMEM);
    FUZZ_CHECK((rc == 0) == (r != NULL));
    if (rc == 0) {
        FUZZ_CHECK(r->n_assigned == clean->n_assigned);
        for (size_t a = 0; a < r->n_assigned; a++)
            FUZZ_CHECK(queue_same(&r->assigned[a].queue, &clean->assigned[a].queue));
    }
    allocate_result_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    json_t *obj = json_loadb((const char *)data, size, 0, NULL);
    if (!obj)
        return 0;
    struct allocate_json_case c;
    char err[256] = "";
    int rc = allocate_json_case_parse(&c, obj, err, sizeof err);
    if (rc) {
        FUZZ_CHECK(rc == RMQ_EINVAL && err[0]);
        json_t *reply = NULL;
        FUZZ_CHECK(allocate_json_run(obj, &reply) == 0 && json_is_string(json_object_get(reply, "error")));
        json_decref(reply);
        json_decref(obj);
        return 0;
    }
    if (small_enough(&c)) {
        struct allocate_result *r = NULL;
        rc = allocate_group(&c.options, &c.input, &r, err, sizeof err);
        FUZZ_CHECK((rc == 0) == (r != NULL));
        if (rc) {
            FUZZ_CHECK((rc == RMQ_EINVAL || rc == RMQ_E2BIG) && err[0]);
        } else {
            check_result(&c, r);
            check_one(&c, r);
            check_json(obj, r);
        }
        check_oom(&c, r, rc, fuzz_fail_point(data, size));
        allocate_result_free(r);
    }
    allocate_json_case_clear(&c);
    json_decref(obj);
    return 0;
}
