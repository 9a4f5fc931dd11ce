/* loop.h — a small epoll reactor: fd events, timers, a before-sleep hook.
 *
 * Knows nothing of RocketMQ. One thread runs loop_run and every callback
 * runs on it. An fd removed with loop_del_fd gets no further callbacks, even
 * for events already fetched in the current batch. Time is CLOCK_MONOTONIC in
 * ms, sampled once per iteration (loop_now_ms).
 */
#ifndef RMQ_LOOP_H
#define RMQ_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#define LOOP_READ 0x1u
#define LOOP_WRITE 0x4u /* EPOLLOUT */
#define LOOP_ERROR 0x8u /* EPOLLERR / EPOLLHUP, always reported */

struct loop;
typedef void (*loop_fd_cb)(struct loop *l, int fd, uint32_t events, void *ctx);
typedef void (*loop_timer_cb)(struct loop *l, int timer_id, void *ctx);
typedef void (*loop_hook_cb)(struct loop *l, void *ctx);

/* New loop, owned by the caller (loop_free). 0 or -errno. */
int loop_new(struct loop **out);
void loop_free(struct loop *l);

/* events: LOOP_READ | LOOP_WRITE. 0 or -errno. */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *ctx);
int loop_mod_fd(struct loop *l, int fd, uint32_t events);
/* Stops watching fd (does not close it). */
void loop_del_fd(struct loop *l, int fd);
/* Bulk fds handled per iteration: how long an fd of the main set can wait
 * behind connections that pipeline (8 keeps a query's p99 under 1 ms while
 * 1,000 connections saturate the daemon with heartbeats). */
#define LOOP_BULK_SLICE 8
/* Moves fd to the bulk set or back. Each iteration handles every ready fd
 * of the main set but at most LOOP_BULK_SLICE of the bulk set, so fds that
 * send one request at a time are not kept waiting behind fds that pipeline
 * many. 0 or -errno. */
int loop_set_bulk(struct loop *l, int fd, bool bulk);

/* A timer first firing at now + delay_ms, then every period_ms (0 = once).
 * *id_out gets its id. 0 or RMQ_ENOMEM. */
int loop_add_timer(struct loop *l, int64_t delay_ms, int64_t period_ms, loop_timer_cb cb, void *ctx,
                   int *id_out);
/* Moves a timer's next firing to the absolute monotonic time when_ms. */
void loop_timer_set(struct loop *l, int id, int64_t when_ms);
void loop_timer_cancel(struct loop *l, int id);

/* Called once per iteration after events and timers, before waiting. */
void loop_set_before_sleep(struct loop *l, loop_hook_cb cb, void *ctx);

/* Runs until loop_stop. 0, or -errno if epoll_wait failed. */
int loop_run(struct loop *l);
/* Safe from a callback; with loop_wake also from a signal handler context. */
void loop_stop(struct loop *l);
int64_t loop_now_ms(const struct loop *l);
/* Whether the last iteration fetched a full batch of ready fds (or a full
 * bulk slice): more input is probably waiting. A before-sleep hook may
 * postpone work that a later iteration would make redundant. */
bool loop_backlogged(const struct loop *l);

#endif
