/* route_body.c — see route_body.h. Pure; any thread. */
#include "route_body.h"

#include "body_json.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- encode ------------------------------------------------------------- */

/* PROTOCOL: docs/protocol.md §3.4 brokerAddrs has Long keys; fastjson writes them bare
 * unless the peer asked for standard JSON. */
static int append_broker(struct buf *out, const struct rmq_route_broker *b, bool quoted_ids)
{
    int rc = buf_append_str(out, "{\"brokerAddrs\":{");
    if (!rc && b->master_addr) {
        rc = buf_append_str(out, quoted_ids ? "\"0\":" : "0:");
        if (!rc)
            rc = rmq_json_append_string(out, b->master_addr);
    }
    if (!rc)
        rc = buf_append_str(out, "},");
    if (!rc)
        rc = rmq_json_append_kv_str(out, "brokerName", b->broker_name, ',');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "cluster", b->cluster, '}');
    return rc;
}

static int append_queue(struct buf *out, const struct rmq_route_queue *q)
{
    int rc = buf_append_u8(out, '{');
    if (!rc)
        rc = rmq_json_append_kv_str(out, "brokerName", q->broker_name, ',');
    if (!rc)
        rc = buf_appendf(out, "\"perm\":%d,\"readQueueNums\":%d,\"topicSysFlag\":%d,\"writeQueueNums\":%d}",
                         q->perm, q->read_queue_nums, q->topic_sys_flag, q->write_queue_nums);
    return rc;
}

int rmq_route_encode(const struct rmq_route_broker *brokers, size_t nbrokers,
                     const struct rmq_route_queue *queues, size_t nqueues, bool quoted_ids, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"brokerDatas\":[");
    for (size_t i = 0; !rc && i < nbrokers; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = append_broker(out, &brokers[i], quoted_ids);
    }
    if (!rc)
        rc = buf_append_str(out, "],\"filterServerTable\":{},\"queueDatas\":[");
    for (size_t i = 0; !rc && i < nqueues; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = append_queue(out, &queues[i]);
    }
    if (!rc)
        rc = buf_append_str(out, "]}");
    return buf_undo_on_error(out, mark, rc);
}

/* ---- parse -------------------------------------------------------------- */

/* Copies src to out, quoting bare numeric object keys ({0:"a"} -> {"0":"a"})
 * so jansson can read what fastjson writes for old clients. Keys are told
 * from array elements by a container stack. 0, RMQ_EPROTO or a buf error. */
