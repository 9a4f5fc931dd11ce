/* api_cluster.h — the worker half of GET /api/cluster?group=G on a name
 * server: each live broker's member list, gathered on a small pool of
 * worker threads (never the HTTP or loop thread). */
#ifndef RMQ_API_CLUSTER_H
#define RMQ_API_CLUSTER_H

#include <jansson.h>
#include <stdbool.h>

/* Views gathered at once; one more is answered 503 at once. */
#define API_CLUSTER_WORKERS 4
/* One broker's fetch (connect, send, whole reply), and a whole view. */
#define API_CLUSTER_FETCH_MS 1000
#define API_CLUSTER_VIEW_MS 3000

/* Adds to a namesrv's /api/cluster?group=G reply each live broker's member
 * list (HTTP GET of its /api/groups/G, loopback only, API_CLUSTER_FETCH_MS
 * each and API_CLUSTER_VIEW_MS in all) and the differences. cancel_fd: see
 * http_fetch_limits (-1: none). Takes reply; returns the (same or new)
 * reply or NULL. Any thread. */
json_t *api_cluster_augment_until(json_t *reply, int cancel_fd);

/* The worker threads. Any thread may call these. */
struct api_cluster_pool;
typedef void api_cluster_job(void *arg, int cancel_fd);
/* A new pool (no thread yet; each view starts one), owned by the caller
 * (api_cluster_pool_free); NULL when out of memory. */
struct api_cluster_pool *api_cluster_pool_new(void);
/* Runs job(arg, cancel_fd) on a worker thread. False (job not run) when
 * API_CLUSTER_WORKERS jobs run already, the pool is cancelled or NULL, or
 * no thread could start. */
bool api_cluster_pool_run(struct api_cluster_pool *pool, api_cluster_job *job, void *arg);
/* Makes every fetch of a running job end at once ("cancelled") and refuses
 * new jobs. Idempotent; NULL is a no-op. */
void api_cluster_pool_cancel(struct api_cluster_pool *pool);
/* Cancels, then joins every worker (each ends within a poll once
 * cancelled) and frees pool. NULL is a no-op. */
void api_cluster_pool_free(struct api_cluster_pool *pool);

#endif
