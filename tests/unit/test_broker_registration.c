/* test_broker_registration.c — --role broker (server/cluster/broker_registration.c):
 * the shutdown UNREGISTER_BROKER against a fake name server on a loopback
 * port (a thread that accepts one connection, checks the request and then
 * replies or not), and the RegisterBrokerBody (docs/protocol.md §8.4,
 * docs/cluster.md). The outcome is read from the log line broker_reg_stop
 * writes (stderr, captured). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_fixture.h"
#include "broker_registration.h"
#include "buf.h"
#include "cluster.h"
#include "log.h"
#include "remoting_frame.h"
#include "request_codes.h"
#include "test_support.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum ns_mode { NS_CLOSE, NS_SUCCESS, NS_REFUSE };

struct fake_ns {
    int listen_fd;
    uint16_t port;
    enum ns_mode mode;
    pthread_t thread;
    /* What the thread saw (read after join). */
    int code, opaque;
    char broker_name[64], broker_addr[64];
    bool got_request;
};

static void *ns_main(void *arg)
{
    struct fake_ns *ns = arg;
    int fd = accept(ns->listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct rmq_frame_decoder dec;
    rmq_frame_decoder_init(&dec, 1 << 20, 0);
    struct rmq_cmd req;
    rmq_cmd_init(&req);
    int rc;
    while ((rc = rmq_frame_decoder_next(&dec, &req)) == RMQ_EAGAIN) {
        uint8_t chunk[4096];
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0 || rmq_frame_decoder_feed(&dec, chunk, (size_t)n) != 0)
            break;
    }
    if (rc == 0) {
        ns->got_request = true;
        ns->code = req.code;
        ns->opaque = req.opaque;
        const char *v = rmq_cmd_ext_get(&req, "brokerName");
        snprintf(ns->broker_name, sizeof ns->broker_name, "%s", v ? v : "");
        v = rmq_cmd_ext_get(&req, "brokerAddr");
        snprintf(ns->broker_addr, sizeof ns->broker_addr, "%s", v ? v : "");
        if (ns->mode != NS_CLOSE) {
            struct rmq_cmd resp;
            struct buf out;
            buf_init(&out, 0);
            if (rmq_cmd_init_response(&resp, &req,
                                      ns->mode == NS_SUCCESS ? RMQ_RESP_SUCCESS : RMQ_RESP_SYSTEM_ERROR,
                                      ns->mode == NS_SUCCESS ? NULL : "not today") == 0 &&
                rmq_frame_encode(&resp, &out) == 0)
                (void)send(fd, buf_head(&out), buf_live(&out), MSG_NOSIGNAL);
            rmq_cmd_clear(&resp);
            buf_free(&out);
        }
    }
    rmq_cmd_clear(&req);
    rmq_frame_decoder_free(&dec);
    close(fd); /* NS_CLOSE: closes without replying */
    return NULL;
}

static void ns_start(struct fake_ns *ns, enum ns_mode mode)
{
    memset(ns, 0, sizeof *ns);
    ns->mode = mode;
    ns->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(ns->listen_fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    assert_int_equal(bind(ns->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(ns->listen_fd, 4), 0);
    assert_int_equal(getsockname(ns->listen_fd, (struct sockaddr *)&sa, &len), 0);
    ns->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&ns->thread, NULL, ns_main, ns), 0);
}

static void ns_join(struct fake_ns *ns)
{
    assert_int_equal(pthread_join(ns->thread, NULL), 0);
    close(ns->listen_fd);
}

/* A broker fixture in --role broker registered (lazily: nothing is sent
 * before the loop runs) with one name server at port. */
static struct fx *broker_with_namesrv(uint16_t port)
{
    struct config cfg;
    fx_config_defaults(&cfg);
    cfg.role = CONFIG_ROLE_BROKER;
    cfg.log_level = LOG_INFO;
    strcpy(cfg.namesrv[0].host, "127.0.0.1");
    cfg.namesrv[0].port = port;
    cfg.nnamesrv = 1;
    struct fx *fx = fx_new(&cfg);
    snprintf(fx->b.advertise, sizeof fx->b.advertise, "127.0.0.1:10911");
    assert_int_equal(broker_reg_start(&fx->b), 0);
    return fx;
}

/* Runs broker_reg_stop with stderr captured; returns the log text (malloc'd). */
static char *stop_captured(struct fx *fx)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), 2) >= 0);
    /* A stale errno of 0 made the old code report success after an EOF. */
    errno = 0;
    broker_reg_stop(&fx->b);
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);
    off_t n = lseek(fileno(tmp), 0, SEEK_END);
    assert_true(n >= 0);
    char *text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(pread(fileno(tmp), text, (size_t)n, 0), n);
    fclose(tmp);
    fprintf(stderr, "%s", text); /* keep the log visible in the test output */
    return text;
}

