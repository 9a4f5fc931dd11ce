/* replay_report.h — the report at the end of a replay: clients,
 * intervals, the --explain history, totals (replay_report.c). */
#ifndef RMQ_REPLAY_REPORT_H
#define RMQ_REPLAY_REPORT_H

struct replay;

/* Writes the report into rp->out. 0 or RMQ_ENOMEM. */
int rp_report(struct replay *rp);

#endif
