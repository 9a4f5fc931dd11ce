/* test_notify_policy.c — common/broker/notify_policy.c: which changes mark
 * a group for NOTIFY and when a marked group is sent it, in each broker
 * dialect (the rule the daemon and the replayer share). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "notify_policy.h"
#include "test_support.h"

static struct broker_dialect dialect(enum dialect_mode mode, bool notify_on_expiry)
{
    struct broker_dialect d;
    dialect_init(&d, mode);
    d.notify_on_expiry = notify_on_expiry;
    return d;
}

static void test_marks(void **state)
{
    (void)state;
    struct broker_dialect off = dialect(DIALECT_RMQCOORD, false), on = dialect(DIALECT_RMQCOORD, true);
    struct mship_group g = {.message_model = RMQ_MODEL_CLUSTERING};
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_JOIN, &off));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_LEAVE, &off));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_SUBSCRIPTION, &off));
    /* Expiry is the one change --notify-on-expiry off keeps silent, as the broker is. */
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, &off));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, &on));
    g.message_model = RMQ_MODEL_BROADCASTING;
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_JOIN, &on));
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_LEAVE, &on));
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, &on));
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_SUBSCRIPTION, &on));
}

static void test_sends(void **state)
{
    (void)state;
    struct broker_dialect d = dialect(DIALECT_RMQCOORD, true);
    struct mship_member m = {.channel_id = 1};
    struct mship_group g = {.message_model = RMQ_MODEL_CLUSTERING};
    assert_false(notify_policy_sends(&g, &d)); /* the last member left: nobody to tell */
    g.members = &m;
    g.nmembers = 1;
    assert_true(notify_policy_sends(&g, &d));
    g.message_model = RMQ_MODEL_BROADCASTING;
    assert_false(notify_policy_sends(&g, &d));
}

/* --compat broker-4.9: a broadcasting group is marked and sent its NOTIFY like any other (what
 * member_events.c and notify.c once decided beside the policy, so replay could not predict it). */
static void test_broker49_notifies_broadcast(void **state)
{
    (void)state;
    struct broker_dialect d49 = dialect(DIALECT_BROKER_49, false), d5 = dialect(DIALECT_BROKER_5, false);
    struct mship_member m = {.channel_id = 1};
    struct mship_group g = {.message_model = RMQ_MODEL_BROADCASTING, .members = &m, .nmembers = 1};
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_JOIN, &d49));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_LEAVE, &d49));
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_SUBSCRIPTION, &d49));
    assert_true(notify_policy_sends(&g, &d49));
    /* Expiry stays silent with --notify-on-expiry off, broadcasting or not. */
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, &d49));
    d49.notify_on_expiry = true;
    assert_true(notify_policy_marks(&g, NOTIFY_CHANGE_EXPIRE, &d49));
    /* An empty group is told nothing in any dialect. */
    g.nmembers = 0;
    assert_false(notify_policy_sends(&g, &d49));
    /* 5.x (5.3.1+) does not notify broadcasting groups. */
    g.nmembers = 1;
    assert_false(notify_policy_marks(&g, NOTIFY_CHANGE_JOIN, &d5));
    assert_false(notify_policy_sends(&g, &d5));
}

static void test_unregister_marks(void **state)
{
    (void)state;
    struct mship_member m = {.channel_id = 1};
    struct mship_group g = {.message_model = RMQ_MODEL_CLUSTERING, .members = &m, .nmembers = 1};
    struct broker_dialect own = dialect(DIALECT_RMQCOORD, true), d49 = dialect(DIALECT_BROKER_49, false),
                          d5 = dialect(DIALECT_BROKER_5, false);
    /* rmqcoord: only the leave itself (its own change) notifies. */
    assert_false(notify_policy_unregister_marks(&g, &own));
    own.notify_noop_unregister = true; /* --notify-on-noop-unregister on */
    assert_true(notify_policy_unregister_marks(&g, &own));
    assert_true(notify_policy_unregister_marks(&g, &d49));
    assert_true(notify_policy_unregister_marks(&g, &d5));
    /* A group with no live member is not notified. */
    g.nmembers = 0;
    assert_false(notify_policy_unregister_marks(&g, &d5));
    /* Broadcasting: 4.9 notifies it too, 5.x does not. */
    g.nmembers = 1;
    g.message_model = RMQ_MODEL_BROADCASTING;
    assert_true(notify_policy_unregister_marks(&g, &d49));
    assert_false(notify_policy_unregister_marks(&g, &d5));
}

static void test_subscription_counts(void **state)
{
    (void)state;
    assert_true(notify_policy_subscription_counts(MSHIP_SUB_ADDED));
    assert_true(notify_policy_subscription_counts(MSHIP_SUB_REMOVED));
    assert_false(notify_policy_subscription_counts(MSHIP_JOINED | MSHIP_SUB_ADDED));
}

TEST_MAIN(cmocka_unit_test(test_marks), cmocka_unit_test(test_sends),
          cmocka_unit_test(test_broker49_notifies_broadcast), cmocka_unit_test(test_unregister_marks),
          cmocka_unit_test(test_subscription_counts))