/* Starts a fake name server answering in mode, a broker registered with
 * it, and stops the broker; returns the stop's log (finish frees it) with
 * the server's view in *ns and the broker in *fx. */
static char *stop_against(struct fake_ns *ns, enum ns_mode mode, struct fx **fx)
{
    ns_start(ns, mode);
    *fx = broker_with_namesrv(ns->port);
    char *log = stop_captured(*fx);
    ns_join(ns);
    return log;
}

static void finish(struct fx *fx, char *log)
{
    free(log);
    fx_free(fx);
}

/* Regression: a name server that accepts the UNREGISTER_BROKER and closes
 * without replying used to be logged as "unregistered" (recv() returning 0
 * fell through to -errno with a stale errno, 0 when nothing had failed
 * before). It must count as a failure and say why. */
static void test_close_without_reply_is_a_failure(void **state)
{
    (void)state;
    struct fake_ns ns;
    struct fx *fx;
    char *log = stop_against(&ns, NS_CLOSE, &fx);
    assert_true(ns.got_request);
    assert_int_equal(ns.code, RMQ_REQ_UNREGISTER_BROKER);
    assert_string_equal(ns.broker_name, "broker-a");
    assert_string_equal(ns.broker_addr, "127.0.0.1:10911");
    assert_null(strstr(log, "unregistered from name server"));
    assert_non_null(strstr(log, "UNREGISTER_BROKER to 127.0.0.1:"));
    assert_non_null(strstr(log, "closed the connection without a reply"));
    assert_null(fx->b.breg);
    finish(fx, log);
}

/* A SUCCESS reply to the request's opaque is an unregistration. */
static void test_success_reply(void **state)
{
    (void)state;
    struct fake_ns ns;
    struct fx *fx;
    char *log = stop_against(&ns, NS_SUCCESS, &fx);
    assert_true(ns.got_request);
    assert_non_null(strstr(log, "broker: unregistered from name server 127.0.0.1:"));
    assert_null(strstr(log, "failed"));
    finish(fx, log);
}

/* A reply with an error code is a refusal, not an unregistration. */
static void test_refusal_is_a_failure(void **state)
{
    (void)state;
    struct fake_ns ns;
    struct fx *fx;
    char *log = stop_against(&ns, NS_REFUSE, &fx);
    assert_null(strstr(log, "unregistered from name server"));
    assert_non_null(strstr(log, "refused with code 1: not today"));
    finish(fx, log);
}

/* Nobody listening: connect fails, and the log says so. */
static void test_nobody_listening(void **state)
{
    (void)state;
    struct fake_ns ns;
    ns_start(&ns, NS_CLOSE);
    uint16_t port = ns.port;
    /* Free the port: connect the thread away first, then close the listener. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
    ns_join(&ns);
    struct fx *fx = broker_with_namesrv(port);
    char *log = stop_captured(fx);
    assert_null(strstr(log, "unregistered from name server"));
    assert_non_null(strstr(log, "connect: "));
    finish(fx, log);
}

/* The RegisterBrokerBody lists this broker's own topics only, with the
 * dataVersion given. */
static void test_register_body(void **state)
{
    (void)state;
    struct fx *fx = fx_new(NULL);
    assert_non_null(broker_create_topic(&fx->b, "Mine", 4));
    struct topic_broker other = {(char *)"broker-z", 2, 2, 6};
    assert_int_equal(broker_put_topic(&fx->b, "Theirs", &other, 1), 0);
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(broker_reg_body(&fx->b, 7, 1234, &b), 0);
    json_error_t err;
    json_t *j = json_loadb((const char *)buf_head(&b), buf_live(&b), 0, &err);
    assert_non_null(j);
    json_t *w = json_object_get(j, "topicConfigSerializeWrapper");
    json_t *table = json_object_get(w, "topicConfigTable");
    assert_int_equal(json_object_size(table), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(table, "Mine"), "readQueueNums")), 4);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "dataVersion"), "counter")), 7);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "dataVersion"), "timestamp")),
                     1234);
    json_decref(j);
    buf_free(&b);
    fx_free(fx);
}

TEST_MAIN(cmocka_unit_test(test_close_without_reply_is_a_failure), cmocka_unit_test(test_success_reply),
          cmocka_unit_test(test_refusal_is_a_failure), cmocka_unit_test(test_nobody_listening),
          cmocka_unit_test(test_register_body))
