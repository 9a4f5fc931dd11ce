/* test_utf8.c — common/base/utf8.c: validity and the controls a name may not
 * carry (C1, bidi marks, embeddings, overrides, isolates). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_support.h"
#include "utf8.h"

#include <string.h>

static void test_valid(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        bool ok;
    } cases[] = {
        {"plain", true},
        {"gr\xc3\xbc\xc3\x9f", true},
        {"\xf0\x9f\x98\x80", true},
        {"\xc0\xaf", false},
        {"\xed\xa0\x80", false},
        {"\xf4\x90\x80\x80", false},
        {"trunc\xe2\x82", false},
        {"\xff", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(utf8_valid(cases[i].s, strlen(cases[i].s)), cases[i].ok);
}

static void test_controls(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        bool has;
    } cases[] = {
        {"GID_ok-1", false},
        {"caf\xc3\xa9", false}, /* U+00E9 is just after the C1 block */
        {"a\xc2\x9b"
         "31mb",
         true},               /* U+009B CSI */
        {"a\xc2\x80", true},  /* U+0080 */
        {"a\xc2\x9f", true},  /* U+009F */
        {"a\xc2\xa0", false}, /* U+00A0 */
        {"ab\xe2\x80\xae"
         "cd",
         true},                    /* U+202E RIGHT-TO-LEFT OVERRIDE */
        {"ab\xe2\x80\xaa", true},  /* U+202A */
        {"ab\xe2\x80\xaf", false}, /* U+202F narrow no-break space */
        {"ab\xe2\x81\xa6", true},  /* U+2066 isolate */
        {"ab\xe2\x81\xa9", true},  /* U+2069 */
        {"ab\xe2\x81\xaa", false}, /* U+206A */
        {"ab\xe2\x80\x8e", true},  /* U+200E LRM */
        {"ab\xd8\x9c", true},      /* U+061C ALM */
        {"\xf0\x9f\x98\x80", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].s);
        assert_true(utf8_valid(cases[i].s, n));
        assert_int_equal(utf8_has_controls(cases[i].s, n), cases[i].has);
    }
}

TEST_MAIN(cmocka_unit_test(test_valid), cmocka_unit_test(test_controls))
