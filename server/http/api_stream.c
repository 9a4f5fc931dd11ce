/* api_stream.c — GET /api/events/stream: membership events as Server-Sent
 * Events.
 *
 * Each stream is an MHD response from a content-reader callback, which MHD
 * calls on the HTTP thread whenever the socket can take more. The reader
 * polls the store (the HTTP thread's read-only connection) for events after
 * the last one sent; with nothing to send it parks the connection
 * (the server's api_host stream_park suspends it) and returns 0, and http_admin.c's
 * ticker resumes every parked stream each API_STREAM_POLL_MS, so an idle
 * stream costs one small indexed query per tick and no busy loop (MHD
 * would spin on a reader returning 0 without suspending). A comment line
 * goes out every heartbeatMs (default 15 s) so proxies and clients see the
 * connection alive. At most API_STREAM_MAX streams are open (503 beyond).
 *
 * Wire format per event: "id: <event id>\nevent: membership\ndata: <json>\n\n"
 * with the same object /api/events returns; a client reconnecting with
 * Last-Event-ID resumes after that event.
 */
#include "api_stream.h"
#include "api_events.h"
#include "api_params.h"
#include "api_routes.h"
#include "http_reply.h"

#include "buf.h"
#include "clocks.h"
#include "err.h"
#include "mem.h"
#include "store_read.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define STREAM_HEARTBEAT_MS_DEFAULT 15000
#define STREAM_BATCH 100

struct api_stream {
    const struct api_host *host;  /* static table of the server */
    struct http_admin *h;         /* borrowed; outlives every stream */
    struct MHD_Connection *conn;  /* borrowed */
    struct store_reader **reader; /* the HTTP thread's reader */
    char *group;                  /* owned filter, NULL = every group */
    int64_t last_id;              /* last event sent */
    int64_t last_poll_ms, last_write_ms, heartbeat_ms;
    struct buf out; /* formatted, not yet handed to MHD */
    bool failed;    /* the store read failed: end after flushing */
};

/* Appends every event after last_id (one batch) to st->out. */
static void poll_store(struct api_stream *st)
{
    assert(*st->reader && buf_live(&st->out) == 0); /* the previous batch went out first */
    char err[256] = "";
    json_t *page = store_reader_events(*st->reader, st->group, st->last_id, STREAM_BATCH, err, sizeof err);
    if (!page) {
        buf_appendf(
            &st->out,
            "event: error\ndata: {\"error\":\"store error\",\"detail\":\"reading events failed\"}\n\n");
        st->failed = true;
        return;
    }
    json_t *events = json_object_get(page, "events");
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        char *text = json_dumps(ev, JSON_COMPACT);
        if (!text)
            break;
        int64_t id = json_integer_value(json_object_get(ev, "id"));
        int rc = buf_appendf(&st->out, "id: %" PRId64 "\nevent: membership\ndata: %s\n\n", id, text);
        json_free_t jfree;
        json_get_alloc_funcs(NULL, &jfree);
        jfree(text);
        if (rc != 0)
            break;
        assert(id > st->last_id); /* the store pages events after last_id, in id order */
        st->last_id = id;
    }
    json_decref(page);
}

/* Whether the client has gone: MHD notices a closed socket only when a
 * write fails, and an idle stream writes once per heartbeat, so peek at the
 * socket before parking. Bytes the client sends (it should send none) are
 * left for MHD. */
static bool peer_gone(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    char c;
    ssize_t n = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* MHD_ContentReaderCallback. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct api_stream *st = cls;
    if (st->host->stopping(st->h))
        return MHD_CONTENT_READER_END_OF_STREAM;
    int64_t now = rmq_mono_ms();
    if (buf_live(&st->out) == 0 && !st->failed && now - st->last_poll_ms >= API_STREAM_POLL_MS / 2) {
        st->last_poll_ms = now;
        poll_store(st);
    }
    if (buf_live(&st->out) == 0 && st->failed)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (buf_live(&st->out) == 0 && now - st->last_write_ms >= st->heartbeat_ms)
        buf_appendf(&st->out, ": keepalive\n\n");
    size_t n = buf_live(&st->out);
    if (n == 0) {
        if (peer_gone(st->conn))
            return MHD_CONTENT_READER_END_WITH_ERROR; /* frees the slot now, not at the next heartbeat */
        st->host->stream_park(st->h, st->conn, st);
        return 0; /* resumed by the ticker: MHD calls us again */
    }
    if (n > max)
        n = max;
    assert(n > 0 && n <= max);
    memcpy(buf, buf_head(&st->out), n);
    buf_consume(&st->out, n);
    st->last_write_ms = now;
    return (ssize_t)n;
}

