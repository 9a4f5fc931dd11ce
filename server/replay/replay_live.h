/* replay_live.h — live replay: the recorded requests of a trace sent to a
 * running daemon at their recorded (scaled) times, one connection of the
 * remoting client (client/remoting_client.h) per recorded connection. Main
 * thread of `rmqcoord replay --target`. */
#ifndef RMQ_REPLAY_LIVE_H
#define RMQ_REPLAY_LIVE_H

#include <stddef.h>
#include <stdio.h>

/* Replays path against target "host:port", speed times faster than
 * recorded, with at most max_conns connections open at once (the rest are
 * skipped and counted). Prints a summary to summary. 0, or -1 after an
 * error already printed to stderr. */
int replay_live_run(const char *path, const char *target, double speed, size_t max_conns, FILE *summary);

#endif
