/* api_cluster.c — GET /api/cluster?group=G, HTTP side: a name server
 * asks each live broker's admin API for its view of group G and sets the
 * views side by side with what differs (see cluster.h, docs/cluster.md).
 *
 * The fetch is a tiny blocking HTTP/1.0 GET over a socket, bounded to
 * API_CLUSTER_FETCH_MS per broker (the whole exchange: a broker that drips a
 * byte at a time cannot stretch it) and API_CLUSTER_VIEW_MS per view, and
 * refused for non-loopback addresses. It runs on one of at most
 * API_CLUSTER_WORKERS worker threads (the pool below, driven by
 * http_admin.c), never on the HTTP thread that serves the other requests,
 * nor on the loop thread. A server that stops cancels the pool: every fetch
 * ends at its next poll, so shutdown never waits on a broker.
 */
#include "api_cluster.h"

#include "http_fetch.h"

#include "request_codes.h"

#include "clocks.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* GET http://hp/api/groups/<group> (loopback only, API_CLUSTER_FETCH_MS
 * and no later than view_deadline); the parsed JSON body as a new
 * reference, or NULL with *err set. */
static json_t *fetch_group(const char *hp, const char *group, int64_t view_deadline, int cancel_fd,
                           const char **err)
{
    char seg[1024], path[1100];
    http_fetch_pct_encode(group, seg, sizeof seg);
    snprintf(path, sizeof path, "/api/groups/%s", seg);
    int64_t deadline = rmq_mono_ms() + API_CLUSTER_FETCH_MS;
    struct http_fetch_limits lim = {deadline < view_deadline ? deadline : view_deadline, cancel_fd, true};
    int status = 0;
    return http_fetch_json(hp, path, &lim, &status, err);
}

static bool has_id(const json_t *ids, const char *id)
{
    size_t i;
    const json_t *v;
    json_array_foreach(ids, i, v) if (!strcmp(json_string_value(v), id)) return true;
    return false;
}

/* The clientIds of a /api/groups/G reply, sorted as served. */
static json_t *member_ids(const json_t *group)
{
    json_t *ids = json_array();
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(group, "consumers"), i, m)
    {
        const char *id = json_string_value(json_object_get(m, "clientId"));
        if (id && !has_id(ids, id))
            json_array_append_new(ids, json_string(id));
    }
    return ids;
}

json_t *api_cluster_augment_until(json_t *reply, int cancel_fd)
{
    int64_t view_deadline = rmq_mono_ms() + API_CLUSTER_VIEW_MS;
    const char *group = json_string_value(json_object_get(reply, "group"));
    json_t *brokers = json_object_get(reply, "brokers");
    if (!group || !json_is_array(brokers))
        return reply;
    json_t *all = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(brokers, i, b)
    {
        const char *hp = json_string_value(json_object_get(b, "httpAddr"));
        const char *err = "the broker sent no " CLUSTER_EXT_HTTP " address";
        if (hp && rmq_mono_ms() >= view_deadline)
            err = "not asked: the view's time budget was spent on earlier brokers";
        else if (hp)
            err = NULL;
        json_t *g = !err ? fetch_group(hp, group, view_deadline, cancel_fd, &err) : NULL;
        if (!g) {
            json_object_set_new(b, "fetchError", json_string(err));
            continue;
        }
        json_t *ids = member_ids(g);
        json_decref(g);
        size_t k;
        json_t *id;
        json_array_foreach(ids, k, id) if (!has_id(all, json_string_value(id))) json_array_append(all, id);
        json_object_set_new(b, "members", ids);
    }
    /* Differences: on each broker, the members some other broker has and it lacks. */
    bool agree = true;
    json_array_foreach(brokers, i, b)
    {
        const json_t *ids = json_object_get(b, "members");
        if (!ids) {
            agree = false;
            continue;
        }
        json_t *missing = json_array();
        size_t k;
        json_t *id;
        json_array_foreach(all, k, id) if (!has_id(ids, json_string_value(id)))
            json_array_append(missing, id);
        if (json_array_size(missing))
            agree = false;
        json_object_set_new(b, "missing", missing);
    }
    json_object_set_new(reply, "allMembers", all);
    json_object_set_new(reply, "agree", json_boolean(agree));
    return reply;
}

