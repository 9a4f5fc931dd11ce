/* metrics.c — the loop's series of /metrics (see metrics.h): reads struct
 * broker, so loop thread only. */
#include "metrics.h"

#include "admin_offsets.h"
#include "array.h"
#include "broker.h"
#include "conn.h"
#include "err.h"
#include "mem.h"
#include "request_codes.h"
#include "store.h"
#include "store_sync.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest /metrics text the loop renders (a runaway group count must not
 * exhaust memory). */
#define METRICS_MAX_BYTES (64u * 1024u * 1024u)

/* Counter or gauge with no labels: header and one sample. */
static int simple(struct buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
    int rc = metrics_header(b, name, type, help);
    return rc ? rc : metrics_sample(b, name, "", v);
}

/* rmqcoord_group_members{group="G"} for every live group, sorted by name. */
static int group_members(struct buf *b, const struct registry *r)
{
    int rc = metrics_header(b, "rmqcoord_group_members", "gauge",
                            "Live members (channels) of each consumer group");
    const char **names = hashmap_sorted_keys(&r->groups);
    if (!names)
        return RMQ_ENOMEM;
    size_t n = r->groups.count;
    struct buf lab;
    buf_init(&lab, 0);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct reg_group *g = registry_group(r, names[i]);
        assert(g != NULL); /* the names are the live groups' own keys */
        buf_reset(&lab);
        rc = buf_append_str(&lab, "group=\"");
        if (rc == 0)
            rc = metrics_label_value(&lab, names[i]);
        if (rc == 0)
            rc = buf_append_str(&lab, "\"");
        if (rc == 0)
            rc = buf_terminate(&lab);
        if (rc == 0)
            rc = metrics_sample(b, "rmqcoord_group_members", (const char *)buf_head(&lab),
                                g ? g->g.nmembers : 0);
    }
    buf_free(&lab);
    rmq_free(names);
    return rc;
}

/* Distinct client ids over the live channels. */
static uint64_t count_clients(const struct registry *r)
{
    const char **ids = rmq_malloc((r->channels.count ? r->channels.count : 1) * sizeof *ids);
    if (!ids)
        return 0;
    size_t n = 0, bk;
    for (struct hashmap_entry *e = hashmap_first(&r->channels, &bk); e;
         e = hashmap_next(&r->channels, e, &bk)) {
        const struct reg_channel *ch = e->val;
        if (ch->client_id && ch->conn) {
            assert(n < r->channels.count);
            ids[n++] = ch->client_id;
        }
    }
    qsort(ids, n, sizeof *ids, rmq_strp_cmp);
    uint64_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        distinct += i == 0 || strcmp(ids[i], ids[i - 1]) != 0;
    rmq_free(ids);
    return distinct;
}

static int request_series(struct buf *b, const struct server_stats *st)
{
    int rc = metrics_header(b, "rmqcoord_request_duration_seconds", "histogram",
                            "Remoting request handling time by request code (decode to reply queued)");
    for (size_t i = 0; i < st->ncodes && rc == 0; i++) {
        char labels[160];
        snprintf(labels, sizeof labels, "code=\"%d\",request=\"%s\"", (int)st->codes[i].code,
                 rmq_request_name(st->codes[i].code));
        rc = metrics_histogram(b, "rmqcoord_request_duration_seconds", labels, &st->codes[i].latency);
    }
    return rc;
}

static int change_series(struct buf *b, const struct server_stats *st)
{
    int rc = metrics_header(b, "rmqcoord_membership_changes_total", "counter",
                            "Membership changes by kind (join, close, unregister, expire, subscription)");
    for (int k = 0; k < STATS_CHANGE_KINDS && rc == 0; k++) {
        char labels[64];
        snprintf(labels, sizeof labels, "kind=\"%s\"", stats_change_kind_name(k));
        rc = metrics_sample(b, "rmqcoord_membership_changes_total", labels, st->changes_by_kind[k]);
    }
    return rc;
}

/* --record-holdings-ms: the recording rounds' asks and what came of them. */
static int holdings_series(struct buf *b, const struct server_stats *st)
{
    int rc = simple(b, "rmqcoord_holdings_asks_total", "counter",
                    "GET_CONSUMER_RUNNING_INFO asks sent to record holdings (--record-holdings-ms)",
                    st->holdings_asks);
    if (rc == 0)
        rc = simple(b, "rmqcoord_holdings_answers_total", "counter", "Holdings asks answered with queues",
                    st->holdings_answers);
    if (rc == 0)
        rc = simple(b, "rmqcoord_holdings_unanswered_total", "counter",
                    "Holdings asks without usable answer (timeout, closed, error code, unreadable body)",
                    st->holdings_unanswered);
    if (rc == 0)
        rc = simple(b, "rmqcoord_holdings_rounds_skipped_total", "counter",
                    "Holdings rounds of a group skipped because its previous round was still waiting",
                    st->holdings_rounds_skipped);
    if (rc == 0)
        rc = simple(b, "rmqcoord_holdings_too_big_total", "counter",
                    "GET_CONSUMER_RUNNING_INFO answers refused unread: over 4 MiB or 16384 queues",
                    st->holdings_too_big);
    if (rc == 0)
        rc = simple(
            b, "rmqcoord_holdings_checks_refused_total", "counter",
            "HTTP running-info/consistency/converged/allocation checks refused (429): too many waiting",
            st->holdings_checks_refused);
    return rc;
}

