/* test_consumer_list_body.c — ConsumerListBody: the encoder (exact bytes),
 * the client side's parser (duplicates kept, malformed bodies, failed
 * allocations) and the one reading what the other wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "consumer_list_body.h"
#include "err.h"
#include "mem.h"
#include "test_support.h"

#include <string.h>

static void test_consumer_list_encode(void **state)
{
    (void)state;
    const char *ids[] = {"127.0.0.1@c1", "127.0.0.1@c\"2"};
    struct buf b;
    buf_init(&b, 0);
    assert_int_equal(rmq_consumer_list_encode(ids, 2, &b), RMQ_OK);
    assert_buf_str(&b, "{\"consumerIdList\":[\"127.0.0.1@c1\",\"127.0.0.1@c\\\"2\"]}");
    /* ...and the client side reads the same ids back. */
    char **back = NULL;
    size_t n = 0;
    assert_int_equal(sim_consumer_list_parse(buf_head(&b), buf_live(&b), &back, &n, NULL, 0), RMQ_OK);
    assert_int_equal(n, 2);
    assert_string_equal(back[1], ids[1]);
    sim_ids_free(back, n);
    buf_reset(&b);
    assert_int_equal(rmq_consumer_list_encode(NULL, 0, &b), RMQ_OK);
    assert_buf_str(&b, "{\"consumerIdList\":[]}");
    buf_free(&b);
}

struct list_oom {
    const char *text;
    char **ids;
    size_t n;
};

static int list_oom_run(void *ctx)
{
    struct list_oom *x = ctx;
    char err[160];
    return sim_consumer_list_parse((const uint8_t *)x->text, strlen(x->text), &x->ids, &x->n, err,
                                   sizeof err);
}

static void list_oom_check(void *ctx, int rc)
{
    struct list_oom *x = ctx;
    if (rc == RMQ_OK)
        sim_ids_free(x->ids, x->n);
}

static void test_consumer_list(void **state)
{
    (void)state;
    const char *text = "{\"consumerIdList\":[\"b\",\"a\",\"b\"]}\n";
    char **ids = NULL;
    size_t n = 0;
    char err[160];
    assert_int_equal(sim_consumer_list_parse((const uint8_t *)text, strlen(text), &ids, &n, err, sizeof err),
                     0);
    assert_int_equal(n, 3);
    assert_string_equal(ids[0], "b");
    assert_string_equal(ids[2], "b"); /* duplicates kept, as the client keeps them */
    sim_ids_free(ids, n);
    static const char *const bad[] = {"{}", "{\"consumerIdList\":{}}", "{\"consumerIdList\":[1]}", "[", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(
            sim_consumer_list_parse((const uint8_t *)bad[i], strlen(bad[i]), &ids, &n, err, sizeof err),
            RMQ_EPROTO);
    struct list_oom x = {text, NULL, 0};
    test_oom_loop(
        &(struct test_oom){.run = list_oom_run, .check = list_oom_check, .also = RMQ_EPROTO, .max = 1000},
        &x);
}

TEST_MAIN_GROUP(test_install_jansson, NULL, cmocka_unit_test(test_consumer_list_encode),
                cmocka_unit_test(test_consumer_list))
