/* allocate_json.c — vectors-format cases in, allocations out (see
 * allocate_json.h). Validation is strict about types because the input comes
 * from files and HTTP callers: a wrong type yields an error naming the field
 * rather than a silently different allocation. Any thread.
 */
#include "allocate_json.h"

#include "err.h"
#include "mem.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Borrowed string of a JSON string value without embedded NULs, or NULL. */
static const char *plain_string(const json_t *v)
{
    if (!json_is_string(v))
        return NULL;
    const char *s = json_string_value(v);
    return strlen(s) == json_string_length(v) ? s : NULL;
}

/* New array of n elements of size sz (at least one, so never NULL on
 * success). */
static void *array_new(size_t n, size_t sz)
{
    return n > SIZE_MAX / sz ? NULL : rmq_malloc((n ? n : 1) * sz);
}

int allocate_json_queue_parse(const json_t *v, struct allocate_queue *q, const char *what, char *err,
                              size_t err_len)
{
    if (!json_is_object(v))
        return rmq_fail(err, err_len, RMQ_EINVAL, "%s: expected a queue object", what);
    q->topic = plain_string(json_object_get(v, "topic"));
    q->broker_name = plain_string(json_object_get(v, "brokerName"));
    const json_t *id = json_object_get(v, "queueId");
    if (!q->topic)
        return rmq_fail(err, err_len, RMQ_EINVAL, "%s.topic: missing or not a string", what);
    if (!q->broker_name)
        return rmq_fail(err, err_len, RMQ_EINVAL, "%s.brokerName: missing or not a string", what);
    if (!json_is_integer(id) || json_integer_value(id) < INT32_MIN || json_integer_value(id) > INT32_MAX)
        return rmq_fail(err, err_len, RMQ_EINVAL, "%s.queueId: missing or not a 32-bit integer", what);
    q->queue_id = (int32_t)json_integer_value(id);
    return 0;
}

/* Parses a JSON array of queues into a new array (*out). */
static int queues_parse(const json_t *arr, const char *what, struct allocate_queue **out, size_t *n,
                        char *err, size_t err_len)
{
    if (!json_is_array(arr))
        return rmq_fail(err, err_len, RMQ_EINVAL, "%s: missing or not an array", what);
    *n = json_array_size(arr);
    *out = array_new(*n, sizeof **out);
    if (!*out)
        return rmq_fail(err, err_len, RMQ_ENOMEM, "out of memory");
    for (size_t i = 0; i < *n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s[%zu]", what, i);
        int rc = allocate_json_queue_parse(json_array_get(arr, i), &(*out)[i], name, err, err_len);
        if (rc)
            return rc;
    }
    return 0;
}

/* Parses a JSON array of strings into a new array of borrowed strings. */
static int strings_parse(const json_t *arr, const char *what, const char ***out, size_t *n, char *err,
                         size_t err_len)
{
    if (!json_is_array(arr))
        return rmq_fail(err, err_len, RMQ_EINVAL, "%s: missing or not an array", what);
    *n = json_array_size(arr);
    *out = array_new(*n, sizeof **out);
    if (!*out)
        return rmq_fail(err, err_len, RMQ_ENOMEM, "out of memory");
    for (size_t i = 0; i < *n; i++) {
        (*out)[i] = plain_string(json_array_get(arr, i));
        if (!(*out)[i])
            return rmq_fail(err, err_len, RMQ_EINVAL, "%s[%zu]: not a string", what, i);
    }
    return 0;
}

/* Parses {name: room} into a new array of borrowed pairs. */
static int rooms_parse(const json_t *obj, const char *what, struct allocate_room **out, size_t *n, char *err,
                       size_t err_len)
{
    if (!json_is_object(obj))
        return rmq_fail(err, err_len, RMQ_EINVAL, "options.%s: not an object", what);
    *n = 0;
    *out = array_new(json_object_size(obj), sizeof **out);
    if (!*out)
        return rmq_fail(err, err_len, RMQ_ENOMEM, "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        const char *room = plain_string(val);
        if (!room)
            return rmq_fail(err, err_len, RMQ_EINVAL, "options.%s[\"%.80s\"]: not a string", what, key);
        (*out)[(*n)++] = (struct allocate_room){key, room};
    }
    return 0;
}

