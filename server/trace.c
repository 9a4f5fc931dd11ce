/* trace.c — placeholder recorder until the trace module lands: recording is
 * refused so nobody mistakes it for working. */
#include "trace.h"

#include "err.h"

#include <stdio.h>

int trace_recorder_open(const char *path, int64_t now_ms, struct trace_recorder **out, char *err,
                        size_t errlen)
{
    (void)path;
    (void)now_ms;
    *out = NULL;
    snprintf(err, errlen, "trace recording is not built yet");
    return RMQ_ESTATE;
}

void trace_recorder_close(struct trace_recorder *rec)
{
    (void)rec;
}
void trace_recorder_flush(struct trace_recorder *rec)
{
    (void)rec;
}
void trace_record_route(struct trace_recorder *rec, int64_t now_ms, const char *topic, const struct topic *tp)
{
    (void)rec;
    (void)now_ms;
    (void)topic;
    (void)tp;
}
void trace_record_connect(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer)
{
    (void)rec;
    (void)now_ms;
    (void)conn_id;
    (void)peer;
}
void trace_record_request(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                          const struct rmq_cmd *cmd)
{
    (void)rec;
    (void)now_ms;
    (void)conn_id;
    (void)peer;
    (void)cmd;
}
void trace_record_notify(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *group)
{
    (void)rec;
    (void)now_ms;
    (void)conn_id;
    (void)group;
}
void trace_record_close(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                        const char *reason)
{
    (void)rec;
    (void)now_ms;
    (void)conn_id;
    (void)peer;
    (void)reason;
}