static int quote_bare_keys(const uint8_t *p, size_t len, struct buf *out)
{
    char stack[RMQ_ROUTE_MAX_DEPTH];
    size_t depth = 0;
    bool in_str = false, esc = false, want_key = false;
    for (size_t i = 0; i < len; i++) {
        uint8_t ch = p[i];
        int rc = 0;
        if (in_str) {
            if (esc)
                esc = false;
            else if (ch == '\\')
                esc = true;
            else if (ch == '"')
                in_str = false;
        } else if (ch == '"') {
            in_str = true;
            want_key = false;
        } else if (ch == '{' || ch == '[') {
            if (depth == RMQ_ROUTE_MAX_DEPTH)
                return RMQ_EPROTO;
            assert(depth < sizeof stack);
            stack[depth++] = (char)ch;
            want_key = ch == '{';
        } else if (ch == '}' || ch == ']') {
            depth -= depth > 0;
            want_key = false;
        } else if (ch == ',') {
            want_key = depth > 0 && stack[depth - 1] == '{';
        } else if (want_key && (ch == '-' || (ch >= '0' && ch <= '9'))) {
            size_t j = i + 1;
            while (j < len && p[j] >= '0' && p[j] <= '9')
                j++;
            rc = buf_append_u8(out, '"');
            if (!rc)
                rc = buf_append(out, p + i, j - i);
            if (!rc)
                rc = buf_append_u8(out, '"');
            if (rc)
                return rc;
            i = j - 1;
            want_key = false;
            continue;
        }
        if (!(ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') && ch != '{' && ch != ',')
            want_key = false;
        rc = buf_append_u8(out, ch);
        if (rc)
            return rc;
    }
    return RMQ_OK;
}

#ifndef NDEBUG
/* A parsed route: within the entry limits, every broker and queue named,
 * every address present, queue counts in the range parse_queue allows. */
static int route_sanity(const struct rmq_route_info *r)
{
    assert(r->nbrokers <= RMQ_ROUTE_MAX_ENTRIES && r->nqueues <= RMQ_ROUTE_MAX_ENTRIES);
    for (size_t i = 0; i < r->nbrokers; i++) {
        const struct rmq_route_info_broker *b = &r->brokers[i];
        assert(b->name && b->naddrs <= RMQ_ROUTE_MAX_ENTRIES);
        for (size_t k = 0; k < b->naddrs; k++)
            assert(b->addrs[k]);
    }
    for (size_t i = 0; i < r->nqueues; i++)
        assert(r->queues[i].broker_name && r->queues[i].read_queue_nums >= 0 &&
               r->queues[i].read_queue_nums <= 65535);
    return 1;
}
#endif

static int fail(char *err, size_t errlen, const char *what)
{
    return rmq_fail(err, errlen, RMQ_EPROTO, "route: %s", what);
}

/* brokerAddrs {id: addr}: addresses in ascending id order, master = id 0. */
static int parse_addrs(const json_t *addrs, struct rmq_route_info_broker *b, char *err, size_t errlen)
{
    size_t n = json_object_size(addrs);
    if (n > RMQ_ROUTE_MAX_ENTRIES)
        return fail(err, errlen, "too many brokerAddrs");
    b->addrs = rmq_calloc(n ? n : 1, sizeof *b->addrs);
    long long *ids = rmq_calloc(n ? n : 1, sizeof *ids);
    if (!b->addrs || !ids) {
        rmq_free(ids);
        return RMQ_ENOMEM;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)addrs, key, v)
    {
        long long id;
        char *end;
        if (!json_is_string(v))
            break;
        id = strtoll(key, &end, 10);
        size_t at = b->naddrs;
        assert(at < n);                      /* the object has n members: ids and addrs have room */
        while (at > 0 && ids[at - 1] > id) { /* insertion sort: a handful of ids */
            ids[at] = ids[at - 1];
            b->addrs[at] = b->addrs[at - 1];
            at--;
        }
        ids[at] = id;
        b->addrs[at] = rmq_strdup(json_string_value(v));
        b->naddrs++;
        if (!b->addrs[at]) {
            rmq_free(ids);
            return RMQ_ENOMEM;
        }
        if (id == 0 && *end == '\0' && !(b->master = rmq_strdup(json_string_value(v)))) {
            rmq_free(ids);
            return RMQ_ENOMEM;
        }
    }
    rmq_free(ids);
    return b->naddrs == n ? RMQ_OK : fail(err, errlen, "brokerAddrs value is not a string");
}

/* brokerDatas[i] into b. */
static int parse_broker(const json_t *bd, void *elem, char *err, size_t errlen)
{
    struct rmq_route_info_broker *b = elem;
    const json_t *name = json_object_get(bd, "brokerName");
    const json_t *addrs = json_object_get(bd, "brokerAddrs");
    if (!json_is_string(name) || !json_is_object(addrs))
        return fail(err, errlen, "brokerData needs brokerName and brokerAddrs");
    if (!(b->name = rmq_strdup(json_string_value(name))))
        return RMQ_ENOMEM;
    return parse_addrs(addrs, b, err, errlen);
}

/* queueDatas[i] into q. */
static int parse_queue(const json_t *qd, void *elem, char *err, size_t errlen)
{
    struct rmq_route_info_queue *q = elem;
    const json_t *name = json_object_get(qd, "brokerName");
    const json_t *rq = json_object_get(qd, "readQueueNums");
    const json_t *perm = json_object_get(qd, "perm");
    if (!json_is_string(name) || !json_is_integer(rq) || !json_is_integer(perm) ||
        json_integer_value(rq) < 0 || json_integer_value(rq) > 65535)
        return fail(err, errlen, "queueData needs brokerName, readQueueNums 0..65535 and perm");
    q->read_queue_nums = (int)json_integer_value(rq);
    q->perm = (int)json_integer_value(perm);
    return (q->broker_name = rmq_strdup(json_string_value(name))) ? RMQ_OK : RMQ_ENOMEM;
}

/* The route's array field key of root (at most RMQ_ROUTE_MAX_ENTRIES):
 * *elems gets as many zeroed elements of size bytes, each filled by one;
 * *count says how many were begun, so the route can be cleared part way. */
static int parse_array(const json_t *root, const char *key, size_t size, void **elems, size_t *count,
                       int (*one)(const json_t *, void *, char *, size_t), char *err, size_t errlen)
{
    const json_t *arr = json_object_get(root, key);
    *elems = NULL;
    if (!json_is_array(arr))
        return rmq_fail(err, errlen, RMQ_EPROTO, "route: %s is not an array", key);
    size_t n = json_array_size(arr);
    if (n > RMQ_ROUTE_MAX_ENTRIES)
        return rmq_fail(err, errlen, RMQ_EPROTO, "route: too many %s", key);
    char *base = rmq_calloc(n ? n : 1, size);
    *elems = base;
    if (!base)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        ++*count;
        assert(*count <= n);
        int rc = one(json_array_get(arr, i), base + i * size, err, errlen);
        if (rc)
            return rc;
    }
    return RMQ_OK;
}

int rmq_route_parse(const uint8_t *body, size_t len, struct rmq_route_info *out, char *err, size_t errlen)
{
    struct buf fixed;
    buf_init(&fixed, 0);
    json_t *root = NULL;
    int rc = quote_bare_keys(body, len, &fixed);
    if (rc == RMQ_EPROTO)
        rc = fail(err, errlen, "nested too deeply");
    if (!rc)
        rc = rmq_json_load_object(buf_head(&fixed), buf_live(&fixed), "route", &root, err, errlen);
    void *elems = NULL;
    if (!rc) {
        rc = parse_array(root, "brokerDatas", sizeof *out->brokers, &elems, &out->nbrokers, parse_broker, err,
                         errlen);
        out->brokers = elems;
    }
    if (!rc) {
        rc = parse_array(root, "queueDatas", sizeof *out->queues, &elems, &out->nqueues, parse_queue, err,
                         errlen);
        out->queues = elems;
    }
    json_decref(root);
    buf_free(&fixed);
    if (rc)
        rmq_route_info_clear(out);
    assert(rc || route_sanity(out));
    return rc;
}

void rmq_route_info_clear(struct rmq_route_info *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nbrokers; i++) {
        struct rmq_route_info_broker *b = &r->brokers[i];
        rmq_free(b->name);
        rmq_free(b->master);
        rmq_json_strings_free(b->addrs, b->naddrs);
    }
    rmq_free(r->brokers);
    for (size_t i = 0; i < r->nqueues; i++)
        rmq_free(r->queues[i].broker_name);
    rmq_free(r->queues);
    memset(r, 0, sizeof *r);
}

