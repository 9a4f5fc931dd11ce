/* broker_fixture.c — see broker_fixture.h. The loop turn is the daemon's
 * own (requests/turn.h: broker_on_frame, broker_on_close,
 * broker_conn_opened, broker_before_sleep) and so is the lifecycle
 * (requests/broker_state.h); only the sockets are the fixture's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"

#include "broker_state.h"
#include "buf.h"
#include "conn.h"
#include "consumer_requests.h"
#include "err.h"
#include "log.h"
#include "loop.h"
#include "outbound.h"
#include "request_codes.h"
#include "rmq_body.h"
#include "store.h"
#include "test_support.h"
#include "turn.h"

#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void fx_config_defaults(struct config *cfg)
{
    /* The daemon's own defaults, then what a unit test needs instead: no
     * HTTP, a virtual clock, no rate or idle limits, fsync on every commit. */
    config_defaults(cfg);
    cfg->http_enabled = false;
    cfg->sync_interval_ms = 0;
    cfg->max_requests_per_sec = 0;
    cfg->idle_timeout_ms = 0;
    cfg->log_level = LOG_ERROR;
    cfg->virtual_clock = true;
}

static struct fx_peer *peer_of(struct fx *fx, const struct conn *c)
{
    for (size_t i = 0; i < fx->npeers; i++)
        if (fx->peers[i].c == c)
            return &fx->peers[i];
    return NULL;
}

/* The daemon's close path, then the peer forgets its end. */
static void on_close(void *ctx, struct conn *c)
{
    struct fx *fx = (struct fx *)((char *)ctx - offsetof(struct fx, b));
    broker_on_close(&fx->b, c);
    struct fx_peer *p = peer_of(fx, c);
    if (p)
        p->c = NULL;
}

struct fx *fx_new(const struct config *cfg)
{
    /* A peer end may be closed by a test; writing to it must fail, not kill. */
    signal(SIGPIPE, SIG_IGN);
    struct fx *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    if (cfg)
        fx->cfg = *cfg;
    else
        fx_config_defaults(&fx->cfg);
    log_set_level((enum log_level)fx->cfg.log_level);
    const char *dir = test_tmpdir();
    assert_non_null(dir);
    snprintf(fx->dir, sizeof fx->dir, "%s", dir);
    snprintf(fx->db, sizeof fx->db, "%s/store.db", dir);
    snprintf(fx->cfg.store_path, sizeof fx->cfg.store_path, "%s", fx->db);

    struct broker *s = &fx->b;
    assert_int_equal(broker_init_state(s, &fx->cfg), 0);
    struct conn_set_options copt = {
        .max_frame = fx->cfg.max_frame_bytes,
        .max_output = fx->cfg.max_pending_output,
        .on_frame = broker_on_frame,
        .on_close = on_close,
        .ctx = s,
    };
    assert_int_equal(conn_set_new(s->loop, &copt, &s->conns), 0);
    char err[256] = "";
    int rc = store_open(fx->db, &s->store, err, sizeof err);
    if (rc != 0)
        fail_msg("store_open %s: %s", fx->db, err);
    s->run_id = store_run_id(s->store);
    assert_int_equal(store_recover(s->store, broker_now_ms(s), NULL), 0);
    for (size_t i = 0; i < fx->cfg.ntopics; i++)
        assert_non_null(broker_create_topic(s, fx->cfg.topics[i].name, fx->cfg.topics[i].queues));
    assert_int_equal(store_commit(s->store), 0);
    return fx;
}

void fx_free(struct fx *fx)
{
    struct broker *s = &fx->b;
    outbound_free_all(s);
    broker_close_conns(s);
    assert_int_equal(broker_fini_state(s), 0);
    for (size_t i = 0; i < fx->npeers; i++) {
        close(fx->peers[i].fd);
        rmq_frame_decoder_free(&fx->peers[i].dec);
    }
    (void)test_rmdir_all(fx->dir);
    free(fx);
}

size_t fx_connect_bare(struct fx *fx)
{
    assert_true(fx->npeers < FX_MAX_PEERS);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    struct broker *s = &fx->b;
    size_t i = fx->npeers++;
    struct fx_peer *p = &fx->peers[i];
    memset(p, 0, sizeof *p);
    p->fd = sv[1];
    rmq_frame_decoder_init(&p->dec, RMQ_FRAME_MAX_DEFAULT, 0);
    char peer[64];
    snprintf(peer, sizeof peer, "127.0.0.1:%zu", 40000 + i);
    uint64_t id = broker_next_conn_id(s);
    assert_int_equal(conn_set_adopt(s->conns, sv[0], id, peer, loop_now_ms(s->loop), &p->c), 0);
    assert_int_equal(broker_conn_opened(s, p->c), 0);
    return i;
}

