/* broker_registration.c — the broker side of cluster mode (--role broker): registers
 * the daemon's own topics with every --namesrv using REGISTER_BROKER (103),
 * every --register-interval-ms and at once after a topic change, and sends
 * UNREGISTER_BROKER (104) at clean shutdown (see cluster.h, docs/cluster.md).
 *
 * The connections are rclient client connections (non-blocking connect,
 * reconnect with backoff, replies matched by opaque), driven by a 100 ms
 * timer and written before the loop sleeps. Loop thread only, except the
 * shutdown unregistration, which runs blocking and bounded on the main
 * thread after the loop has stopped.
 */
#include "broker_registration.h"

#include "acl_sig.h"
#include "broker.h"
#include "buf.h"
#include "clocks.h"
#include "config.h"
#include "crc32.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "remoting_client.h"
#include "remoting_frame.h"
#include "request_codes.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define BREG_TICK_MS 100
#define BREG_TIMEOUT_MS 3000 /* the Java broker's registration timeout default is 6 s; ours is shorter */
#define BREG_VERSION 401     /* V4_9_4: a name server then uses its filter-server registration path */

struct breg_ns {
    char addr[300];
    struct rclient_conn *c; /* owned by net */
    bool in_flight;
    bool registered; /* the last attempt succeeded */
    int64_t last_ok_ms, last_attempt_ms;
    int64_t ok_count, fail_count;
    char last_error[200];
};

struct broker_reg;
#ifndef NDEBUG
static int reg_sanity(const struct broker_reg *r);
#endif

struct broker_reg {
    struct broker *s; /* borrowed */
    struct rclient *net;
    struct breg_ns ns[CONFIG_MAX_NAMESRV];
    size_t n;
    int32_t opaque;
    uint64_t gen_sent;
    bool sent_once;
    int64_t next_ms; /* loop clock: the next periodic registration */
    int64_t dv_counter, dv_timestamp;
    char http_addr[300];
};

#ifndef NDEBUG
/* One name server per --namesrv, each with its client connection; a
 * registration is in flight only to a connection that has one; a success
 * is never later than the attempt it answered; once a registration went
 * out, the data version names the topics' generation it carried. */
static int reg_sanity(const struct broker_reg *r)
{
    assert(r->n <= CONFIG_MAX_NAMESRV && r->n <= r->s->cfg->nnamesrv);
    for (size_t i = 0; i < r->n; i++) {
        const struct breg_ns *ns = &r->ns[i];
        assert(ns->addr[0]);
        assert(ns->last_ok_ms <= ns->last_attempt_ms);
        assert(!ns->registered || ns->ok_count > 0);
        assert(!ns->in_flight || ns->c);
    }
    assert(!r->sent_once || r->dv_counter > 0);
    return 1;
}
#endif

int broker_reg_body(struct broker *s, int64_t dv_counter, int64_t dv_timestamp, struct buf *out)
{
    json_t *table = json_object();
    size_t b;
    for (struct hashmap_entry *e = hashmap_first(&s->topics.map, &b); table && e;
         e = hashmap_next(&s->topics.map, e, &b)) {
        const struct topic *tp = e->val;
        for (size_t i = 0; i < tp->nbrokers; i++) {
            const struct topic_broker *tb = &tp->brokers[i];
            /* Only the queues this process serves: its own broker name. */
            if (strcmp(tb->broker_name, s->cfg->broker_name))
                continue;
            json_t *cfg = json_pack("{s:s,s:i,s:i,s:i,s:s,s:i,s:b}", "topicName", tp->name, "readQueueNums",
                                    tb->read_queue_nums, "writeQueueNums", tb->write_queue_nums, "perm",
                                    tb->perm, "topicFilterType", "SINGLE_TAG", "topicSysFlag", 0, "order", 0);
            if (!cfg || json_object_set_new(table, tp->name, cfg) != 0) {
                json_decref(table);
                return RMQ_ENOMEM;
            }
        }
    }
    json_t *body =
        table ? json_pack("{s:[],s:{s:{s:I,s:I},s:o}}", "filterServerList", "topicConfigSerializeWrapper",
                          "dataVersion", "counter", (json_int_t)dv_counter, "timestamp",
                          (json_int_t)dv_timestamp, "topicConfigTable", table)
              : NULL;
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(body);
    if (!text)
        return RMQ_ENOMEM;
    int rc = buf_append(out, text, strlen(text));
    free(text);
    return rc;
}