static bool str_eq(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

bool rmq_route_info_equal(const struct rmq_route_info *a, const struct rmq_route_info *b)
{
    if (a->nbrokers != b->nbrokers || a->nqueues != b->nqueues)
        return false;
    for (size_t i = 0; i < a->nbrokers; i++) {
        const struct rmq_route_info_broker *x = &a->brokers[i], *y = &b->brokers[i];
        if (!str_eq(x->name, y->name) || !str_eq(x->master, y->master) || x->naddrs != y->naddrs)
            return false;
        for (size_t j = 0; j < x->naddrs; j++)
            if (!str_eq(x->addrs[j], y->addrs[j]))
                return false;
    }
    for (size_t i = 0; i < a->nqueues; i++) {
        const struct rmq_route_info_queue *x = &a->queues[i], *y = &b->queues[i];
        if (!str_eq(x->broker_name, y->broker_name) || x->read_queue_nums != y->read_queue_nums ||
            x->perm != y->perm)
            return false;
    }
    return true;
}

const char *rmq_route_info_addr_of(const struct rmq_route_info *r, const char *broker_name)
{
    for (size_t i = 0; i < r->nbrokers; i++) {
        const struct rmq_route_info_broker *b = &r->brokers[i];
        if (strcmp(b->name, broker_name) != 0)
            continue;
        if (b->master)
            return b->master;
        return b->naddrs ? b->addrs[0] : NULL;
    }
    return NULL;
}