size_t fx_connect(struct fx *fx)
{
    size_t i = fx_connect_bare(fx);
    /* Tests call handlers directly, past the admission path that writes
     * the channel row at a first request: written here instead. */
    assert_int_equal(broker_store_channel(&fx->b, fx->peers[i].c), 0);
    return i;
}

struct conn *fx_conn(struct fx *fx, size_t i)
{
    assert_true(i < fx->npeers);
    assert_non_null(fx->peers[i].c);
    return fx->peers[i].c;
}

void fx_iterate(struct fx *fx)
{
    fx->last_commit_rc = broker_before_sleep(&fx->b, BROKER_COMMIT_EVERY_TURN);
}

void fx_advance(struct fx *fx, int64_t ms)
{
    assert_true(fx->cfg.virtual_clock);
    fx->b.clock_offset_ms += ms;
}

int fx_recv(struct fx *fx, size_t i, struct rmq_cmd *out)
{
    assert_true(i < fx->npeers);
    struct fx_peer *p = &fx->peers[i];
    rmq_cmd_init(out);
    for (;;) {
        int rc = rmq_frame_decoder_next(&p->dec, out);
        if (rc == 0)
            return 0;
        assert_int_equal(rc, RMQ_EAGAIN);
        uint8_t chunk[65536];
        ssize_t n = read(p->fd, chunk, sizeof chunk);
        if (n == 0)
            p->eof = true;
        if (n <= 0) {
            assert_true(n == 0 || errno == EAGAIN || errno == ECONNRESET);
            return RMQ_EAGAIN;
        }
        assert_int_equal(rmq_frame_decoder_feed(&p->dec, chunk, (size_t)n), 0);
    }
}

size_t fx_drain(struct fx *fx, size_t i)
{
    size_t n = 0;
    struct rmq_cmd cmd;
    while (fx_recv(fx, i, &cmd) == 0) {
        rmq_cmd_clear(&cmd);
        n++;
    }
    return n;
}

int32_t fx_reply(struct fx *fx, size_t i, int32_t opaque, struct rmq_cmd *out)
{
    if (fx_recv(fx, i, out) != 0)
        fail_msg("peer %zu: no frame, expected the reply to opaque %d", i, opaque);
    assert_true(rmq_cmd_is_response(out));
    assert_int_equal(out->opaque, opaque);
    return out->code;
}

size_t fx_notifies(struct fx *fx, size_t i, const char *group)
{
    size_t n = 0;
    struct rmq_cmd cmd;
    while (fx_recv(fx, i, &cmd) == 0) {
        assert_false(rmq_cmd_is_response(&cmd));
        assert_int_equal(cmd.code, RMQ_REQ_NOTIFY_CONSUMER_IDS_CHANGED);
        assert_true(rmq_cmd_is_oneway(&cmd));
        assert_string_equal(rmq_cmd_ext_get(&cmd, "consumerGroup"), group);
        rmq_cmd_clear(&cmd);
        n++;
    }
    return n;
}

void fx_request(struct rmq_cmd *req, int32_t code, int32_t opaque, int32_t flag)
{
    rmq_cmd_init_request(req, code, opaque, flag);
    req->language = RMQ_LANG_JAVA;
    req->version = 401;
}

void fx_heartbeat_req(struct rmq_cmd *req, int32_t opaque, const char *client_id, const char *group,
                      const char *const *topics, size_t ntopics, bool broadcast)
{
    fx_request(req, RMQ_REQ_HEART_BEAT, opaque, 0);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(
        buf_appendf(&b,
                    "{\"clientID\":\"%s\",\"consumerDataSet\":[{\"groupName\":\"%s\","
                    "\"consumeType\":\"CONSUME_PASSIVELY\",\"messageModel\":\"%s\","
                    "\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\",\"subscriptionDataSet\":[",
                    client_id, group, broadcast ? "BROADCASTING" : "CLUSTERING"),
        0);
    for (size_t t = 0; t < ntopics; t++)
        assert_int_equal(buf_appendf(&b,
                                     "%s{\"topic\":\"%s\",\"subString\":\"*\",\"expressionType\":\"TAG\","
                                     "\"subVersion\":1,\"tagsSet\":[],\"codeSet\":[]}",
                                     t ? "," : "", topics[t]),
                         0);
    assert_int_equal(buf_append_str(&b, "],\"unitMode\":false}],\"producerDataSet\":[]}"), 0);
    assert_int_equal(rmq_cmd_set_body_copy(req, buf_head(&b), buf_live(&b)), 0);
    buf_free(&b);
}

