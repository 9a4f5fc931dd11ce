/* test_notify_policy.c — common/broker/notify_policy.c: which changes mark
 * a group for NOTIFY and when a marked group is sent it (the rule the
 * daemon and the replayer share). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "notify_policy.h"
#include "test_support.h"

static void test_marks(void **state)
{
    (void)state;
    struct mship_group g = {.message_model = RMQ_MODEL_CLUSTERING};
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_JOIN, false));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_LEAVE, false));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_SUBSCRIPTION, false));
    /* Expiry is the one change --notify-on-expiry off keeps silent, as the broker is. */
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, false));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, true));
    g.message_model = RMQ_MODEL_BROADCASTING;
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_JOIN, true));
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_LEAVE, true));
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, true));
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_SUBSCRIPTION, true));
}

static void test_sends(void **state)
{
    (void)state;
    struct mship_member m = {.channel_id = 1};
    struct mship_group g = {.message_model = RMQ_MODEL_CLUSTERING};
    assert_false(notify_policy_sends(&g)); /* the last member left: nobody to tell */
    g.members = &m;
    g.nmembers = 1;
    assert_true(notify_policy_sends(&g));
    g.message_model = RMQ_MODEL_BROADCASTING;
    assert_false(notify_policy_sends(&g));
}

static void test_subscription_counts(void **state)
{
    (void)state;
    assert_true(notify_policy_subscription_counts(MSHIP_SUB_ADDED));
    assert_true(notify_policy_subscription_counts(MSHIP_SUB_REMOVED));
    assert_false(notify_policy_subscription_counts(MSHIP_JOINED | MSHIP_SUB_ADDED));
}

TEST_MAIN(cmocka_unit_test(test_marks), cmocka_unit_test(test_sends),
          cmocka_unit_test(test_subscription_counts))