/* The REGISTER_BROKER / UNREGISTER_BROKER header both requests share. */
static int set_common_ext(struct broker *s, struct rmq_cmd *req)
{
    int rc = rmq_cmd_ext_set(req, "brokerName", s->cfg->broker_name);
    if (rc == 0)
        rc = rmq_cmd_ext_set(req, "brokerAddr", s->advertise);
    if (rc == 0)
        rc = rmq_cmd_ext_set(req, "clusterName", s->cfg->cluster_name);
    if (rc == 0)
        rc = rmq_cmd_ext_set(req, "brokerId", "0");
    return rc;
}

/* With --namesrv-access-key: AccessKey and the RocketMQ ACL Signature
 * (AclClientRPCHook's: every other extField and the body), added last so
 * they cover the whole request. 0 or RMQ_ENOMEM. */
static int sign(const struct broker *s, struct rmq_cmd *req)
{
    if (!s->cfg->namesrv_access_key[0])
        return RMQ_OK;
    char sig[ACL_SIG_LEN];
    int rc = rmq_cmd_ext_set(req, "AccessKey", s->cfg->namesrv_access_key);
    if (rc == 0)
        rc = acl_signature(req, s->cfg->namesrv_secret_key, sig);
    if (rc == 0)
        rc = rmq_cmd_ext_set(req, "Signature", sig);
    return rc;
}

static int build_register(struct broker_reg *r, struct rmq_cmd *req)
{
    struct broker *s = r->s;
    rmq_cmd_init_request(req, RMQ_REQ_REGISTER_BROKER, 0, 0);
    req->version = BREG_VERSION;
    struct buf body;
    buf_init(&body, 0);
    int rc = broker_reg_body(s, r->dv_counter, r->dv_timestamp, &body);
    if (rc == 0)
        rc = set_common_ext(s, req);
    /* haServerAddr is required (CFNotNull); rmqcoord has no HA port, so it names the broker itself. */
    if (rc == 0)
        rc = rmq_cmd_ext_set(req, "haServerAddr", s->advertise);
    if (rc == 0)
        rc = rmq_cmd_ext_set(req, "compressed", "false");
    if (rc == 0)
        rc = rmq_cmd_ext_set_i64(req, "bodyCrc32", crc32_rocketmq(buf_head(&body), buf_live(&body)));
    if (rc == 0 && r->http_addr[0])
        rc = rmq_cmd_ext_set(req, CLUSTER_EXT_HTTP, r->http_addr);
    if (rc == 0)
        rc = rmq_cmd_set_body_copy(req, buf_head(&body), buf_live(&body));
    if (rc == 0)
        rc = sign(s, req);
    buf_free(&body);
    return rc;
}

static void on_registered(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct breg_ns *ns = ctx;
    assert(ns->in_flight); /* one callback per request sent */
    ns->in_flight = false;
    if (status == 0 && resp->code == RMQ_RESP_SUCCESS) {
        if (!ns->registered)
            log_info("broker: registered with name server %s", ns->addr);
        ns->registered = true;
        ns->ok_count++;
        ns->last_ok_ms = ns->last_attempt_ms;
        ns->last_error[0] = 0;
        return;
    }
    ns->fail_count++;
    if (status == 0)
        snprintf(ns->last_error, sizeof ns->last_error, "code %d: %s", resp->code,
                 resp->remark ? resp->remark : "");
    else
        snprintf(ns->last_error, sizeof ns->last_error, "%s",
                 status == -ETIMEDOUT   ? "timed out"
                 : status <= RMQ_EAGAIN ? rmq_strerror(status)
                                        : strerror(-status));
    if (ns->registered)
        log_warn("broker: registration with %s failed: %s", ns->addr, ns->last_error);
    ns->registered = false;
}

static void register_all(struct broker_reg *r)
{
    struct rmq_cmd req;
    if (build_register(r, &req) != 0) {
        rmq_cmd_clear(&req);
        log_error("broker: out of memory building REGISTER_BROKER");
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        struct breg_ns *ns = &r->ns[i];
        if (ns->in_flight)
            continue;
        ns->last_attempt_ms = broker_now_ms(r->s);
        int rc = rclient_conn_request(ns->c, &req, BREG_TIMEOUT_MS, 0, on_registered, ns);
        if (rc == 0) {
            ns->in_flight = true;
            continue;
        }
        ns->fail_count++;
        ns->registered = false;
        snprintf(ns->last_error, sizeof ns->last_error, "%s",
                 rc == -ENOTCONN    ? "not connected (reconnecting)"
                 : rc <= RMQ_EAGAIN ? rmq_strerror(rc)
                                    : strerror(-rc));
    }
    rmq_cmd_clear(&req);
    assert(reg_sanity(r));
}

