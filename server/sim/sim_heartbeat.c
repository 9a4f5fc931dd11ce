/* sim_heartbeat.c — HEART_BEAT from a simulated client to every broker
 * address of its routes, shaped like a Java 4.9.x push consumer's (the body
 * is sim_body.c's). Loop thread only. */
#include "sim_heartbeat.h"

#include "log.h"
#include "request_codes.h"
#include "sim_body.h"
#include "sim_conn.h"

#include <assert.h>
#include <string.h>

/* Collects the distinct broker addresses of every route into addrs. */
static size_t broker_addrs(const struct sim_client *c, const char **addrs, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < c->ntopics; i++) {
        const struct rmq_route_info *r = &c->topics[i].route;
        for (size_t b = 0; b < r->nbrokers; b++)
            for (size_t a = 0; a < r->brokers[b].naddrs; a++) {
                const char *addr = r->brokers[b].addrs[a];
                size_t k = 0;
                while (k < n && strcmp(addrs[k], addr) != 0)
                    k++;
                if (k == n && n < cap)
                    addrs[n++] = addr;
            }
    }
    assert(n <= cap);
    return n;
}

bool sim_client_is_broker(const struct sim_client *c, const char *addr)
{
    const char *addrs[SIM_MAX_CONNS_PER_GROUP];
    size_t n = broker_addrs(c, addrs, SIM_MAX_CONNS_PER_GROUP);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(addrs[i], addr))
            return true;
    return false;
}

/* See sim_heartbeat.h. */
int sim_heartbeat_send(struct sim_client *c, rclient_reply_cb cb)
{
    struct sim_sub subs[SIM_MAX_TOPICS];
    assert(c->ntopics <= SIM_MAX_TOPICS);
    for (size_t i = 0; i < c->ntopics; i++)
        subs[i] = (struct sim_sub){c->topics[i].name, c->topics[i].sub_version};
    struct sim_heartbeat_spec hb = {
        .client_id = c->id,
        .group = c->sim->cfg->group,
        .broadcast = c->sim->cfg->broadcast,
        .v5_fields = c->sim->cfg->version >= 413, /* PROTOCOL: docs/protocol.md §3.1 5.x adds two fields */
        .subs = subs,
        .nsubs = c->ntopics,
    };
    struct buf body;
    buf_init(&body, 0);
    struct rmq_cmd cmd;
    sim_request_init(c->sim, &cmd, RMQ_REQ_HEART_BEAT);
    int sent = 0;
    if (sim_heartbeat_encode(&hb, &body) == 0 &&
        rmq_cmd_set_body_copy(&cmd, buf_head(&body), buf_live(&body)) == 0) {
        const char *addrs[SIM_MAX_CONNS_PER_GROUP];
        size_t n = broker_addrs(c, addrs, SIM_MAX_CONNS_PER_GROUP);
        for (size_t i = 0; i < n; i++) {
            struct rclient_conn *conn = sim_group_conn(c->grp, addrs[i]);
            if (conn && rclient_conn_request(conn, &cmd, SIM_TIMEOUT_API_MS, SIM_REQ_SYNC, cb, c) == 0)
                sent++;
        }
    }
    assert(sent >= 0 && sent <= SIM_MAX_CONNS_PER_GROUP); /* one per distinct broker address */
    c->sim->stats.heartbeats += (uint64_t)sent;
    rmq_cmd_clear(&cmd);
    buf_free(&body);
    return sent;
}

static void on_heartbeat(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim_client *c = ctx;
    if (status == 0 && resp->code != RMQ_RESP_SUCCESS)
        log_warn("sim: %s: heartbeat refused: %d %s", c->id, resp->code, resp->remark ? resp->remark : "");
}

void sim_client_heartbeat_all(struct sim_client *c)
{
    if (!c->sim->stopping)
        (void)sim_heartbeat_send(c, on_heartbeat);
}
