/* cmd_sim.c — `rmqcoord sim`: the process around the simulated clients.
 *
 * Builds the clients and their connection groups, runs the loop until
 * SIGINT/SIGTERM (read from a signalfd, so no handler races the loop) or
 * --duration-ms, then shuts down like a Java consumer: offsets persisted
 * (oneway), UNREGISTER_CLIENT for the consumer and the inner producer on
 * every broker connection, waiting at most 1 s for the answers. Writes the
 * holdings lines and the final summary line on stdout. Main thread (which
 * is the loop thread).
 */
#include "cmd_sim.h"
#include "sim_balance.h"
#include "sim_client.h"
#include "sim_conn.h"
#include "sim_heartbeat.h"
#include "sim_inbound.h"
#include "sim_opts.h"
#include "sim_pull.h"
#include "sim_state.h"

#include "clocks.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "proc.h"
#include "request_codes.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SIM_TICK_MS 50

static void emit_summary(const struct sim *sim)
{
    const struct rclient_stats *n = rclient_stats(sim->net);
    size_t held = 0;
    for (size_t i = 0; i < sim->nclients; i++)
        for (size_t j = 0; j < sim->clients[i].ntopics; j++)
            held += sim->clients[i].topics[j].nheld;
    printf("{\"t\":%" PRId64 ",\"summary\":{\"clients\":%zu,\"connections\":%zu,\"heldQueues\":%zu,"
           "\"rebalances\":%" PRIu64 ",\"changes\":%" PRIu64 ",\"notifies\":%" PRIu64
           ",\"heartbeats\":%" PRIu64 ",\"pulls\":%" PRIu64 ",\"runningInfo\":%" PRIu64
           ",\"unregistered\":%" PRIu64 ",\"connects\":%" PRIu64 ",\"disconnects\":%" PRIu64
           ",\"timeouts\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"responses\":%" PRIu64 "}}\n",
           rmq_wall_ms(), sim->nclients, sim->ngroups, held, sim->stats.rebalances, sim->stats.changes,
           sim->stats.notifies, sim->stats.heartbeats, sim->stats.pulls, sim->stats.running_info,
           sim->stats.unregistered, n->connects, n->disconnects, n->timeouts, n->requests, n->responses);
    fflush(stdout);
}

static void on_unregistered(void *ctx, int status, const struct rmq_cmd *resp)
{
    struct sim *sim = ctx;
    if (status == RMQ_ESTATE)
        return;
    sim->stats.unregistered += status == 0 && resp->code == RMQ_RESP_SUCCESS;
    assert(sim->unregister_waiting > 0); /* one callback per request counted in unregister() */
    if (--sim->unregister_waiting == 0)
        loop_stop(sim->loop);
}

/* PROTOCOL: docs/protocol.md §2.1 35 carries clientID and one of consumerGroup/producerGroup. */
static void unregister(struct sim *sim, struct rclient_conn *conn, const char *id, const char *key,
                       const char *group)
{
    struct rmq_cmd cmd;
    sim_request_init(sim, &cmd, RMQ_REQ_UNREGISTER_CLIENT);
    int rc = rmq_cmd_ext_set(&cmd, "clientID", id);
    if (!rc)
        rc = rmq_cmd_ext_set(&cmd, key, group);
    if (!rc)
        rc = rclient_conn_request(conn, &cmd, SIM_TIMEOUT_UNREGISTER_MS, 0, on_unregistered, sim);
    sim->unregister_waiting += rc == 0;
    rmq_cmd_clear(&cmd);
}

static void on_stop_deadline(struct loop *l, int id, void *ctx)
{
    loop_stop(l);
}

/* Java shutdown order (PROTOCOL: docs/protocol.md §10.3): persist offsets, then unregister
 * from every broker; the loop stops when all answered or after 1 s. */
static void begin_shutdown(struct sim *sim)
{
    if (sim->stopping)
        return;
    assert(sim->unregister_waiting == 0); /* shutdown begins once */
    for (size_t i = 0; i < sim->nclients; i++)
        sim_pq_persist_all(&sim->clients[i]);
    sim->stopping = true;
    for (size_t g = 0; g < sim->ngroups; g++) {
        struct sim_group *grp = &sim->groups[g];
        for (size_t k = 0; k < grp->nconns; k++)
            for (size_t m = 0; m < grp->nmembers; m++) {
                const struct sim_client *c = grp->members[m];
                if (!sim_client_is_broker(c, rclient_conn_addr(grp->conns[k])))
                    continue; /* e.g. a name server that is no broker */
                unregister(sim, grp->conns[k], c->id, "consumerGroup", sim->cfg->group);
                unregister(sim, grp->conns[k], c->id, "producerGroup", "CLIENT_INNER_PRODUCER");
            }
    }
    if (sim->unregister_waiting == 0 ||
        loop_add_timer(sim->loop, SIM_TIMEOUT_UNREGISTER_MS, 0, on_stop_deadline, sim, NULL) != 0)
        loop_stop(sim->loop);
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *ctx)
{
    (void)proc_read_stop_signals(fd, "sim: ");
    begin_shutdown(ctx);
}

static void on_duration(struct loop *l, int id, void *ctx)
{
    begin_shutdown(ctx);
}

/* The name server was never reached: say so and exit 3 rather than
 * printing nothing and exiting 0 as if all went well. */
