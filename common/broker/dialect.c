/* dialect.c — see dialect.h. The table below is the whole dialect: what
 * tests/conformance/run.sh checks against the real 4.9.7 and 5.3.3 brokers,
 * one field per difference. Pure; any thread. */
#include "dialect.h"

#include "err.h"
#include "request_codes.h"

#include <assert.h>
#include <string.h>

/* PROTOCOL: docs/protocol.md §12, one column per mode. */
static const struct broker_dialect table[DIALECT_NMODES] = {
    [DIALECT_RMQCOORD] =
        {
            .name = "rmqcoord",
            .notify_on_expiry = true,
            .heartbeat_v2 = true,
            .pull_bad_queue_code = RMQ_RESP_SYSTEM_ERROR,
            .query_offset_set_zero = true,
            .query_offset_not_found_remark = "Not found, no offset committed for this queue",
        },
    [DIALECT_BROKER_49] =
        {
            .name = "broker-4.9",
            .notify_broadcast = true,
            .notify_noop_unregister = true,
            .pull_bad_queue_code = RMQ_RESP_SYSTEM_ERROR,
            .route_tbw102 = true,
            .route_null_topic = true,
            .unlock_lenient = true,
            /* 4.9 has no setZeroIfNotFound: it answers 0, and never QUERY_NOT_FOUND. */
            .query_offset_not_found_remark = "Not found, no offset committed for this queue",
            .namesrv_silent_on_broker_code = true,
        },
    [DIALECT_BROKER_5] =
        {
            .name = "broker-5",
            .notify_noop_unregister = true,
            .reply_header_json = true,
            .heartbeat_v2 = true,
            .heartbeat_sub_change_without_data = true,
            .query_assignment = true,
            .pull_sys_flags = true,
            .pull_bad_queue_code = RMQ_RESP_INVALID_PARAMETER,
            .route_tbw102 = true,
            .route_null_topic = true,
            .route_acting_master = true,
            .unlock_lenient = true,
            /* 5.x answers QUERY_NOT_FOUND unless message 0 is in memory, never with an empty queue. */
            .query_offset_not_found = true,
            .query_offset_not_found_remark =
                "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
            .offset_commit_needs_group = true,
        },
};

/* What every row keeps true: the handlers read these without checking. */
static void dialect_sanity(const struct broker_dialect *d)
{
    assert(d->name && d->query_offset_not_found_remark);
    /* QUERY_NOT_FOUND always, or only when asked: never both. */
    assert(!(d->query_offset_not_found && d->query_offset_set_zero));
    assert(d->pull_bad_queue_code == RMQ_RESP_SYSTEM_ERROR ||
           d->pull_bad_queue_code == RMQ_RESP_INVALID_PARAMETER);
    /* IS_SUB_CHANGE is a heartbeat v2 reply field. */
    assert(!d->heartbeat_sub_change_without_data || d->heartbeat_v2);
    (void)d;
}

void dialect_init(struct broker_dialect *d, enum dialect_mode mode)
{
    assert((unsigned)mode < DIALECT_NMODES);
    *d = table[mode];
    dialect_sanity(d);
}

int dialect_mode_parse(const char *s, enum dialect_mode *out)
{
    if (!strcmp(s, "rmqcoord"))
        *out = DIALECT_RMQCOORD;
    else if (!strcmp(s, "broker") || !strcmp(s, "broker-5"))
        *out = DIALECT_BROKER_5;
    else if (!strcmp(s, "broker-4.9"))
        *out = DIALECT_BROKER_49;
    else
        return RMQ_EINVAL;
    return RMQ_OK;
}
