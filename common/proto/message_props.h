/* message_props.h — a message's properties string (name \x01 value pairs
 * separated by \x02) parsed into a small array, edited and written back; the
 * property names brokers and clients use; and the tags hash a broker keeps
 * per message (docs/protocol.md, "Messages: the stored record and the
 * message id"). Pure; one thread.
 */
#ifndef RMQ_MESSAGE_PROPS_H
#define RMQ_MESSAGE_PROPS_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RMQ_PROP_NAME_SEP '\x01'
#define RMQ_PROP_SEP '\x02'

/* Property names, spelled as RocketMQ 4.9.8 / 5.3.3 spell them. */
#define RMQ_PROP_KEYS "KEYS" /* several keys are separated by one space */
#define RMQ_PROP_TAGS "TAGS"
#define RMQ_PROP_WAIT "WAIT"   /* "true"/"false": wait for the store before answering */
#define RMQ_PROP_DELAY "DELAY" /* delay level, 1-based */
#define RMQ_PROP_RETRY_TOPIC "RETRY_TOPIC"
#define RMQ_PROP_REAL_TOPIC "REAL_TOPIC"
#define RMQ_PROP_REAL_QID "REAL_QID"
#define RMQ_PROP_TRAN_MSG "TRAN_MSG"
#define RMQ_PROP_PGROUP "PGROUP"
#define RMQ_PROP_MIN_OFFSET "MIN_OFFSET"
#define RMQ_PROP_MAX_OFFSET "MAX_OFFSET"
#define RMQ_PROP_BUYER_ID "BUYER_ID"
#define RMQ_PROP_ORIGIN_MESSAGE_ID "ORIGIN_MESSAGE_ID"
#define RMQ_PROP_TRANSFER_FLAG "TRANSFER_FLAG"
#define RMQ_PROP_CORRECTION_FLAG "CORRECTION_FLAG"
#define RMQ_PROP_MQ2_FLAG "MQ2_FLAG"
#define RMQ_PROP_RECONSUME_TIME "RECONSUME_TIME"
#define RMQ_PROP_MSG_REGION "MSG_REGION"
#define RMQ_PROP_TRACE_ON "TRACE_ON"
#define RMQ_PROP_UNIQ_KEY "UNIQ_KEY"
#define RMQ_PROP_MAX_RECONSUME_TIMES "MAX_RECONSUME_TIMES"
#define RMQ_PROP_CONSUME_START_TIME "CONSUME_START_TIME"
#define RMQ_PROP_TRAN_PREPARED_QUEUE_OFFSET "TRAN_PREPARED_QUEUE_OFFSET"
#define RMQ_PROP_TRANSACTION_CHECK_TIMES "TRANSACTION_CHECK_TIMES"
#define RMQ_PROP_CHECK_IMMUNITY_TIME "CHECK_IMMUNITY_TIME_IN_SECONDS"
#define RMQ_PROP_INSTANCE_ID "INSTANCE_ID"
#define RMQ_PROP_CORRELATION_ID "CORRELATION_ID"
#define RMQ_PROP_REPLY_TO_CLIENT "REPLY_TO_CLIENT"
#define RMQ_PROP_TTL "TTL"
#define RMQ_PROP_ARRIVE_TIME "ARRIVE_TIME"
#define RMQ_PROP_PUSH_REPLY_TIME "PUSH_REPLY_TIME"
#define RMQ_PROP_CLUSTER "CLUSTER"
#define RMQ_PROP_MSG_TYPE "MSG_TYPE"
#define RMQ_PROP_INNER_MULTI_DISPATCH "INNER_MULTI_DISPATCH"
#define RMQ_PROP_INNER_MULTI_QUEUE_OFFSET "INNER_MULTI_QUEUE_OFFSET"
/* 5.x only */
#define RMQ_PROP_EXTEND_UNIQ_INFO "EXTEND_UNIQ_INFO"
#define RMQ_PROP_INNER_NUM "INNER_NUM"
#define RMQ_PROP_INNER_BASE "INNER_BASE"
#define RMQ_PROP_TRANSACTION_ID "__transactionId__"
#define RMQ_PROP_SHARDING_KEY "__SHARDINGKEY"
#define RMQ_PROP_TIMER_DELAY_SEC "TIMER_DELAY_SEC"
#define RMQ_PROP_TIMER_DELIVER_MS "TIMER_DELIVER_MS"
#define RMQ_PROP_TIMER_DELAY_MS "TIMER_DELAY_MS"
#define RMQ_PROP_BORN_HOST "__BORNHOST"
#define RMQ_PROP_BORN_TIMESTAMP "BORN_TIMESTAMP"
#define RMQ_PROP_CRC32 "__CRC32#"
#define RMQ_PROP_DLQ_ORIGIN_TOPIC "DLQ_ORIGIN_TOPIC"
#define RMQ_PROP_DLQ_ORIGIN_MESSAGE_ID "DLQ_ORIGIN_MESSAGE_ID"
#define RMQ_PROP_TRACE_CONTEXT "TRACE_CONTEXT"

struct rmq_msg_prop {
    char *name;  /* owned, non-empty, NUL-terminated */
    char *value; /* owned, non-empty, NUL-terminated */
};

/* In first-seen order; names are unique. Zero-initialised is empty. */
struct rmq_msg_props {
    struct rmq_msg_prop *v; /* owned */
    size_t n, cap;
};

/* Parses s[0..n) into *out (zero it first) the way a broker reads a
 * properties string: pieces between \x02 that hold no \x01, or an empty
 * name or value, are skipped; a repeated name keeps its first position and
 * its last value. 0, RMQ_EPROTO (a NUL byte: names and values are C
 * strings here) or RMQ_ENOMEM; on failure *out is empty. */
int rmq_msg_props_parse(const char *s, size_t n, struct rmq_msg_props *out, char *err, size_t errlen);
void rmq_msg_props_clear(struct rmq_msg_props *p);

/* The value of name (borrowed from p), or NULL. */
const char *rmq_msg_props_get(const struct rmq_msg_props *p, const char *name);
/* Sets name to value (copies both). RMQ_EINVAL when either is empty or
 * holds \x01, \x02; RMQ_ENOMEM leaves p as it was. */
int rmq_msg_props_set(struct rmq_msg_props *p, const char *name, const char *value);
/* Removes name; whether it was there. */
bool rmq_msg_props_remove(struct rmq_msg_props *p, const char *name);
/* Appends name \x01 value \x02 per property, in order (nothing when
 * empty): 5.3.3's form; 4.9.8 writes no \x02 after the last pair, and
 * both read either. 0 or the buf error, with out unchanged on error. */
int rmq_msg_props_encode(const struct rmq_msg_props *p, struct buf *out);

/* The value of name in the raw string s[0..n), by the parse rules above
 * (the last occurrence wins): *val and *vlen point into s. Whether found. No
 * allocation. */
bool rmq_msg_props_find(const char *s, size_t n, const char *name, const char **val, size_t *vlen);

/* Java's String.hashCode of the text whose UTF-8 is s[0..n), over its
 * UTF-16 code units (a code point past U+FFFF counts as its surrogate
 * pair). Malformed UTF-8 reads as Java 17's decoder reads it (U+FFFD for
 * each malformed piece, by its rules), so the hash is Java's for any
 * bytes. */
int32_t rmq_java_string_hash(const char *s, size_t n);
/* A broker's tags code: the hash of a TAGS value, 0 for none or "". */
int64_t rmq_msg_tags_code(const char *tags, size_t n);

#endif