/* Reads "options" into c->options for the chosen strategy. */
static int options_parse(struct allocate_json_case *c, const json_t *opts, char *err, size_t err_len)
{
    struct allocate_options *o = &c->options;
    const json_t *v;
    switch (o->strategy) {
    case ALLOCATE_CONFIG:
        return queues_parse(json_object_get(opts, "config"), "options.config", &c->config, &o->n_config, err,
                            err_len);
    case ALLOCATE_MACHINE_ROOM:
        return strings_parse(json_object_get(opts, "consumerIdcs"), "options.consumerIdcs", &c->idcs,
                             &o->n_idcs, err, err_len);
    case ALLOCATE_MACHINE_ROOM_NEARBY: {
        v = json_object_get(opts, "inner");
        if (v && (!json_is_string(v) || allocate_strategy_parse(json_string_value(v), &o->inner) ||
                  (o->inner != ALLOCATE_AVG && o->inner != ALLOCATE_AVG_BY_CIRCLE)))
            return rmq_fail(err, err_len, RMQ_EINVAL, "options.inner: must be \"AVG\" or \"AVG_BY_CIRCLE\"");
        const json_t *b = json_object_get(opts, "brokerRooms"), *cr = json_object_get(opts, "consumerRooms");
        if (!b && !cr) {
            o->rooms_by_rule = 1;
            return 0;
        }
        if (!b || !cr)
            return rmq_fail(err, err_len, RMQ_EINVAL, "options: brokerRooms and consumerRooms go together");
        int rc = rooms_parse(b, "brokerRooms", &c->broker_rooms, &o->n_broker_rooms, err, err_len);
        if (!rc)
            rc = rooms_parse(cr, "consumerRooms", &c->consumer_rooms, &o->n_consumer_rooms, err, err_len);
        return rc;
    }
    case ALLOCATE_CONSISTENT_HASH:
        v = json_object_get(opts, "virtualNodes");
        if (!v)
            return 0;
        if (!json_is_integer(v) || json_integer_value(v) > INT32_MAX || json_integer_value(v) < INT32_MIN)
            return rmq_fail(err, err_len, RMQ_EINVAL, "options.virtualNodes: not a 32-bit integer");
        if (json_integer_value(v) < 0)
            return rmq_fail(err, err_len, RMQ_EINVAL, "options.virtualNodes: must not be negative (got %lld)",
                            (long long)json_integer_value(v));
        o->virtual_nodes = (long)json_integer_value(v);
        return 0;
    default: return 0;
    }
}

void allocate_json_case_clear(struct allocate_json_case *c)
{
    rmq_free(c->queues);
    rmq_free((void *)c->consumers);
    rmq_free(c->config);
    rmq_free((void *)c->idcs);
    rmq_free(c->broker_rooms);
    rmq_free(c->consumer_rooms);
    memset(c, 0, sizeof *c);
}