static void tick(struct loop *l, int id, void *ctx)
{
    (void)id;
    struct broker_reg *r = ctx;
    rclient_tick(r->net);
    int64_t now = loop_now_ms(l);
    bool changed = !r->sent_once || r->s->topics.generation != r->gen_sent;
    if (!changed && now < r->next_ms)
        return;
    if (changed) {
        /* PROTOCOL (docs/protocol.md §8.4): DataVersion {timestamp, counter} moves with every topic-config
         * change. */
        r->dv_counter++;
        r->dv_timestamp = broker_now_ms(r->s);
        r->gen_sent = r->s->topics.generation;
        r->sent_once = true;
    }
    assert(r->gen_sent == r->s->topics.generation); /* what goes out is the current topics */
    r->next_ms = now + r->s->cfg->register_interval_ms;
    register_all(r);
}

int broker_reg_start(struct broker *s)
{
    struct broker_reg *r = rmq_calloc(1, sizeof *r);
    if (!r)
        return RMQ_ENOMEM;
    s->breg = r;
    r->s = s;
    r->opaque = 1;
    if (s->http_port)
        snprintf(r->http_addr, sizeof r->http_addr, "%s:%u", s->cfg->http.host, s->http_port);
    int rc = rclient_new(s->loop, &r->net);
    struct rclient_conn_handler h = {.ctx = r};
    for (size_t i = 0; rc == 0 && i < s->cfg->nnamesrv; i++) {
        const struct config_addr *a = &s->cfg->namesrv[i];
        snprintf(r->ns[i].addr, sizeof r->ns[i].addr, strchr(a->host, ':') ? "[%s]:%u" : "%s:%u", a->host,
                 a->port);
        rc = rclient_conn_new(r->net, r->ns[i].addr, &h, &r->opaque, &r->ns[i].c);
        if (rc != 0)
            log_error("broker: name server address %s is not numeric ip:port", r->ns[i].addr);
        r->n = i + 1;
    }
    if (rc == 0)
        rc = loop_add_timer(s->loop, 1, BREG_TICK_MS, tick, r, NULL);
    assert(rc || (r->n == s->cfg->nnamesrv && reg_sanity(r)));
    return rc;
}

void broker_reg_before_sleep(struct broker *s)
{
    if (s->breg)
        rclient_before_sleep(s->breg->net);
}

/* The reply to a blocking UNREGISTER_BROKER on the connected fd: sends
 * frame whole and reads one response frame, within UNREG_TOTAL_MS. 0 only
 * when a SUCCESS response to opaque arrived; otherwise an error, with why
 * saying what happened. errno is read only right after the call that set
 * it: a short send or a peer that closes without replying (recv() 0) set
 * none, and used to be reported with a stale errno, 0 included (success). */
#define UNREG_TOTAL_MS 2000
static int unregister_exchange(int fd, const struct buf *frame, int32_t opaque, char *why, size_t whylen)
{
    int64_t deadline = rmq_mono_ms() + UNREG_TOTAL_MS;
    for (size_t off = 0, n = buf_live(frame); off < n;) {
        ssize_t w = send(fd, buf_head(frame) + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) {
            int rc = w == 0 ? -EPIPE : errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
            snprintf(why, whylen, "sending: %s", strerror(-rc));
            return rc;
        }
        off += (size_t)w;
        assert(off <= n);
    }
    struct rmq_frame_decoder dec;
    rmq_frame_decoder_init(&dec, 64 * 1024, 0);
    struct rmq_cmd resp;
    rmq_cmd_init(&resp);
    int rc;
    while ((rc = rmq_frame_decoder_next(&dec, &resp)) == RMQ_EAGAIN) {
        uint8_t chunk[4096];
        ssize_t r = rmq_mono_ms() < deadline ? recv(fd, chunk, sizeof chunk, 0) : -2;
        if (r == 0) {
            rc = -ECONNRESET;
            snprintf(why, whylen, "the name server closed the connection without a reply");
            break;
        }
        if (r < 0) {
            rc = r == -1 && errno != EAGAIN && errno != EWOULDBLOCK ? -errno : -ETIMEDOUT;
            snprintf(why, whylen, "waiting for the reply: %s", strerror(-rc));
            break;
        }
        rc = rmq_frame_decoder_feed(&dec, chunk, (size_t)r);
        if (rc != 0) {
            snprintf(why, whylen, "%s", rmq_strerror(rc));
            break;
        }
    }
    if (rc == 0 && (!rmq_cmd_is_response(&resp) || resp.opaque != opaque)) {
        rc = RMQ_EPROTO;
        snprintf(why, whylen, "the name server sent something other than the reply");
    } else if (rc == 0 && resp.code != RMQ_RESP_SUCCESS) {
        rc = RMQ_EPROTO;
        snprintf(why, whylen, "refused with code %d: %s", resp.code, resp.remark ? resp.remark : "");
    } else if (rc != 0 && rc != RMQ_EAGAIN && !why[0]) {
        snprintf(why, whylen, "bad reply: %s", dec.error);
    }
    rmq_cmd_clear(&resp);
    rmq_frame_decoder_free(&dec);
    return rc;
}

