/* sim_body.c — see sim_body.h. Pure; any thread. */
#include "sim_body.h"

#include "err.h"
#include "mem.h"
#include "remoting_cmd.h"
#include "rmq_body.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* ---- HeartbeatData ---- */

int sim_sub_encode(const struct sim_sub *s, struct buf *out)
{
    /* PROTOCOL: docs/protocol.md §3.1 a Java "*" subscription: empty tagsSet and codeSet. */
    struct rmq_subscription sd = {
        .topic = (char *)s->topic,
        .sub_string = (char *)"*",
        .expression_type = (char *)"TAG",
        .sub_version = s->sub_version,
    };
    return rmq_subscription_encode(&sd, out);
}

int sim_heartbeat_encode(const struct sim_heartbeat_spec *hb, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"clientID\":");
    if (!rc)
        rc = rmq_json_append_string(out, hb->client_id);
    if (!rc)
        rc = buf_append_str(out, ",\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\","
                                 "\"consumeType\":\"CONSUME_PASSIVELY\",\"groupName\":");
    if (!rc)
        rc = rmq_json_append_string(out, hb->group);
    if (!rc)
        rc = buf_appendf(out, ",\"messageModel\":\"%s\",\"subscriptionDataSet\":[",
                         hb->broadcast ? "BROADCASTING" : "CLUSTERING");
    for (size_t i = 0; !rc && i < hb->nsubs; i++) {
        if (i)
            rc = buf_append_u8(out, ',');
        if (!rc)
            rc = sim_sub_encode(&hb->subs[i], out);
    }
    if (!rc)
        rc = buf_append_str(out, "],\"unitMode\":false}],");
    if (!rc && hb->v5_fields)
        rc = buf_append_str(out, "\"heartbeatFingerprint\":0,");
    if (!rc)
        rc = buf_append_str(out, "\"producerDataSet\":[{\"groupName\":\"CLIENT_INNER_PRODUCER\"}]");
    if (!rc)
        rc = buf_append_str(out, hb->v5_fields ? ",\"withoutSub\":false}" : "}");
    if (rc)
        out->len = out->pos + mark;
    return rc;
}

/* ---- TopicRouteData ---- */

/* Copies src to out, quoting bare numeric object keys ({0:"a"} -> {"0":"a"})
 * so jansson can read what fastjson writes for old clients. Keys are told
 * from array elements by a container stack. 0, RMQ_EPROTO or a buf error. */
static int quote_bare_keys(const uint8_t *p, size_t len, struct buf *out)
{
    char stack[SIM_BODY_MAX_DEPTH];
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
            if (depth == SIM_BODY_MAX_DEPTH)
                return RMQ_EPROTO;
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

static int fail(char *err, size_t errlen, const char *what)
{
    return rmq_fail(err, errlen, RMQ_EPROTO, "route: %s", what);
}

/* brokerAddrs {id: addr}: addresses in ascending id order, master = id 0. */
static int parse_addrs(const json_t *addrs, struct sim_route_broker *b, char *err, size_t errlen)
{
    size_t n = json_object_size(addrs);
    if (n > SIM_BODY_MAX_ROUTE_ENTRIES)
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

static int parse_brokers(const json_t *arr, struct sim_route *r, char *err, size_t errlen)
{
    if (!json_is_array(arr))
        return fail(err, errlen, "brokerDatas is not an array");
    size_t n = json_array_size(arr);
    if (n > SIM_BODY_MAX_ROUTE_ENTRIES)
        return fail(err, errlen, "too many brokerDatas");
    r->brokers = rmq_calloc(n ? n : 1, sizeof *r->brokers);
    if (!r->brokers)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *bd = json_array_get(arr, i);
        const json_t *name = json_object_get(bd, "brokerName");
        const json_t *addrs = json_object_get(bd, "brokerAddrs");
        if (!json_is_string(name) || !json_is_object(addrs))
            return fail(err, errlen, "brokerData needs brokerName and brokerAddrs");
        struct sim_route_broker *b = &r->brokers[r->nbrokers++];
        if (!(b->name = rmq_strdup(json_string_value(name))))
            return RMQ_ENOMEM;
        int rc = parse_addrs(addrs, b, err, errlen);
        if (rc)
            return rc;
    }
    return RMQ_OK;
}

static int parse_queues(const json_t *arr, struct sim_route *r, char *err, size_t errlen)
{
    if (!json_is_array(arr))
        return fail(err, errlen, "queueDatas is not an array");
    size_t n = json_array_size(arr);
    if (n > SIM_BODY_MAX_ROUTE_ENTRIES)
        return fail(err, errlen, "too many queueDatas");
    r->queues = rmq_calloc(n ? n : 1, sizeof *r->queues);
    if (!r->queues)
        return RMQ_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *qd = json_array_get(arr, i);
        const json_t *name = json_object_get(qd, "brokerName");
        const json_t *rq = json_object_get(qd, "readQueueNums");
        const json_t *perm = json_object_get(qd, "perm");
        if (!json_is_string(name) || !json_is_integer(rq) || !json_is_integer(perm) ||
            json_integer_value(rq) < 0 || json_integer_value(rq) > 65535)
            return fail(err, errlen, "queueData needs brokerName, readQueueNums 0..65535 and perm");
        struct sim_route_queue *q = &r->queues[r->nqueues++];
        q->read_queue_nums = (int)json_integer_value(rq);
        q->perm = (int)json_integer_value(perm);
        if (!(q->broker_name = rmq_strdup(json_string_value(name))))
            return RMQ_ENOMEM;
    }
    return RMQ_OK;
}