void fx_heartbeat(struct fx *fx, size_t i, const char *client_id, const char *group, const char *topic)
{
    struct rmq_cmd req;
    const char *topics[1] = {topic};
    fx_heartbeat_req(&req, 7, client_id, group, topics, topic ? 1 : 0, false);
    consumer_req_heartbeat(&fx->b, fx_conn(fx, i), &req);
    rmq_cmd_clear(&req);
}

int fx_setup(void **state)
{
    *state = fx_new(NULL);
    return 0;
}

int fx_teardown(void **state)
{
    fx_free(*state);
    return 0;
}

void fx_handle(struct fx *fx, size_t i, fx_handler handler, struct rmq_cmd *req)
{
    handler(&fx->b, fx_conn(fx, i), req);
    rmq_cmd_clear(req);
    fx_iterate(fx);
}

void fx_handle_body(struct fx *fx, size_t i, fx_handler handler, int32_t code, int32_t opaque,
                    const char *body)
{
    struct rmq_cmd req;
    fx_request(&req, code, opaque, 0);
    assert_int_equal(rmq_cmd_set_body_copy(&req, body, strlen(body)), 0);
    fx_handle(fx, i, handler, &req);
}

void fx_send_heartbeat(struct fx *fx, size_t i, int32_t opaque, const char *client_id, const char *group,
                       const char *const *topics, size_t ntopics, bool broadcast)
{
    struct rmq_cmd req;
    fx_heartbeat_req(&req, opaque, client_id, group, topics, ntopics, broadcast);
    fx_handle(fx, i, consumer_req_heartbeat, &req);
}

void fx_unregister(struct fx *fx, size_t i, int32_t opaque, const char *group, const char *client_id)
{
    struct rmq_cmd req;
    fx_request(&req, RMQ_REQ_UNREGISTER_CLIENT, opaque, 0);
    assert_int_equal(rmq_cmd_ext_set(&req, "consumerGroup", group), 0);
    if (client_id)
        assert_int_equal(rmq_cmd_ext_set(&req, "clientID", client_id), 0);
    fx_handle(fx, i, consumer_req_unregister_client, &req);
}

void fx_expect_reply(struct fx *fx, size_t i, int32_t opaque, int32_t code, const char *remark)
{
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, i, opaque, &r), code);
    if (remark)
        assert_string_equal(r.remark, remark);
    rmq_cmd_clear(&r);
}

void fx_expect_reply_prefix(struct fx *fx, size_t i, int32_t opaque, int32_t code, const char *prefix)
{
    struct rmq_cmd r;
    assert_int_equal(fx_reply(fx, i, opaque, &r), code);
    assert_non_null(r.remark);
    if (strncmp(r.remark, prefix, strlen(prefix)) != 0)
        fail_msg("remark \"%s\" does not start with \"%s\"", r.remark, prefix);
    rmq_cmd_clear(&r);
}

const struct reg_group *fx_group(struct fx *fx, const char *name, size_t nmembers)
{
    const struct reg_group *g = registry_group(&fx->b.reg, name);
    if (!g)
        fail_msg("group %s is not live", name);
    assert_int_equal(g->g.nmembers, nmembers);
    return g;
}

void fx_join(struct fx *fx, size_t i, const char *client_id, const char *group)
{
    fx_heartbeat(fx, i, client_id, group, "T");
    fx_iterate(fx);
    fx_drain(fx, i);
}

size_t fx_member(struct fx *fx, const char *client_id, const char *group)
{
    size_t i = fx_connect(fx);
    fx_join(fx, i, client_id, group);
    return i;
}

void fx_two_members(struct fx *fx, size_t *a, size_t *b)
{
    *a = fx_connect(fx);
    *b = fx_connect(fx);
    fx_heartbeat(fx, *a, "cA", "g", "T");
    fx_heartbeat(fx, *b, "cB", "g", "T");
    fx_iterate(fx);
    fx_drain(fx, *a);
    fx_drain(fx, *b);
}

int64_t fx_sql_int(struct fx *fx, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(fx->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}
