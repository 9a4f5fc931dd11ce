/* trace_recorder.c — the heartbeat-trace recorder (see trace_recorder.h, docs/trace-format.md).
 *
 * Lines are encoded at once (common/trace_fmt) into one in-memory buffer and
 * written by trace_recorder_flush, which the daemon runs from a 1 s timer
 * and at shutdown, so the loop thread never waits on the disk per request.
 * The buffer is bounded: past TRACE_BUFFER_SYNC bytes (64 MiB) a line
 * triggers a synchronous flush from the hot path instead of being dropped,
 * because a trace with holes replays into a different membership history
 * than the daemon had; a slow disk then slows the daemon, which the operator
 * chose by recording. A line that still does not fit (the write failed) is
 * dropped and counted. The first write error is logged, recording stops and
 * the daemon keeps serving. Loop thread only.
 */
#include "trace_recorder.h"

#include "body_json.h"
#include "err.h"
#include "log.h"
#include "mem.h"
#include "trace_fmt.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRACE_BUFFER_SYNC ((size_t)64 << 20)

struct trace_recorder {
    int fd;
    struct buf pending;
    bool failed;      /* a write failed or the file is full: recording has stopped */
    int64_t size;     /* the file's bytes, written and pending */
    int64_t max_size; /* --record-max-bytes */
    uint64_t lines;   /* lines encoded */
    uint64_t dropped; /* lines lost after a failure or an encoding error */
    char path[256];
};

int trace_recorder_open(const char *path, int64_t now_ms, int64_t max_bytes, struct trace_recorder **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    struct trace_recorder *rec = rmq_calloc(1, sizeof *rec);
    if (!rec) {
        snprintf(err, errlen, "%s", rmq_strerror(RMQ_ENOMEM));
        return RMQ_ENOMEM;
    }
    rec->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (rec->fd < 0) {
        int rc = -errno;
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        rmq_free(rec);
        return rc;
    }
    buf_init(&rec->pending, 0);
    snprintf(rec->path, sizeof rec->path, "%s", path);
    struct stat st;
    rec->size = fstat(rec->fd, &st) == 0 ? (int64_t)st.st_size : 0; /* appending */
    rec->max_size = max_bytes;
    /* Appending to an existing trace: the header marks a daemon restart for replay. */
    struct trace_event ev = {.kind = TRACE_HEADER, .ts = now_ms};
    if (trace_encode_event(&ev, &rec->pending) != 0) {
        snprintf(err, errlen, "%s", rmq_strerror(RMQ_ENOMEM));
        trace_recorder_close(rec);
        return RMQ_ENOMEM;
    }
    rec->size += (int64_t)buf_live(&rec->pending);
    *out = rec;
    return RMQ_OK;
}

/* Writes everything pending; on failure logs once and stops recording. */
static void write_pending(struct trace_recorder *rec)
{
    while (!rec->failed && buf_live(&rec->pending) > 0) {
        ssize_t n = write(rec->fd, buf_head(&rec->pending), buf_live(&rec->pending));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            log_error("trace %s: write failed (%s); recording stopped, %llu line(s) recorded", rec->path,
                      n < 0 ? strerror(errno) : "short write", (unsigned long long)rec->lines);
            rec->failed = true;
            break;
        }
        buf_consume(&rec->pending, (size_t)n);
    }
    if (rec->failed) {
        buf_free(&rec->pending);
        buf_init(&rec->pending, 0);
    } else {
        buf_reset(&rec->pending);
    }
}

bool trace_recorder_stopped(const struct trace_recorder *rec)
{
    return rec && rec->failed;
}

void trace_recorder_flush(struct trace_recorder *rec)
{
    assert(!rec || rec->fd >= 0);
    if (rec)
        write_pending(rec);
}

void trace_recorder_close(struct trace_recorder *rec)
{
    if (!rec)
        return;
    write_pending(rec);
    if (rec->dropped)
        log_warn("trace %s: %llu line(s) not recorded", rec->path, (unsigned long long)rec->dropped);
    if (rec->fd >= 0)
        close(rec->fd);
    buf_free(&rec->pending);
    rmq_free(rec);
}