/* ---- the worker pool ---------------------------------------------------- */

enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_DONE /* job over; thread to be joined */ };

struct pool_slot {
    struct api_cluster_pool *pool;
    pthread_t thread;
    enum slot_state state; /* pool->lock */
    api_cluster_job *job;
    void *arg;
};

struct api_cluster_pool {
    pthread_mutex_t lock;
    bool cancelled; /* lock */
    int cancel[2];  /* a pipe: its read end turns readable on cancel */
    struct pool_slot slot[API_CLUSTER_WORKERS];
};

struct api_cluster_pool *api_cluster_pool_new(void)
{
    struct api_cluster_pool *pool = rmq_calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    if (pipe(pool->cancel) != 0) {
        rmq_free(pool);
        return NULL;
    }
    for (int i = 0; i < 2; i++)
        (void)fcntl(pool->cancel[i], F_SETFD, FD_CLOEXEC);
    pthread_mutex_init(&pool->lock, NULL);
    for (size_t i = 0; i < API_CLUSTER_WORKERS; i++)
        pool->slot[i].pool = pool;
    return pool;
}

static void *slot_main(void *arg)
{
    struct pool_slot *s = arg;
    s->job(s->arg, s->pool->cancel[0]);
    pthread_mutex_lock(&s->pool->lock);
    assert(s->state == SLOT_BUSY);
    s->state = SLOT_DONE;
    pthread_mutex_unlock(&s->pool->lock);
    return NULL;
}

bool api_cluster_pool_run(struct api_cluster_pool *pool, api_cluster_job *job, void *arg)
{
    if (!pool)
        return false;
    bool started = false;
    pthread_mutex_lock(&pool->lock);
    struct pool_slot *s = NULL;
    for (size_t i = 0; !pool->cancelled && !s && i < API_CLUSTER_WORKERS; i++)
        if (pool->slot[i].state != SLOT_BUSY)
            s = &pool->slot[i];
    assert(!s || s->state != SLOT_BUSY);
    if (s) {
        /* A done thread has left its job and the lock: the join is at once. */
        if (s->state == SLOT_DONE)
            pthread_join(s->thread, NULL);
        s->job = job;
        s->arg = arg;
        s->state = SLOT_BUSY;
        started = pthread_create(&s->thread, NULL, slot_main, s) == 0;
        if (!started)
            s->state = SLOT_FREE;
    }
    assert(!started || (s && s->state != SLOT_FREE));
    pthread_mutex_unlock(&pool->lock);
    return started;
}

void api_cluster_pool_cancel(struct api_cluster_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    if (!pool->cancelled) {
        pool->cancelled = true;
        /* Never read back: the read end stays readable for every poll. */
        ssize_t k = write(pool->cancel[1], "x", 1);
        (void)k;
    }
    pthread_mutex_unlock(&pool->lock);
}

void api_cluster_pool_free(struct api_cluster_pool *pool)
{
    if (!pool)
        return;
    api_cluster_pool_cancel(pool);
    /* Cancelled: no slot turns busy any more, so the states are stable but
     * for BUSY -> DONE, and both are joined. */
    for (size_t i = 0; i < API_CLUSTER_WORKERS; i++) {
        pthread_mutex_lock(&pool->lock);
        bool joinable = pool->slot[i].state != SLOT_FREE;
        pthread_mutex_unlock(&pool->lock);
        if (joinable)
            pthread_join(pool->slot[i].thread, NULL);
        assert(pool->slot[i].state != SLOT_BUSY); /* a joined worker has finished its job */
    }
    close(pool->cancel[0]);
    close(pool->cancel[1]);
    pthread_mutex_destroy(&pool->lock);
    rmq_free(pool);
}
