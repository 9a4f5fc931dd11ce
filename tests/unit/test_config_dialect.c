/* test_config_dialect.c — server/core/config.c: the dialect `serve` derives
 * from --compat and the notify flags (a flag overrides --compat in either
 * order), and the other switches --compat sets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "config.h"
#include "err.h"

#include <stdio.h>
#include <string.h>

/* config_parse of "serve" and the given flags (NULL-terminated); asserts it parsed. */
static void parse(struct config *cfg, const char *const *flags)
{
    char *argv[16] = {(char *)"serve"};
    int argc = 1;
    while (*flags && argc < 15)
        argv[argc++] = (char *)*flags++;
    assert_int_equal(config_parse(cfg, argc, argv), 0);
}

/* Field by field (padding may differ). */
static bool same_dialect(const struct broker_dialect *a, const struct broker_dialect *b)
{
#define SAME(f) (a->f == b->f)
    return !strcmp(a->name, b->name) && SAME(notify_broadcast) && SAME(notify_on_expiry) &&
           SAME(notify_noop_unregister) && SAME(reply_header_json) && SAME(heartbeat_v2) &&
           SAME(heartbeat_sub_change_without_data) && SAME(query_assignment) && SAME(pull_sys_flags) &&
           SAME(pull_bad_queue_code) && SAME(route_tbw102) && SAME(route_null_topic) &&
           SAME(route_acting_master) && SAME(unlock_lenient) && SAME(query_offset_set_zero) &&
           SAME(query_offset_not_found) &&
           !strcmp(a->query_offset_not_found_remark, b->query_offset_not_found_remark) &&
           SAME(offset_commit_needs_group) && SAME(namesrv_silent_on_broker_code);
#undef SAME
}

static void test_default_is_rmqcoord(void **state)
{
    (void)state;
    static struct config cfg;
    struct broker_dialect want;
    dialect_init(&want, DIALECT_RMQCOORD);
    config_defaults(&cfg);
    assert_true(same_dialect(&cfg.dialect, &want));
    parse(&cfg, (const char *const[]){NULL});
    assert_true(same_dialect(&cfg.dialect, &want));
    assert_int_equal(cfg.expiry_scan_ms, 1000);
    parse(&cfg, (const char *const[]){"--compat", "rmqcoord", NULL});
    assert_true(same_dialect(&cfg.dialect, &want));
}

static void test_compat_modes(void **state)
{
    (void)state;
    static struct config cfg;
    struct broker_dialect want;
    dialect_init(&want, DIALECT_BROKER_49);
    parse(&cfg, (const char *const[]){"--compat", "broker-4.9", NULL});
    assert_true(same_dialect(&cfg.dialect, &want));
    assert_int_equal(cfg.expiry_scan_ms, 10000);
    assert_int_equal(cfg.auto_create_queues, 0);
    assert_true(cfg.refuse_sql92 && cfg.queue_end_zero && cfg.pull_checks && cfg.refuse_send_back);
    assert_false(cfg.release_pulls_on_change);
    dialect_init(&want, DIALECT_BROKER_5);
    parse(&cfg, (const char *const[]){"--compat=broker", NULL});
    assert_true(same_dialect(&cfg.dialect, &want));
    parse(&cfg, (const char *const[]){"--compat", "broker-4.9", "--compat", "broker-5", NULL});
    assert_true(same_dialect(&cfg.dialect, &want)); /* the last one wins */
}

static void test_flags_override_compat(void **state)
{
    (void)state;
    static struct config cfg;
    parse(&cfg, (const char *const[]){"--notify-on-expiry", "on", "--compat", "broker-4.9",
                                      "--notify-on-noop-unregister", "off", NULL});
    assert_true(cfg.dialect.notify_on_expiry);
    assert_false(cfg.dialect.notify_noop_unregister);
    assert_true(cfg.dialect.notify_broadcast); /* the rest is still 4.9's */
    parse(&cfg,
          (const char *const[]){"--notify-on-noop-unregister", "on", "--notify-on-expiry", "off", NULL});
    assert_false(cfg.dialect.notify_on_expiry);
    assert_true(cfg.dialect.notify_noop_unregister);
    assert_false(cfg.dialect.notify_broadcast);
    assert_string_equal(cfg.dialect.name, "rmqcoord");
}

static void test_bad_compat_refused(void **state)
{
    (void)state;
    static struct config cfg;
    char *argv[] = {(char *)"serve", (char *)"--compat", (char *)"broker-3"};
    fflush(stderr);
    assert_int_equal(config_parse(&cfg, 3, argv), RMQ_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_rmqcoord),
        cmocka_unit_test(test_compat_modes),
        cmocka_unit_test(test_flags_override_compat),
        cmocka_unit_test(test_bad_compat_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
