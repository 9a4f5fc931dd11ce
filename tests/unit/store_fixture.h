/* store_fixture.h — the shared fixture of the store writer's tests
 * (store_fixture.c); include after <cmocka.h>. */
#ifndef RMQ_STORE_FIXTURE_H
#define RMQ_STORE_FIXTURE_H

#include "store.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct fx {
    char dir[4096];
    char path[4200];
};

/* cmocka setup/teardown: a new temporary directory with fx->path inside,
 * and removing everything the test left there. */
int fx_setup(void **state);
int fx_teardown(void **state);
/* A test run on a store of its own (fx_setup, fx_teardown). */
#define FX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

/* store_open that must succeed. */
struct store *open_ok(const char *path);
/* A separate read-only connection, as another process would open one. */
sqlite3 *raw_open(const char *path);
/* The first column of the first row as an integer. */
int64_t raw_int(sqlite3 *db, const char *sql);
/* Copies the first column of the first row into buf ("" for NULL). */
const char *raw_text(sqlite3 *db, const char *sql, char *buf, size_t len);
/* raw_int on a connection of its own. */
int64_t q_int(const char *path, const char *sql);
/* Runs sql on a read-write connection of its own, as another program
 * changing the file behind the store's back would. */
void raw_exec(const char *path, const char *sql);

struct seen_topics {
    int n;
    char name[4][32];
    size_t nb[4];
    char broker[4][4][32];
    int rq[4][4], wq[4][4], perm[4][4];
    int stop_at; /* return 7 from the callback after this many calls (0 = never) */
};

/* store_load_topics callback filling a struct seen_topics. */
int topic_cb(void *ctx, const char *topic, const struct store_topic_broker *b, size_t n);
/* Commits TopicA (two brokers), TopicB (its set replaced by one), TopicC
 * (none) and a deleted TopicD. */
void put_three_topics(struct store *s);

struct seen_offsets {
    int n;
    char key[8][64];
    int64_t off[8];
};

/* store_load_offsets callback filling a struct seen_offsets. */
int offset_cb(void *ctx, const char *group, const char *topic, int queue_id, int64_t offset);

#endif
