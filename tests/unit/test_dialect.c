/* test_dialect.c — common/broker/dialect.c: the table of broker behaviours,
 * each --compat mode against each field (docs/protocol.md §12), and the
 * --compat values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dialect.h"
#include "err.h"
#include "request_codes.h"

#include <string.h>

/* One row per field: its name, then its value under rmqcoord, broker-4.9, broker-5. */
#define BOOL_FIELDS(X)                                                                                       \
    X(notify_broadcast, 0, 1, 0)                                                                             \
    X(notify_on_expiry, 1, 0, 0)                                                                             \
    X(notify_noop_unregister, 0, 1, 1)                                                                       \
    X(reply_header_json, 0, 0, 1)                                                                            \
    X(heartbeat_v2, 1, 0, 1)                                                                                 \
    X(heartbeat_sub_change_without_data, 0, 0, 1)                                                            \
    X(query_assignment, 0, 0, 1)                                                                             \
    X(pull_sys_flags, 0, 0, 1)                                                                               \
    X(route_tbw102, 0, 1, 1)                                                                                 \
    X(route_null_topic, 0, 1, 1)                                                                             \
    X(route_acting_master, 0, 0, 1)                                                                          \
    X(unlock_lenient, 0, 1, 1)                                                                               \
    X(query_offset_set_zero, 1, 0, 0)                                                                        \
    X(query_offset_not_found, 0, 0, 1)                                                                       \
    X(offset_commit_needs_group, 0, 0, 1)                                                                    \
    X(namesrv_silent_on_broker_code, 0, 1, 0)

static const enum dialect_mode modes[] = {DIALECT_RMQCOORD, DIALECT_BROKER_49, DIALECT_BROKER_5};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        struct broker_dialect d;
        memset(&d, 0xa5, sizeof d); /* every field is written */
        dialect_init(&d, modes[i]);
#define CHECK(field, own, b49, b5)                                                                           \
    {                                                                                                        \
        const bool want[] = {own, b49, b5};                                                                  \
        if (d.field != want[i])                                                                              \
            fail_msg("%s: %s is %d, want %d", d.name, #field, (int)d.field, (int)want[i]);                   \
    }
        BOOL_FIELDS(CHECK)
#undef CHECK
    }
}

static void test_values(void **state)
{
    (void)state;
    struct broker_dialect own, b49, b5;
    dialect_init(&own, DIALECT_RMQCOORD);
    dialect_init(&b49, DIALECT_BROKER_49);
    dialect_init(&b5, DIALECT_BROKER_5);
    assert_string_equal(own.name, "rmqcoord");
    assert_string_equal(b49.name, "broker-4.9");
    assert_string_equal(b5.name, "broker-5");
    /* A queueId the topic lacks: 1, 5.x 29. */
    assert_int_equal(own.pull_bad_queue_code, RMQ_RESP_SYSTEM_ERROR);
    assert_int_equal(b49.pull_bad_queue_code, RMQ_RESP_SYSTEM_ERROR);
    assert_int_equal(b5.pull_bad_queue_code, RMQ_RESP_INVALID_PARAMETER);
    /* The remark of QUERY_NOT_FOUND for an offset never committed (4.9 never sends one). */
    assert_string_equal(own.query_offset_not_found_remark, "Not found, no offset committed for this queue");
    assert_string_equal(b5.query_offset_not_found_remark,
                        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first");
}

static void test_mode_parse(void **state)
{
    (void)state;
    enum dialect_mode m = DIALECT_NMODES;
    assert_int_equal(dialect_mode_parse("rmqcoord", &m), 0);
    assert_int_equal(m, DIALECT_RMQCOORD);
    assert_int_equal(dialect_mode_parse("broker", &m), 0);
    assert_int_equal(m, DIALECT_BROKER_5);
    assert_int_equal(dialect_mode_parse("broker-5", &m), 0);
    assert_int_equal(m, DIALECT_BROKER_5);
    assert_int_equal(dialect_mode_parse("broker-4.9", &m), 0);
    assert_int_equal(m, DIALECT_BROKER_49);
    m = DIALECT_BROKER_49;
    assert_int_equal(dialect_mode_parse("broker-3", &m), RMQ_EINVAL);
    assert_int_equal(dialect_mode_parse("", &m), RMQ_EINVAL);
    assert_int_equal(dialect_mode_parse("Broker", &m), RMQ_EINVAL);
    assert_int_equal(m, DIALECT_BROKER_49); /* untouched on error */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_mode_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
