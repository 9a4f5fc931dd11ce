/* remoting_cmd.h — one RocketMQ remoting command (request or response).
 *
 * struct rmq_cmd is the decoded form of a frame, independent of the header
 * encoding it came in (JSON type 0 or ROCKETMQ binary type 1). Every pointer
 * inside is owned by the command and released by rmq_cmd_clear. extFields
 * values are always held as strings: decoders convert JSON numbers and
 * booleans to their text form (PROTOCOL (docs/protocol.md §1.2): clients such as ali-ons send
 * non-string values), and encoders always write strings. Pure; one thread.
 */
#ifndef RMQ_REMOTING_CMD_H
#define RMQ_REMOTING_CMD_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RMQ_SERIALIZE_JSON 0
#define RMQ_SERIALIZE_ROCKETMQ 1

#define RMQ_FLAG_RESPONSE 0x1
#define RMQ_FLAG_ONEWAY 0x2

/* Language byte codes (names are the JSON spelling). */
#define RMQ_LANG_JAVA 0
#define RMQ_LANG_OTHER 7

/* The version this daemon reports in its responses (V4_9_8). */
#define RMQ_SERVER_VERSION 409

struct rmq_ext {
    char *key; /* owned */
    char *val; /* owned, never NULL */
};

struct rmq_cmd {
    int32_t code;
    int32_t language; /* byte code, RMQ_LANG_* (unknown names map to OTHER) */
    int32_t version;
    int32_t opaque;
    int32_t flag;
    char *remark;        /* owned, NULL when absent */
    struct rmq_ext *ext; /* owned array */
    size_t ext_len, ext_cap;
    uint8_t serialize_type; /* RMQ_SERIALIZE_* of the frame it came in / goes out in */
    uint8_t *body;          /* owned, NULL when body_len == 0 */
    size_t body_len;
};

void rmq_cmd_init(struct rmq_cmd *c);
/* Frees everything the command owns and re-initialises it. Accepts NULL. */
void rmq_cmd_clear(struct rmq_cmd *c);

static inline bool rmq_cmd_is_response(const struct rmq_cmd *c)
{
    return (c->flag & RMQ_FLAG_RESPONSE) != 0;
}
static inline bool rmq_cmd_is_oneway(const struct rmq_cmd *c)
{
    return (c->flag & RMQ_FLAG_ONEWAY) != 0;
}

/* Sets key=val (both copied); replaces an existing key (last one wins). */
int rmq_cmd_ext_set(struct rmq_cmd *c, const char *key, const char *val);
/* For decoders: appends key=val (both copied) without looking for an earlier
 * entry of the same key, so that decoding stays linear in the number of keys
 * (a 16 MiB frame can carry a million); the decoder calls rmq_cmd_ext_dedupe
 * once after the last one. 0, RMQ_EINVAL or RMQ_ENOMEM (c unchanged). */
int rmq_cmd_ext_append(struct rmq_cmd *c, const char *key, const char *val);
/* Merges entries with the same key as rmq_cmd_ext_set would have: the first
 * keeps its place, the last value wins. O(n log n). 0 or RMQ_ENOMEM (c
 * unchanged then). */
int rmq_cmd_ext_dedupe(struct rmq_cmd *c);
int rmq_cmd_ext_set_i64(struct rmq_cmd *c, const char *key, int64_t val);
/* Borrowed value of key, or NULL. */
const char *rmq_cmd_ext_get(const struct rmq_cmd *c, const char *key);
/* Parses key as a decimal int64 (surrounding spaces not allowed).
 * RMQ_ENOTFOUND when absent, RMQ_EINVAL when not an integer. */
int rmq_cmd_ext_get_i64(const struct rmq_cmd *c, const char *key, int64_t *out);
/* "true"/"false" (case-insensitive). RMQ_ENOTFOUND or RMQ_EINVAL. */
int rmq_cmd_ext_get_bool(const struct rmq_cmd *c, const char *key, bool *out);

/* Sets the remark (copied; NULL clears). */
int rmq_cmd_set_remark(struct rmq_cmd *c, const char *remark);
/* Copies n bytes as the body. */
int rmq_cmd_set_body_copy(struct rmq_cmd *c, const void *p, size_t n);
/* Takes ownership of p (allocated with rmq_malloc) as the body. */
void rmq_cmd_set_body_take(struct rmq_cmd *c, uint8_t *p, size_t n);

/* Initialises *resp (must be uninitialised or cleared) as the response to
 * req: same opaque, flag RESPONSE, the request's serialize type (PROTOCOL (docs/protocol.md §1.4):
 * reply in the request's type), language JAVA, version RMQ_SERVER_VERSION,
 * the given code and remark (may be NULL). 0 or RMQ_ENOMEM. */
int rmq_cmd_init_response(struct rmq_cmd *resp, const struct rmq_cmd *req, int32_t code, const char *remark);

/* Initialises *c as a request the daemon sends: JSON type (PROTOCOL (docs/protocol.md §1.4):
 * server-initiated requests are JSON), the given code, opaque and flag. */
void rmq_cmd_init_request(struct rmq_cmd *c, int32_t code, int32_t opaque, int32_t flag);

/* Language name <-> byte code. rmq_language_name returns a static string
 * ("OTHER" for unknown codes); rmq_language_from_name returns RMQ_LANG_OTHER
 * for unknown names. */
const char *rmq_language_name(int32_t code);
int32_t rmq_language_from_name(const char *name);

#endif