static void on_connect_deadline(struct loop *l, int id, void *ctx)
{
    struct sim *sim = ctx;
    if (rclient_stats(sim->net)->connects > 0)
        return;
    fprintf(stderr,
            "rmqcoord sim: cannot reach the name server %s within %lld ms (refused, unreachable or "
            "silent); is the daemon running there?\n",
            sim->cfg->namesrv, (long long)sim->cfg->connect_timeout_ms);
    sim->unreachable = true;
    loop_stop(l);
}

static void on_tick(struct loop *l, int id, void *ctx)
{
    rclient_tick(((struct sim *)ctx)->net);
}

static void before_sleep(struct loop *l, void *ctx)
{
    rclient_before_sleep(((struct sim *)ctx)->net);
}

/* Client ids: --client-id, P-<i>, or 127.0.0.1@<pid>-sim<i>: the pid keeps
 * two sim processes from sharing ids (as Java's ip@pid does), which would
 * silently make them hold the same queues. */
static void client_id(const struct sim_config *cfg, size_t i, char *out, size_t cap)
{
    if (cfg->client_id)
        snprintf(out, cap, "%s", cfg->client_id);
    else if (cfg->client_prefix)
        snprintf(out, cap, "%s-%zu", cfg->client_prefix, i);
    else
        snprintf(out, cap, "127.0.0.1@%ld-sim%zu", (long)getpid(), i);
}

/* Makes the clients and their groups of per_conn. 0 or an error. */
static int sim_build(struct sim *sim)
{
    const struct sim_config *cfg = sim->cfg;
    sim->nclients = (size_t)cfg->clients;
    sim->ngroups = (sim->nclients + (size_t)cfg->per_conn - 1) / (size_t)cfg->per_conn;
    sim->clients = rmq_calloc(sim->nclients, sizeof *sim->clients);
    sim->groups = rmq_calloc(sim->ngroups, sizeof *sim->groups);
    struct sim_client **members = rmq_calloc(sim->nclients, sizeof *members);
    if (!sim->clients || !sim->groups || !members) {
        rmq_free(members);
        return RMQ_ENOMEM;
    }
    assert(sim->ngroups * (size_t)cfg->per_conn >= sim->nclients); /* every client has a group */
    for (size_t g = 0; g < sim->ngroups; g++) {
        sim->groups[g].sim = sim;
        sim->groups[g].members = members + g * (size_t)cfg->per_conn;
    }
    for (size_t i = 0; i < sim->nclients; i++) {
        char id[512];
        struct sim_group *grp = &sim->groups[i / (size_t)cfg->per_conn];
        client_id(cfg, i, id, sizeof id);
        int rc = sim_client_init(&sim->clients[i], sim, grp, id);
        if (rc)
            return rc;
        assert(grp->nmembers < (size_t)cfg->per_conn); /* the group's slice of members */
        grp->members[grp->nmembers++] = &sim->clients[i];
    }
    return RMQ_OK;
}

static void sim_teardown(struct sim *sim)
{
    /* Connections first: their pending callbacks still see live clients. */
    rclient_free(sim->net);
    sim->net = NULL;
    for (size_t i = 0; sim->clients && i < sim->nclients; i++)
        if (sim->clients[i].id)
            sim_client_fini(&sim->clients[i]);
    if (sim->groups)
        rmq_free(sim->groups[0].members);
    rmq_free(sim->groups);
    rmq_free(sim->clients);
    buf_free(&sim->line);
    loop_free(sim->loop);
}

static int sim_setup(struct sim *sim, const struct sim_config *cfg, int sfd)
{
    memset(sim, 0, sizeof *sim);
    sim->cfg = cfg;
    sim->inbound = (struct rclient_conn_handler){.on_request = sim_inbound_request, .on_up = sim_inbound_up};
    buf_init(&sim->line, 0);
    int rc = loop_new(&sim->loop);
    if (!rc)
        rc = rclient_new(sim->loop, &sim->net);
    if (!rc)
        rc = sim_build(sim);
    if (!rc)
        rc = loop_add_fd(sim->loop, sfd, LOOP_READ, on_signal, sim);
    if (!rc)
        rc = loop_add_timer(sim->loop, SIM_TICK_MS, SIM_TICK_MS, on_tick, sim, NULL);
    if (!rc && cfg->duration_ms > 0)
        rc = loop_add_timer(sim->loop, cfg->duration_ms, 0, on_duration, sim, NULL);
    if (!rc)
        rc = loop_add_timer(sim->loop, cfg->connect_timeout_ms, 0, on_connect_deadline, sim, NULL);
    if (!rc)
        loop_set_before_sleep(sim->loop, before_sleep, sim);
    return rc;
}

int cmd_sim_main(int argc, char **argv)
{
    static struct sim_config cfg;
    int rc = sim_config_parse(&cfg, argc, argv);
    if ((rc = proc_start(rc, cfg.log_level)) >= 0)
        return rc;
    (void)proc_raise_fd_limit(); /* the old limit still works for small runs */
    int sfd = proc_stop_signal_fd();
    static struct sim sim;
    rc = sfd < 0 ? -1 : sim_setup(&sim, &cfg, sfd);
    for (size_t i = 0; rc == 0 && i < sim.nclients; i++)
        rc = sim_client_start(&sim.clients[i]);
    if (rc == 0)
        rc = loop_run(sim.loop);
    if (rc != 0)
        log_error("rmqcoord sim: %s", rmq_strerror(rc));
    if (sim.loop)
        emit_summary(&sim);
    sim_teardown(&sim);
    if (sfd >= 0)
        close(sfd);
    bool unreachable = sim.unreachable;
    sim_config_clear(&cfg);
    return unreachable ? 3 : rc == 0 ? 0 : 1;
}