/* Encodes one line into the buffer, flushing synchronously past the bound. */
static void record(struct trace_recorder *rec, const struct trace_event *ev)
{
    if (rec->failed) {
        rec->dropped++;
        return;
    }
    if (buf_live(&rec->pending) >= TRACE_BUFFER_SYNC)
        write_pending(rec);
    size_t before = buf_live(&rec->pending);
    int rc = rec->failed ? RMQ_EIO : trace_encode_event(ev, &rec->pending);
    if (rc == 0 && rec->size + (int64_t)(buf_live(&rec->pending) - before) > rec->max_size) {
        /* The bound: this line does not go in, nor any after it. What is
         * pending is whole lines and is written. */
        (void)buf_undo_on_error(&rec->pending, before, RMQ_E2BIG);
        log_error("trace %s: --record-max-bytes %lld reached; recording stopped after %llu line(s)",
                  rec->path, (long long)rec->max_size, (unsigned long long)rec->lines);
        write_pending(rec);
        rec->failed = true;
        rec->dropped++;
        return;
    }
    if (rc == 0)
        rec->size += (int64_t)(buf_live(&rec->pending) - before);
    assert(rec->failed || rec->size <= rec->max_size);
    assert(rec->size >= (int64_t)buf_live(&rec->pending)); /* pending is part of the file's size */
    if (rc != 0) {
        if (rec->dropped++ == 0 && !rec->failed)
            log_error("trace %s: a %s line was not recorded: %s", rec->path, trace_kind_name(ev->kind),
                      rmq_strerror(rc));
        return;
    }
    rec->lines++;
}

void trace_record_route(struct trace_recorder *rec, int64_t now_ms, const char *topic, const struct topic *tp)
{
    if (!rec)
        return;
    struct trace_broker b[TOPIC_MAX_BROKERS];
    size_t n = tp ? tp->nbrokers : 0;
    if (n > TOPIC_MAX_BROKERS)
        n = TOPIC_MAX_BROKERS;
    for (size_t i = 0; i < n; i++)
        b[i] = (struct trace_broker){tp->brokers[i].broker_name, tp->brokers[i].read_queue_nums,
                                     tp->brokers[i].write_queue_nums, tp->brokers[i].perm};
    struct trace_event ev = {
        .kind = TRACE_ROUTE, .ts = now_ms, .topic = topic, .brokers = b, .nbrokers = n, .deleted = !tp};
    record(rec, &ev);
}

void trace_record_connect(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer)
{
    if (!rec)
        return;
    struct trace_event ev = {.kind = TRACE_CONNECT, .ts = now_ms, .conn = conn_id, .peer = peer};
    record(rec, &ev);
}

void trace_record_request(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                          const struct rmq_cmd *cmd)
{
    if (!rec)
        return;
    /* A request has at most a few extFields; more than fit here are not membership input. */
    struct trace_kv kv[64];
    size_t n = cmd->ext_len < 64 ? cmd->ext_len : 64;
    for (size_t i = 0; i < n; i++)
        kv[i] = (struct trace_kv){cmd->ext[i].key, cmd->ext[i].val};
    struct trace_event ev = {
        .kind = TRACE_REQUEST,
        .ts = now_ms,
        .conn = conn_id,
        .peer = peer,
        .code = cmd->code,
        .language = cmd->language,
        .cmd_version = cmd->version,
        .flag = cmd->flag,
        .ext = kv,
        .next = n,
        .body = cmd->body,
        .body_len = cmd->body_len,
    };
    record(rec, &ev);
}

void trace_record_notify(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *group)
{
    if (!rec)
        return;
    struct trace_event ev = {.kind = TRACE_NOTIFY, .ts = now_ms, .conn = conn_id, .group = group};
    record(rec, &ev);
}

void trace_record_close(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                        const char *reason)
{
    if (!rec)
        return;
    struct trace_event ev = {
        .kind = TRACE_CLOSE, .ts = now_ms, .conn = conn_id, .peer = peer, .reason = reason};
    record(rec, &ev);
}

void trace_record_holdings(struct trace_recorder *rec, int64_t now_ms, uint64_t conn_id, const char *peer,
                           const char *group, const char *client_id, int64_t asked_ms,
                           const struct rmq_mq *mqs, size_t n, const char *reason)
{
    if (!rec)
        return;
    if (!reason && n > TRACE_FMT_MAX_QUEUES)
        reason = "more than 65536 queues held: not recorded"; /* replay could not read the line */
    bool answered = !reason;
    if (!answered || !mqs)
        n = 0;
    struct trace_mq small[64], *q = small;
    if (n > 64 && !(q = rmq_calloc(n, sizeof *q))) {
        rec->dropped++;
        return;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = (struct trace_mq){mqs[i].topic, mqs[i].broker_name, mqs[i].queue_id};
    struct trace_event ev = {.kind = TRACE_HOLDINGS,
                             .ts = now_ms,
                             .conn = conn_id,
                             .peer = peer,
                             .group = group,
                             .client_id = client_id,
                             .asked = asked_ms,
                             .queues = q,
                             .nqueues = n,
                             .answered = answered,
                             .reason = reason};
    record(rec, &ev);
    if (q != small)
        rmq_free(q);
}
