/* trace_recorder.h — recording what the daemon sees as a heartbeat trace (JSON Lines,
 * docs/trace-format.md), for offline and live replay.
 *
 * The loop thread calls these as things happen; the recorder buffers lines
 * in memory and writes them in trace_recorder_flush (called from a 1 s timer
 * and at shutdown), so the hot path never waits on the disk. Every function
 * accepts rec == NULL (recording off) and does nothing then. Failures to
 * write are logged once and recording stops; the daemon keeps serving.
 * Loop thread only.
 */
#ifndef RMQ_TRACE_H
#define RMQ_TRACE_H

#include "remoting_cmd.h"
#include "topics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace_recorder;
struct rmq_mq;

/* Opens (appending) path and writes the header line (format version, the
 * start time). The file never grows past max_bytes: the line that would
 * pass it stops recording (logged once), so a trace ends on a whole line.
 * New *out owned by the caller (trace_recorder_close). */
int trace_recorder_open(const char *path, int64_t now_ms, int64_t max_bytes, struct trace_recorder **out,
                        char *err, size_t errlen);
/* Whether recording stopped (a write failed or the bound was reached). */
bool trace_recorder_stopped(const struct trace_recorder *rec);
/* Flushes and closes. Accepts NULL. */
void trace_recorder_close(struct trace_recorder *rec);
/* Writes buffered lines to the file. */
void trace_recorder_flush(struct trace_recorder *rec);

/* A topic's route as clients see it (at start for every topic, then on
 * every change); tp NULL = the topic was deleted. */
void trace_record_route(struct trace_recorder *rec, int64_t now_ms, const char *topic,
                        const struct topic *tp);
void trace_record_connect(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer);
/* A request the membership logic consumes (HEART_BEAT, UNREGISTER_CLIENT),
 * or a client's rebalance round (GET_CONSUMER_LIST_BY_GROUP: replay infers
 * from these whether it acts on NOTIFY and its timer period). */
void trace_record_request(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                          const struct rmq_cmd *cmd);
/* A NOTIFY_CONSUMER_IDS_CHANGED sent to conn_id for group. */
void trace_record_notify(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *group);
void trace_record_close(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                        const char *reason);
/* What client_id (on conn_id) answered to a GET_CONSUMER_RUNNING_INFO for
 * group asked at asked_ms (--record-holdings-ms): with reason NULL it held
 * mqs[0..n); else it gave no holdings and reason says why ("no answer", ...). */
void trace_record_holdings(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                           const char *group, const char *client_id, int64_t asked_ms,
                           const struct rmq_mq *mqs, size_t n, const char *reason);

#endif