/* MHD_ContentReaderFreeCallback: the stream's connection is done. */
static void stream_free(void *cls)
{
    struct api_stream *st = cls;
    st->host->stream_release(st->h);
    buf_free(&st->out);
    rmq_free(st->group);
    rmq_free(st);
}

/* Where a new stream starts: after Last-Event-ID or ?since=, else after the
 * newest event (only changes from now on). 0, or -1 after a 400/503. */
static int start_position(struct MHD_Connection *conn, const json_t *query, const char *last_event_id,
                          struct store_reader *reader, int64_t *out, int *r)
{
    const char *since = json_string_value(json_object_get(query, "since"));
    const char *from = last_event_id && *last_event_id ? last_event_id : since;
    if (from) {
        if (api_routes_parse_uint(from, INT64_MAX, out) < 0) {
            *r = http_admin_reply_error(conn, 400, "bad parameter",
                                        "since (or Last-Event-ID) must be a non-negative integer event id");
            return -1;
        }
        return 0;
    }
    char err[256] = "";
    if (store_reader_last_event_id(reader, out, err, sizeof err) != 0) {
        *r = http_admin_reply_error(conn, 500, "store error", "reading the event store failed: %s", err);
        return -1;
    }
    return 0;
}

/* See api_stream.h. */
int api_stream_start(const struct api_host *host, struct http_admin *h, struct MHD_Connection *conn,
                     const json_t *query, const char *last_event_id, const char *store_path,
                     struct store_reader **reader)
{
    const char *group = json_string_value(json_object_get(query, "group"));
    const char *hb = json_string_value(json_object_get(query, "heartbeatMs"));
    int64_t heartbeat = STREAM_HEARTBEAT_MS_DEFAULT, start = 0;
    int r = 0;
    if (group && !api_name_lookup_valid(group))
        return http_admin_reply_error(conn, 400, "bad parameter", "group must be 1 to %u bytes long",
                                      HTTP_ADMIN_NAME_MAX);
    if (hb && (api_routes_parse_uint(hb, 60000, &heartbeat) < 0 || heartbeat < 100))
        return http_admin_reply_error(conn, 400, "bad parameter",
                                      "heartbeatMs must be an integer from 100 to 60000");
    if (api_store_reader(conn, store_path, reader, &r) < 0 ||
        start_position(conn, query, last_event_id, *reader, &start, &r) < 0)
        return r;
    if (!host->stream_acquire(h))
        return http_admin_reply_error(conn, 503, "too many streams",
                                      "at most %d event streams may be open at once", API_STREAM_MAX);
    struct api_stream *st = rmq_calloc(1, sizeof *st);
    if (!st || (group && !(st->group = rmq_strdup(group)))) {
        rmq_free(st);
        host->stream_release(h);
        return http_admin_reply_json(conn, 500, NULL);
    }
    st->host = host;
    st->h = h;
    st->conn = conn;
    st->reader = reader;
    st->last_id = start;
    st->heartbeat_ms = heartbeat;
    st->last_write_ms = st->last_poll_ms = rmq_mono_ms();
    assert(*reader && st->heartbeat_ms >= 100); /* opened and checked above */
    buf_init(&st->out, 0);
    /* Sent at once so the client sees the headers and knows the position. */
    buf_appendf(&st->out, "retry: 2000\n: stream open after event %" PRId64 "\n\n", start);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, stream_read, st, stream_free);
    if (!resp) {
        stream_free(st);
        return http_admin_reply_json(conn, 500, NULL);
    }
    enum MHD_Result res = MHD_NO;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream") == MHD_YES &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache") == MHD_YES)
        res = MHD_queue_response(conn, 200, resp);
    MHD_destroy_response(resp); /* frees st through stream_free if never queued */
    return res;
}