/* Sends UNREGISTER_BROKER to addr over a fresh blocking connection and waits
 * for the reply, bounded (1 s per step, UNREG_TOTAL_MS in all): shutdown
 * must not hang on a dead name server. Best effort; returns 0 when the name
 * server acknowledged it, otherwise an error with why filled. */
static int unregister_one(struct broker *s, const struct config_addr *a, char *why, size_t whylen)
{
    why[0] = 0;
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, a->host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(a->port);
        len = sizeof *v4;
    } else if (inet_pton(AF_INET6, a->host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(a->port);
        len = sizeof *v6;
    } else {
        snprintf(why, whylen, "not a numeric address");
        return RMQ_EINVAL;
    }
    struct rmq_cmd req;
    rmq_cmd_init_request(&req, RMQ_REQ_UNREGISTER_BROKER, 1, 0);
    req.version = BREG_VERSION;
    struct buf frame;
    buf_init(&frame, 0);
    int rc = set_common_ext(s, &req);
    if (rc == 0)
        rc = sign(s, &req);
    if (rc == 0)
        rc = rmq_frame_encode(&req, &frame);
    rmq_cmd_clear(&req);
    if (rc != 0) {
        snprintf(why, whylen, "%s", rmq_strerror(rc));
        buf_free(&frame);
        return rc;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        snprintf(why, whylen, "socket: %s", strerror(-rc));
    } else {
        struct timeval tv = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
            rc = -errno;
            snprintf(why, whylen, "connect: %s", strerror(-rc));
        } else {
            rc = unregister_exchange(fd, &frame, 1, why, whylen);
        }
        close(fd);
    }
    buf_free(&frame);
    return rc;
}

void broker_reg_stop(struct broker *s)
{
    struct broker_reg *r = s->breg;
    if (!r)
        return;
    /* A signed broker unregisters before its registration connections close
     * (a name server also drops a broker whose channel closes, and should
     * hear why). An unsigned one closes them first: an rmqcoord name server
     * takes an unsigned UNREGISTER_BROKER only over the connection that
     * registered (docs/cluster.md), and dropping that connection removes the
     * broker; the fresh connection's UNREGISTER_BROKER then tells a Java
     * name server, which accepts it from anyone. */
    bool signs = s->cfg->namesrv_access_key[0] != 0;
    if (!signs) {
        rclient_free(r->net);
        r->net = NULL;
    }
    for (size_t i = 0; i < r->n; i++) {
        char why[256];
        int rc = unregister_one(s, &s->cfg->namesrv[i], why, sizeof why);
        if (rc == 0)
            log_info("broker: unregistered from name server %s", r->ns[i].addr);
        else
            log_warn("broker: UNREGISTER_BROKER to %s failed: %s", r->ns[i].addr, why);
    }
    rclient_free(r->net); /* fails in-flight registrations: their callbacks only touch r; accepts NULL */
    rmq_free(r);
    s->breg = NULL;
}

json_t *broker_reg_admin_json(struct broker *s)
{
    struct broker_reg *r = s->breg;
    json_t *arr = json_array();
    for (size_t i = 0; r && arr && i < r->n; i++) {
        const struct breg_ns *ns = &r->ns[i];
        json_t *o = json_pack("{s:s,s:b,s:I,s:I,s:I,s:I}", "namesrv", ns->addr, "registered", ns->registered,
                              "lastRegisteredMs", (json_int_t)ns->last_ok_ms, "lastAttemptMs",
                              (json_int_t)ns->last_attempt_ms, "registrations", (json_int_t)ns->ok_count,
                              "failures", (json_int_t)ns->fail_count);
        if (o && ns->last_error[0])
            json_object_set_new(o, "lastError", json_string(ns->last_error));
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    if (!arr)
        return NULL;
    return json_pack("{s:s,s:s,s:I,s:o}", "brokerName", s->cfg->broker_name, "brokerAddr", s->advertise,
                     "dataVersionCounter", (json_int_t)(r ? r->dv_counter : 0), "namesrvs", arr);
}