int allocate_json_case_parse(struct allocate_json_case *c, const json_t *obj, char *err, size_t err_len)
{
    memset(c, 0, sizeof *c);
    if (!json_is_object(obj))
        return rmq_fail(err, err_len, RMQ_EINVAL, "case: not a JSON object");
    const json_t *s = json_object_get(obj, "strategy");
    if (!json_is_string(s))
        return rmq_fail(err, err_len, RMQ_EINVAL, "strategy: missing or not a string");
    enum allocate_strategy st;
    if (allocate_strategy_parse(json_string_value(s), &st))
        return rmq_fail(err, err_len, RMQ_EINVAL, "strategy: unknown strategy \"%.64s\"",
                        json_string_value(s));
    allocate_options_init(&c->options, st);
    const json_t *opts = json_object_get(obj, "options");
    if (opts && !json_is_object(opts) && !json_is_null(opts))
        return rmq_fail(err, err_len, RMQ_EINVAL, "options: not an object");
    int rc =
        queues_parse(json_object_get(obj, "queues"), "queues", &c->queues, &c->input.n_queues, err, err_len);
    if (!rc)
        rc = strings_parse(json_object_get(obj, "consumers"), "consumers", &c->consumers,
                           &c->input.n_consumers, err, err_len);
    if (!rc)
        rc = options_parse(c, opts, err, err_len);
    if (rc) {
        allocate_json_case_clear(c);
        return rc;
    }
    c->input.queues = c->queues;
    c->input.consumers = c->consumers;
    c->options.config = c->config;
    c->options.idcs = c->idcs;
    c->options.broker_rooms = c->broker_rooms;
    c->options.consumer_rooms = c->consumer_rooms;
    return 0;
}

json_t *allocate_json_queue_new(const struct allocate_queue *q)
{
    return json_pack("{s:s, s:s, s:i}", "topic", q->topic, "brokerName", q->broker_name, "queueId",
                     (int)q->queue_id);
}

json_t *allocate_json_allocation_new(const struct allocate_result *r)
{
    json_t *top = json_object(), *alloc = json_object();
    if (json_object_set_new(top, "allocation", alloc)) { /* steals alloc even on error */
        json_decref(top);
        return NULL;
    }
    for (size_t i = 0; i < r->n_consumers; i++) {
        if (r->consumer_first[i] != i)
            continue; /* a duplicated id is one key */
        json_t *list = json_array();
        if (json_object_set_new(alloc, r->consumers[i], list))
            goto fail;
        const struct allocate_assignment *a = allocate_result_queues_of(r, i);
        for (size_t k = 0; k < allocate_result_count_of(r, i); k++)
            if (json_array_append_new(list, allocate_json_queue_new(&a[k].queue)))
                goto fail;
    }
    return top;
fail:
    json_decref(top);
    return NULL;
}

/* Cuts a UTF-8 sequence that vsnprintf truncation left incomplete at the
 * end of s, so that the text stays valid for jansson. */
static void utf8_trim_partial(char *s)
{
    size_t n = strlen(s), k = n;
    while (k > 0 && n - k < 4 && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
        k--;
    if (k == 0 || (unsigned char)s[k - 1] < 0xC0)
        return;
    unsigned char lead = (unsigned char)s[k - 1];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (n - (k - 1) < want)
        s[k - 1] = 0;
}

json_t *allocate_json_error_new(const char *msg)
{
    return json_pack("{s:s}", "error", msg);
}

int allocate_json_run(const json_t *case_obj, json_t **reply)
{
    char err[512] = "";
    struct allocate_json_case c;
    struct allocate_result *r = NULL;
    int rc = allocate_json_case_parse(&c, case_obj, err, sizeof err);
    if (!rc) {
        rc = allocate_group(&c.options, &c.input, &r, err, sizeof err);
        if (!rc) {
            *reply = allocate_json_allocation_new(r);
            rc = *reply ? 0 : RMQ_ENOMEM;
            if (rc)
                snprintf(err, sizeof err, "out of memory");
        }
        allocate_result_free(r);
        allocate_json_case_clear(&c);
    }
    if (!rc)
        return 0;
    utf8_trim_partial(err);
    /* jansson rejects invalid UTF-8 in an error text (a consumer id quoted
     * from a C caller may be ill-formed); fall back to a fixed one. */
    *reply = allocate_json_error_new(err[0] ? err : rmq_strerror(rc));
    if (!*reply)
        *reply = allocate_json_error_new(rmq_strerror(rc));
    return *reply ? 0 : RMQ_ENOMEM;
}
