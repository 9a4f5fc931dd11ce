/* replay_feed.h — trace events into the replay engine, in file
 * order, and the end of the run (replay_feed.c). One thread; no I/O. */
#ifndef RMQ_REPLAY_FEED_H
#define RMQ_REPLAY_FEED_H

struct replay;
struct trace_event;

/* One event, in file order. Returns 0, 1 when the event is past --to (the
 * caller may stop reading), or RMQ_ENOMEM. */
int replay_feed(struct replay *rp, const struct trace_event *ev);

/* Runs the model to the end time and writes the report. 0 or RMQ_ENOMEM. */
int replay_finish(struct replay *rp);

#endif
