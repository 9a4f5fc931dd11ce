/* clocks.h — the process's clocks in the units the code counts in. The
 * conversions from struct timespec live only here, so every caller rounds
 * the same way (down, to whole ms or us). Any thread.
 */
#ifndef RMQ_CLOCKS_H
#define RMQ_CLOCKS_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ms: for intervals, deadlines and timers. */
int64_t rmq_mono_ms(void);
/* CLOCK_MONOTONIC in us: for latency histograms. */
uint64_t rmq_mono_us(void);
/* CLOCK_REALTIME in ms since the epoch: for what is shown or stored as a
 * date. 0 when the clock cannot be read. */
int64_t rmq_wall_ms(void);
/* The time ms from now on clock clk, normalised (tv_nsec below 1e9): the
 * absolute deadline pthread_cond_timedwait wants (clk must be the clock the
 * condition variable was set up with). */
struct timespec rmq_clock_after_ms(clockid_t clk, int64_t ms);

#endif
