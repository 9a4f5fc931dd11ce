/* reply.h — how a request handler answers: at once, or held until the store
 * batch that makes it true has committed (docs/protocol.md: nothing unstored
 * is acknowledged). Loop thread only. */
#ifndef RMQ_REPLY_H
#define RMQ_REPLY_H

#include "broker.h"

#include <stdbool.h>
#include <stdint.h>

struct buf;
struct conn;

/* Sends resp as the reply to req unless req is oneway (never answer a
 * oneway request). Takes resp's contents (resp is left cleared). durable:
 * resp reports a stored fact, so it is held until the store batch commits;
 * if the commit fails the client gets SYSTEM_ERROR instead. */
void reply_send(struct broker *s, struct conn *c, const struct rmq_cmd *req, struct rmq_cmd *resp,
                bool durable);
/* Replies SUCCESS with the bytes of body, which the caller built with status
 * built (non-zero = building failed: the connection is closed instead, as
 * a client would time out on a missing reply anyway). Frees body. */
void reply_body(struct broker *s, struct conn *c, const struct rmq_cmd *req, int built, struct buf *body,
                bool durable);
/* Replies code with remark and no body. */
void reply_code(struct broker *s, struct conn *c, const struct rmq_cmd *req, int32_t code,
                const char *remark);
/* Replies SUCCESS with no body; held until the store commits when durable
 * (the request changed stored state). */
void reply_ok(struct broker *s, struct conn *c, const struct rmq_cmd *req, bool durable);
/* Replies SYSTEM_ERROR "missing or non-integer field <name>" when field is
 * absent or not an integer and returns that error; 0 with *out set otherwise. */
int reply_require_i64(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                      int64_t *out);
/* The same for a non-empty, valid name field (borrowed pointer into req). */
int reply_require_str(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                      const char **out);

/* After the commit: sends the held replies, or SYSTEM_ERROR in their place
 * when the batch they depend on was not stored (stored false). */
void reply_release_held(struct broker *s, bool stored);
/* A connection is closing: its held replies are dropped at release. */
void reply_forget_conn(struct broker *s, const struct conn *c);
/* For asserts: the held replies are consistent (count within capacity,
 * storage present when any, each one's connection NULL or live: named by
 * its registry channel, or closing and not yet reaped). O(held replies). */
bool reply_held_sane(const struct broker *s);

#endif