json_t *metrics_loop_snapshot(struct broker *s, int *status)
{
    const struct server_stats *st = &s->stats;
    struct buf b;
    /* Grows with the groups (one series each): a bound against runaway,
     * not a size guess (8 KB used to fail /metrics past ~100 groups). */
    buf_init(&b, METRICS_MAX_BYTES);
    int64_t up = broker_now_ms(s) - s->started_ms;
    int rc = simple(&b, "rmqcoord_uptime_seconds", "gauge", "Seconds since the daemon started",
                    up > 0 ? (uint64_t)up / 1000 : 0);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_connections", "gauge", "Open remoting connections",
                    conn_set_count(s->conns));
    if (rc == 0)
        rc = simple(&b, "rmqcoord_connections_accepted_total", "counter", "Remoting connections accepted",
                    st->connections_accepted);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_connections_refused_total", "counter",
                    "Remoting connections closed at accept: --max-connections reached",
                    st->connections_refused);
    const struct conn_budget_stats *bud = conn_set_budget(s->conns);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_buffered_output_bytes", "gauge",
                    "Bytes queued to remoting connections (budget --max-buffered-output)", bud->output_bytes);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_buffered_input_bytes", "gauge",
                    "Bytes of partial frames held (budget --max-buffered-input)", bud->input_bytes);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_output_budget_closes_total", "counter",
                    "Connections dropped because the output budget was exhausted", bud->output_closes);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_input_budget_closes_total", "counter",
                    "Connections dropped because the input budget was exhausted", bud->input_closes);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_requests_throttled_total", "counter",
                    "Requests answered SYSTEM_BUSY over --max-requests-per-sec", st->requests_throttled);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_requests_denied_total", "counter", "Requests refused by the ACL (--acl)",
                    st->requests_denied);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_limit_hits_total", "counter",
                    "Requests refused at a configured limit (--max-heartbeat-bytes, --max-topics, ...)",
                    st->limit_hits);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_messages_retired_total", "counter",
                    "Stored messages removed by retention (--max-queue-messages, --max-message-bytes)",
                    st->messages_retired);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_accept_failures_total", "counter",
                    "accept() failures for lack of descriptors or memory (accepting pauses 100 ms)",
                    st->accept_failures);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_clients", "gauge", "Distinct client ids over the live channels",
                    count_clients(&s->reg));
    if (rc == 0)
        rc = simple(&b, "rmqcoord_groups", "gauge", "Consumer groups with at least one live member",
                    s->reg.groups.count);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_groups_known", "gauge", "Consumer group names ever seen",
                    s->reg.known.count);
    if (rc == 0)
        rc = group_members(&b, &s->reg);
    if (rc == 0)
        rc = admin_offsets_metrics(&b, s);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_topics", "gauge", "Topics with a route", topics_count(&s->topics));
    if (rc == 0)
        rc = simple(&b, "rmqcoord_requests_total", "counter", "Remoting requests received", st->requests);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_heartbeats_total", "counter", "HEART_BEAT requests received",
                    st->heartbeats);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_notifications_sent_total", "counter",
                    "NOTIFY_CONSUMER_IDS_CHANGED frames sent", st->notifications_sent);
    if (rc == 0)
        rc = change_series(&b, st);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_expirations_total", "counter", "Members removed for missing heartbeats",
                    st->expirations);
    if (rc == 0)
        rc = holdings_series(&b, st);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_bad_frames_total", "counter", "Connections closed for malformed frames",
                    conn_set_bad_frames(s->conns));
    if (rc == 0)
        rc = request_series(&b, st);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_request_codes_overflow_total", "counter",
                    "Requests whose code found no histogram slot", st->codes_overflow);
    if (rc == 0)
        rc = metrics_header(&b, "rmqcoord_store_commit_duration_seconds", "histogram",
                            "SQLite batch commit time (one commit per loop iteration with writes)");
    if (rc == 0)
        rc = metrics_histogram(&b, "rmqcoord_store_commit_duration_seconds", "", &st->commit);
    if (rc == 0)
        rc = simple(&b, "rmqcoord_store_commit_failures_total", "counter", "Failed store commits",
                    st->commit_failures);
    if (rc == 0)
        rc = metrics_header(&b, "rmqcoord_notify_fanout_duration_seconds", "histogram",
                            "Loop iterations that sent NOTIFYs: first queued to last written");
    if (rc == 0)
        rc = metrics_histogram(&b, "rmqcoord_notify_fanout_duration_seconds", "", &st->fanout);
    if (rc == 0)
        rc = metrics_header(&b, "rmqcoord_expiry_scan_duration_seconds", "histogram",
                            "One expiry scan (idle connections, members past the channel expiry)");
    if (rc == 0)
        rc = metrics_histogram(&b, "rmqcoord_expiry_scan_duration_seconds", "", &st->expiry_scan);
    struct store_syncer_stats sync;
    if (rc == 0 && s->store && store_sync_stats(s->store, &sync)) {
        rc = simple(&b, "rmqcoord_store_checkpoints_total", "counter",
                    "Background checkpoints (each fsyncs what the loop committed lazily)", sync.checkpoints);
        if (rc == 0)
            rc = simple(&b, "rmqcoord_store_checkpoint_failures_total", "counter",
                        "Background checkpoints that failed", sync.failures);
        if (rc == 0)
            rc = metrics_header(&b, "rmqcoord_store_checkpoint_max_seconds", "gauge",
                                "Longest background checkpoint so far");
        if (rc == 0)
            rc = buf_appendf(&b, "rmqcoord_store_checkpoint_max_seconds %.6f\n", (double)sync.max_us / 1e6);
    }
    /* Label values are made valid UTF-8 above, but skip jansson's check: the
     * HTTP side reads the bytes back, it never dumps this string as JSON. */
    json_t *out =
        rc == 0 ? json_pack("{s:o}", "text", json_stringn_nocheck((const char *)buf_head(&b), buf_live(&b)))
                : NULL;
    buf_free(&b);
    *status = 200;
    return out;
}
