/* test_support.h — shared fixtures for the cmocka unit tests. */
#ifndef RMQ_TEST_SUPPORT_H
#define RMQ_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* Path of a file under tests/data (from $RMQ_TEST_DATA); static buffer. */
const char *test_data_path(const char *rel);
/* New malloc'd contents of a whole file (NUL-terminated); *len gets the size. NULL on failure. */
char *test_read_file(const char *path, size_t *len);
/* New temporary directory (mkdtemp under $TMPDIR or /tmp); static buffer. */
const char *test_tmpdir(void);
/* Decodes hex text into a new malloc'd buffer; NULL on bad hex. */
uint8_t *test_hex_decode(const char *hex, size_t *len);
/* Seeded xorshift64 for the property tests: set test_rng_state (non-zero),
 * then test_rnd(n) draws from 0..n-1. */
extern uint64_t test_rng_state;
uint32_t test_rnd(uint32_t n);

#endif
