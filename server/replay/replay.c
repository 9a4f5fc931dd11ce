/* replay.c — the replay engine's lifecycle (see replay.h): options, a new
 * engine with its default broker view, and freeing every part of it. The
 * events go in through replay_feed.c, the broker views and their registry
 * hooks are replay_views.c, the state's primitives replay_state.c,
 * allocation and ownership replay_own.c, the timeline replay_out.c and the
 * report replay_report.c. One thread; no I/O.
 */
#include "replay.h"

#include "client_defaults.h"
#include "err.h"
#include "mem.h"
#include "replay_infer.h"
#include "replay_own.h"
#include "replay_state.h"
#include "replay_truth.h"
#include "replay_views.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void replay_options_init(struct replay_options *opt)
{
    memset(opt, 0, sizeof *opt);
    allocate_options_init(&opt->alloc, ALLOCATE_AVG);
    opt->rebalance_ms = RMQ_DEFAULT_REBALANCE_MS;
    opt->notify_delay_ms = 0;
    opt->expiry_ms = RMQ_DEFAULT_CHANNEL_EXPIRY_MS;
    opt->scan_ms = 1000;
    dialect_init(&opt->dialect, DIALECT_RMQCOORD);
    opt->notify_source = REPLAY_NOTIFY_AUTO;
    opt->infer = true;
    opt->format = REPLAY_TEXT;
}

/* ---- lifecycle ---- */

int replay_new(const struct replay_options *opt, struct replay **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *bad = NULL;
    if (opt->rebalance_ms <= 0 || opt->scan_ms <= 0)
        bad = "--client-rebalance-ms and --expiry-scan-ms must be positive";
    else if (opt->expiry_ms < 0 || opt->notify_delay_ms < 0)
        bad = "--channel-expiry-ms and --notify-delay-ms must not be negative";
    else if (opt->alloc.strategy == ALLOCATE_CONFIG)
        bad = "CONFIG allocates each consumer's own configured list, which a trace does not carry";
    else if (opt->alloc.strategy == ALLOCATE_MACHINE_ROOM && opt->alloc.n_idcs == 0)
        bad = "MACHINE_ROOM needs --idcs ROOM[,ROOM...]";
    else if (opt->alloc.virtual_nodes < 0)
        bad = "--virtual-nodes must not be negative";
    if (bad) {
        snprintf(err, errlen, "%s", bad);
        return RMQ_EINVAL;
    }
    struct replay *rp = rmq_calloc(1, sizeof *rp);
    if (!rp)
        return RMQ_ENOMEM;
    rp->opt = *opt;
    buf_init(&rp->out, 0);
    buf_init(&rp->explain, 0);
    hashmap_init(&rp->conns);
    hashmap_init(&rp->clients);
    hashmap_init(&rp->gviews);
    hashmap_init(&rp->gts);
    hashmap_init(&rp->routes);
    hashmap_init(&rp->caches);
    hashmap_init(&rp->notified);
    hashmap_init(&rp->obs);
    hashmap_init(&rp->truth);
    if (!rp_get_view(rp, "")) {
        replay_free(rp);
        return RMQ_ENOMEM;
    }
    assert(rp->nviews == 1 && rp->views[0]->name[0] == '\0'); /* the default view comes first */
    *out = rp;
    return RMQ_OK;
}

static void free_conn(void *p)
{
    struct rp_conn *c = p;
    rmq_heartbeat_clear(&c->hb);
    rmq_free(c->last_body);
    rmq_free(c->clients);
    rmq_free(c);
}

static void free_gview(void *p)
{
    struct rp_gview *gv = p;
    rmq_free(gv->clients);
    rmq_free(gv->group);
    rmq_free(gv);
}

void replay_free(struct replay *rp)
{
    if (!rp)
        return;
    rp_truth_free(rp);
    rp_own_free(rp);
    for (size_t i = 0; i < rp->nall; i++) {
        rmq_free(rp->all[i]->group);
        rmq_free(rp->all[i]->client_id);
        rmq_free(rp->all[i]);
    }
    rmq_free(rp->all);
    for (size_t i = 0; i < rp->nviews; i++) {
        registry_free(&rp->views[i]->reg);
        rmq_free(rp->views[i]->name);
        rmq_free(rp->views[i]);
    }
    rmq_free(rp->views);
    hashmap_free(&rp->conns, free_conn);
    hashmap_free(&rp->clients, NULL);
    hashmap_free(&rp->gviews, free_gview);
    hashmap_free(&rp->notified, NULL);
    rp_obs_free(rp);
    rmq_free(rp->heap);
    buf_free(&rp->out);
    buf_free(&rp->explain);
    rmq_free(rp);
}

struct buf *replay_output(struct replay *rp)
{
    return &rp->out;
}

const struct replay_stats *replay_get_stats(const struct replay *rp)
{
    return &rp->st;
}