int sim_route_parse(const uint8_t *body, size_t len, struct sim_route *out, char *err, size_t errlen)
{
    struct buf fixed;
    buf_init(&fixed, 0);
    json_t *root = NULL;
    int rc = quote_bare_keys(body, len, &fixed);
    if (rc == RMQ_EPROTO)
        rc = fail(err, errlen, "nested too deeply");
    if (!rc)
        rc = rmq_json_load_object(buf_head(&fixed), buf_live(&fixed), "route", &root, err, errlen);
    if (!rc)
        rc = parse_brokers(json_object_get(root, "brokerDatas"), out, err, errlen);
    if (!rc)
        rc = parse_queues(json_object_get(root, "queueDatas"), out, err, errlen);
    json_decref(root);
    buf_free(&fixed);
    if (rc)
        sim_route_clear(out);
    return rc;
}

void sim_route_clear(struct sim_route *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nbrokers; i++) {
        struct sim_route_broker *b = &r->brokers[i];
        rmq_free(b->name);
        rmq_free(b->master);
        sim_ids_free(b->addrs, b->naddrs);
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

bool sim_route_equal(const struct sim_route *a, const struct sim_route *b)
{
    if (a->nbrokers != b->nbrokers || a->nqueues != b->nqueues)
        return false;
    for (size_t i = 0; i < a->nbrokers; i++) {
        const struct sim_route_broker *x = &a->brokers[i], *y = &b->brokers[i];
        if (!str_eq(x->name, y->name) || !str_eq(x->master, y->master) || x->naddrs != y->naddrs)
            return false;
        for (size_t j = 0; j < x->naddrs; j++)
            if (!str_eq(x->addrs[j], y->addrs[j]))
                return false;
    }
    for (size_t i = 0; i < a->nqueues; i++) {
        const struct sim_route_queue *x = &a->queues[i], *y = &b->queues[i];
        if (!str_eq(x->broker_name, y->broker_name) || x->read_queue_nums != y->read_queue_nums ||
            x->perm != y->perm)
            return false;
    }
    return true;
}

const char *sim_route_addr_of(const struct sim_route *r, const char *broker_name)
{
    for (size_t i = 0; i < r->nbrokers; i++) {
        const struct sim_route_broker *b = &r->brokers[i];
        if (strcmp(b->name, broker_name) != 0)
            continue;
        if (b->master)
            return b->master;
        return b->naddrs ? b->addrs[0] : NULL;
    }
    return NULL;
}

/* ---- consumer id list ---- */

void sim_ids_free(char **ids, size_t n)
{
    if (!ids)
        return;
    for (size_t i = 0; i < n; i++)
        rmq_free(ids[i]);
    rmq_free(ids);
}

int sim_consumer_list_parse(const uint8_t *body, size_t len, char ***ids, size_t *n, char *err, size_t errlen)
{
    json_t *root = NULL;
    int rc = rmq_json_load_object(body, len, "consumer list", &root, err, errlen);
    if (rc)
        return rc;
    const json_t *arr = json_object_get(root, "consumerIdList");
    size_t cnt = json_array_size(arr);
    if (!json_is_array(arr) || cnt > SIM_BODY_MAX_IDS) {
        json_decref(root);
        return rmq_fail(err, errlen, RMQ_EPROTO, "consumer list: consumerIdList missing or too long");
    }
    char **out = rmq_calloc(cnt ? cnt : 1, sizeof *out);
    rc = out ? RMQ_OK : RMQ_ENOMEM;
    for (size_t i = 0; !rc && i < cnt; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v))
            rc = rmq_fail(err, errlen, RMQ_EPROTO, "consumer list: entry %zu is not a string", i);
        else if (!(out[i] = rmq_strdup(json_string_value(v))))
            rc = RMQ_ENOMEM;
    }
    json_decref(root);
    if (rc) {
        sim_ids_free(out, cnt);
        return rc;
    }
    *ids = out;
    *n = cnt;
    return RMQ_OK;
}

/* ---- holdings line ---- */

int sim_holdings_line_encode(struct buf *out, int64_t t_ms, const char *client_id, const char *topic,
                             const struct allocate_queue *qs, size_t n, const char *reason)
{
    size_t mark = buf_live(out);
    int rc = buf_appendf(out, "{\"t\":%" PRId64 ",\"clientId\":", t_ms);
    if (!rc)
        rc = rmq_json_append_string(out, client_id);
    if (!rc)
        rc = buf_append_str(out, ",\"topic\":");
    if (!rc)
        rc = rmq_json_append_string(out, topic);
    if (!rc)
        rc = buf_append_str(out, ",\"queues\":[");
    for (size_t i = 0; !rc && i < n; i++) {
        rc = buf_append_str(out, i ? ",{\"brokerName\":" : "{\"brokerName\":");
        if (!rc)
            rc = rmq_json_append_string(out, qs[i].broker_name);
        if (!rc)
            rc = buf_appendf(out, ",\"queueId\":%" PRId32 "}", qs[i].queue_id);
    }
    if (!rc)
        rc = buf_append_str(out, "],\"reason\":");
    if (!rc)
        rc = rmq_json_append_string(out, reason);
    if (!rc)
        rc = buf_append_u8(out, '}');
    if (rc)
        out->len = out->pos + mark;
    return rc;
}
