/* dialect.h — the broker dialect: every place where rmqcoord's own answer
 * differs from a RocketMQ broker's (docs/protocol.md §12, the README table
 * "Where rmqcoord differs"), as one named behaviour per field.
 *
 * `--compat MODE` picks a row of the table in dialect.c; the flags that
 * name a behaviour of their own (--notify-on-expiry,
 * --notify-on-noop-unregister) then override their field. The daemon
 * derives its dialect once, in config_parse (struct config.dialect), and
 * the request handlers read the fields, never the mode; `rmqcoord replay
 * --compat MODE` fills the same struct, and both hand it to notify_policy,
 * so a replay predicts the daemon's NOTIFYs under every mode. Pure; any
 * thread; the struct is a plain value (its strings are static).
 */
#ifndef RMQ_DIALECT_H
#define RMQ_DIALECT_H

#include <stdbool.h>
#include <stdint.h>

/* The --compat values. */
enum dialect_mode {
    DIALECT_RMQCOORD = 0, /* rmqcoord's own answers (the default) */
    DIALECT_BROKER_49,    /* a RocketMQ 4.9 broker and name server */
    DIALECT_BROKER_5,     /* a RocketMQ 5.x broker and name server ("broker" too) */
    DIALECT_NMODES
};

struct broker_dialect {
    const char *name; /* the mode's --compat value: "rmqcoord", "broker-4.9" or "broker-5" */

    /* NOTIFY_CONSUMER_IDS_CHANGED (read by notify_policy only). */
    bool notify_broadcast;       /* broadcasting groups are notified too (4.9; §4.4) */
    bool notify_on_expiry;       /* an expiry notifies (--notify-on-expiry; the broker: off; §4.5) */
    bool notify_noop_unregister; /* an UNREGISTER_CLIENT notifies a live group even when it removed
                                    nothing (--notify-on-noop-unregister; the broker: on; §4.6) */

    /* Replies. */
    bool reply_header_json; /* every reply header is JSON, whatever the request's (5.x; §1.4) */
    bool heartbeat_v2;      /* heartbeat v2 is known: the reply carries IS_SUPPORT_HEART_BEAT_V2 and
                               IS_SUB_CHANGE, a heartbeat's fingerprint and withoutSub are honoured
                               (all but 4.9; §3.2) */
    bool heartbeat_sub_change_without_data; /* IS_SUB_CHANGE=true to a heartbeat that leaves the channel
                                               in no group (5.x; §3.2) */
    bool query_assignment;                  /* QUERY_ASSIGNMENT (400) allocates on the server (5.x; §2.1) */
    bool pull_sys_flags;                    /* pull replies carry groupSysFlag, topicSysFlag (5.x; §6) */
    int32_t pull_bad_queue_code;            /* --pull-checks: the answer to a queueId the topic lacks:
                                               SYSTEM_ERROR (1), 5.x INVALID_PARAMETER (29; §6.2) */
    bool route_tbw102;           /* TBW102 is registered on its first route query (broker; §8.1) */
    bool route_null_topic;       /* a route query without topic: TOPIC_NOT_EXIST "...topic: null"
                                    (broker; rmqcoord names the missing field; §2.1) */
    bool route_acting_master;    /* BrokerData carries "enableActingMaster":false (5.x; §8) */
    bool unlock_lenient;         /* UNLOCK_BATCH_MQ with a JSON body lacking clientId or mqSet:
                                    SUCCESS, nothing unlocked (broker; §2.1) */
    bool query_offset_set_zero;  /* QUERY_CONSUMER_OFFSET honours setZeroIfNotFound=false: nothing
                                    committed is QUERY_NOT_FOUND (rmqcoord; 4.9 answers 0; §5.1) */
    bool query_offset_not_found; /* nothing committed is always QUERY_NOT_FOUND (5.x; §5.1) */
    const char *query_offset_not_found_remark; /* the remark of that QUERY_NOT_FOUND */
    bool offset_commit_needs_group;            /* UPDATE_CONSUMER_OFFSET of a group that never heartbeated:
                                                  SUBSCRIPTION_GROUP_NOT_EXIST (5.x; §5.2) */
    bool namesrv_silent_on_broker_code;        /* --role namesrv: a code it does not serve gets no reply
                                                  (4.9; §2.3) */
};

/* *d = mode's row of the table, the two notify flags at the mode's
 * default (the caller then applies the flags given). mode < DIALECT_NMODES. */
void dialect_init(struct broker_dialect *d, enum dialect_mode mode);

/* Parses a --compat value (rmqcoord, broker, broker-5, broker-4.9): 0, or
 * RMQ_EINVAL for anything else. */
int dialect_mode_parse(const char *s, enum dialect_mode *out);

/* The values dialect_mode_parse takes, for error messages. */
#define DIALECT_MODE_VALUES "rmqcoord, broker, broker-5 or broker-4.9"

#endif
