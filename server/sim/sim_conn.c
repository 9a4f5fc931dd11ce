/* sim_conn.c — a group's connections, one per broker address as a Java
 * process keys them, and the request header every sim request carries.
 * Loop thread only. */
#include "sim_conn.h"

#include "log.h"

#include <assert.h>
#include <string.h>

void sim_request_init(const struct sim *sim, struct rmq_cmd *cmd, int32_t code)
{
    rmq_cmd_init_request(cmd, code, 0, 0);
    cmd->version = sim->cfg->version;
    cmd->language = sim->cfg->language;
}

struct rclient_conn *sim_group_conn(struct sim_group *g, const char *addr)
{
    for (size_t i = 0; i < g->nconns; i++)
        if (!strcmp(rclient_conn_addr(g->conns[i]), addr))
            return g->conns[i];
    if (g->nconns == SIM_MAX_CONNS_PER_GROUP)
        return NULL;
    struct rclient_conn_handler h = g->sim->inbound;
    h.ctx = g;
    struct rclient_conn *c;
    if (rclient_conn_new(g->sim->net, addr, &h, &g->next_opaque, &c) != 0) {
        log_warn("sim: cannot use broker address '%s'", addr);
        return NULL;
    }
    g->conns[g->nconns++] = c;
    assert(g->nconns <= SIM_MAX_CONNS_PER_GROUP);
    return c;
}
