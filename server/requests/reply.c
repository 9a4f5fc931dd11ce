/* reply.c — answering requests, and the held replies that wait for the
 * store commit (see reply.h). Loop thread only. */
#include "reply.h"

#include "array.h"
#include "buf.h"
#include "conn.h"
#include "err.h"
#include "mem.h"
#include "request_codes.h"
#include "topics.h"

#include <assert.h>
#include <stdio.h>

void reply_send(struct broker *s, struct conn *c, const struct rmq_cmd *req, struct rmq_cmd *resp,
                bool durable)
{
    if (rmq_cmd_is_oneway(req)) {
        rmq_cmd_clear(resp);
        return;
    }
    /* PROTOCOL: the reply uses the request's header encoding (as 4.9 does); a 5.x broker answers
     * in JSON whatever the request used (--compat broker-5, docs/protocol.md §12). */
    if (s->cfg->dialect.reply_header_json)
        resp->serialize_type = RMQ_SERIALIZE_JSON;
    if (!durable) {
        conn_send(c, resp);
        rmq_cmd_clear(resp);
        return;
    }
    if (RMQ_GROW(s->acks, s->acks_cap, s->nacks + 1, 64) != 0) {
        rmq_cmd_clear(resp);
        conn_close_async(c, "out of memory holding a reply");
        return;
    }
    assert(c && s->nacks < s->acks_cap);
    s->acks[s->nacks].conn = c;
    s->acks[s->nacks++].resp = *resp;
    rmq_cmd_init(resp);
}

void reply_release_held(struct broker *s, bool stored)
{
    assert(reply_held_sane(s));
    for (size_t i = 0; i < s->nacks; i++) {
        struct held_ack *a = &s->acks[i];
        if (a->conn && stored) {
            conn_send(a->conn, &a->resp);
        } else if (a->conn) {
            struct rmq_cmd err;
            if (rmq_cmd_init_response(&err, &a->resp, RMQ_RESP_SYSTEM_ERROR,
                                      "not stored: the store could not commit; retry later") == 0)
                conn_send(a->conn, &err);
            rmq_cmd_clear(&err);
        }
        rmq_cmd_clear(&a->resp);
    }
    s->nacks = 0;
    assert(reply_held_sane(s)); /* none left after a release */
}

void reply_forget_conn(struct broker *s, const struct conn *c)
{
    for (size_t i = 0; i < s->nacks; i++)
        if (s->acks[i].conn == c)
            s->acks[i].conn = NULL;
    assert(reply_held_sane(s)); /* c, about to be freed, is held by none */
}

/* Whether c is still a connection of s: its channel names it, or it is
 * closing (not yet reaped; a connection whose channel could not be opened
 * is closed at once). O(1): the held list is checked after every close. */
static bool conn_live(const struct broker *s, const struct conn *c)
{
    const struct reg_channel *ch = registry_channel(&s->reg, c->id);
    return c->closing || (ch && ch->conn == c);
}

bool reply_held_sane(const struct broker *s)
{
    if (s->nacks > s->acks_cap || (s->nacks > 0 && !s->acks))
        return false;
    for (size_t i = 0; i < s->nacks; i++)
        if (s->acks[i].conn && !conn_live(s, s->acks[i].conn))
            return false;
    return true;
}

static void reply_plain(struct broker *s, struct conn *c, const struct rmq_cmd *req, int32_t code,
                        const char *remark, bool durable)
{
    struct rmq_cmd resp;
    if (rmq_cmd_init_response(&resp, req, code, remark) != 0) {
        conn_close_async(c, "out of memory building a reply");
        return;
    }
    reply_send(s, c, req, &resp, durable);
}

void reply_code(struct broker *s, struct conn *c, const struct rmq_cmd *req, int32_t code, const char *remark)
{
    reply_plain(s, c, req, code, remark, false);
}

void reply_ok(struct broker *s, struct conn *c, const struct rmq_cmd *req, bool durable)
{
    reply_plain(s, c, req, RMQ_RESP_SUCCESS, NULL, durable);
}

void reply_body(struct broker *s, struct conn *c, const struct rmq_cmd *req, int built, struct buf *body,
                bool durable)
{
    struct rmq_cmd resp;
    int rc = built;
    if (rc == 0)
        rc = rmq_cmd_init_response(&resp, req, RMQ_RESP_SUCCESS, NULL);
    if (rc == 0) {
        rc = rmq_cmd_set_body_copy(&resp, buf_head(body), buf_live(body));
        if (rc == 0)
            reply_send(s, c, req, &resp, durable);
        else
            rmq_cmd_clear(&resp);
    }
    if (rc != 0)
        conn_close_async(c, "out of memory building a reply");
    buf_free(body);
}

int reply_require_i64(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                      int64_t *out)
{
    int rc = rmq_cmd_ext_get_i64(req, field, out);
    if (rc == 0)
        return 0;
    char remark[160];
    snprintf(remark, sizeof remark, "%s field %s in %s request",
             rc == RMQ_ENOTFOUND ? "missing" : "non-integer", field, rmq_request_name(req->code));
    reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
    return rc;
}

int reply_require_str(struct broker *s, struct conn *c, const struct rmq_cmd *req, const char *field,
                      const char **out)
{
    const char *v = rmq_cmd_ext_get(req, field);
    if (v && *v && topics_name_ok(v)) {
        *out = v;
        return 0;
    }
    char remark[160];
    snprintf(remark, sizeof remark, "%s field %s in %s request", v && *v ? "invalid" : "missing", field,
             rmq_request_name(req->code));
    reply_code(s, c, req, RMQ_RESP_SYSTEM_ERROR, remark);
    return RMQ_EINVAL;
}
