/* store_read.c — read-only SQLite access for the HTTP thread.
 *
 * Owned by the thread that opened it (SQLITE_OPEN_NOMUTEX and cached
 * statements: two threads must not share one reader). The connection is
 * SQLITE_OPEN_READONLY, so nothing here can change the database. The file is
 * in WAL mode (store.c sets it), so a read runs against a snapshot of the
 * last commit and neither waits for nor blocks the loop's writer. Each query
 * resets its statement before returning, which ends the read transaction:
 * every call sees a fresh snapshot and none pins the WAL against
 * checkpoints.
 *
 * Results are new jansson references owned by the caller; the allocation goes
 * through jansson's hooks (rmq_mem_install_jansson points them at mem.h).
 */
#include "store_read.h"

#include "array.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

/* A reader waits only briefly: in WAL mode it is blocked only while a
 * connection recovers the WAL index, which is quick. */
#define STORE_READER_BUSY_TIMEOUT_MS 250
#define STORE_READER_MAX_LIMIT 1000

#define EVENTS_SELECT                                                                                        \
    "SELECT id, ts_ms, group_name, kind, client_id, channel_id, before_json, after_json, list_delta, "       \
    "group_seq FROM events "

/* Statements of the admin surface's queries, prepared on first use. */
enum reader_extra {
    RX_LAST_ID,
    RX_HISTORY,
    RX_AT,
    RX_CLIENT,
    RX_COUNT_KIND,
    RX_FULL_BEFORE,
    RX_BETWEEN,
    RX_COUNT
};

struct store_reader {
    sqlite3 *db;
    sqlite3_stmt *events_all;   /* ?1 since id, ?2 limit */
    sqlite3_stmt *events_group; /* ?1 since id, ?2 limit, ?3 group (served by index events_group_id) */
    sqlite3_stmt *extra[RX_COUNT];
};

static int sqlite_err(sqlite3 *db, int rc, const char *what, char *err, size_t errlen)
{
    (void)rmq_fail(err, errlen, RMQ_OK, "%s: %s (%d)", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                   rc);
    return (rc & 0xff) == SQLITE_NOMEM ? RMQ_ENOMEM : RMQ_EIO;
}

void store_reader_close(struct store_reader *r)
{
    if (!r)
        return;
    /* finalize returns the last step's error, already reported */
    (void)sqlite3_finalize(r->events_all);
    (void)sqlite3_finalize(r->events_group);
    for (int i = 0; i < RX_COUNT; i++)
        (void)sqlite3_finalize(r->extra[i]);
    int rc = sqlite3_close(r->db);
    (void)rc; /* SQLITE_OK: every statement is finalized, so close cannot be busy */
    rmq_free(r);
}

/* Opens the read-only connection and prepares its statements; preparing
 * also checks that the schema is there. New *out owned by the caller
 * (store_reader_close). Returns 0, RMQ_EIO or RMQ_ENOMEM, with err filled. */
int store_reader_open(const char *path, struct store_reader **out, char *err, size_t errlen)
{
    if (!out || !path) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store_reader_open: %s", rmq_strerror(RMQ_EINVAL));
        return RMQ_EINVAL;
    }
    *out = NULL;
    if (sqlite3_threadsafe() == 0) { /* NOMUTEX below relies on a thread-capable build */
        (void)rmq_fail(err, errlen, RMQ_OK, "store_reader_open: SQLite was built without thread support");
        return RMQ_EIO;
    }
    struct store_reader *r = rmq_calloc(1, sizeof *r);
    if (!r) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store_reader_open: %s", rmq_strerror(RMQ_ENOMEM));
        return RMQ_ENOMEM;
    }
    int e = 0;
    int rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                             NULL);
    if (rc != SQLITE_OK) {
        e = sqlite_err(r->db, rc, path, err, errlen);
        goto fail;
    }
    if ((rc = sqlite3_busy_timeout(r->db, STORE_READER_BUSY_TIMEOUT_MS)) != SQLITE_OK) {
        e = sqlite_err(r->db, rc, "busy_timeout", err, errlen);
        goto fail;
    }
    rc = sqlite3_prepare_v3(r->db, EVENTS_SELECT "WHERE id > ?1 ORDER BY id LIMIT ?2", -1,
                            SQLITE_PREPARE_PERSISTENT, &r->events_all, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(r->db, EVENTS_SELECT "WHERE group_name = ?3 AND id > ?1 ORDER BY id LIMIT ?2",
                                -1, SQLITE_PREPARE_PERSISTENT, &r->events_group, NULL);
    if (rc != SQLITE_OK) {
        e = sqlite_err(r->db, rc, "prepare events", err, errlen);
        goto fail;
    }
    *out = r;
    return 0;
fail:
    store_reader_close(r);
    return e;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid, by the
 * same rules jansson applies (no overlongs, surrogates or > U+10FFFF). */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
    unsigned c = p[0];
    size_t n;
    unsigned long v;
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0;
    if (c < 0xE0)
        n = 2, v = c & 0x1F;
    else if (c < 0xF0)
        n = 3, v = c & 0x0F;
    else if (c < 0xF5)
        n = 4, v = c & 0x07;
    else
        return 0;
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (n == 3 && v < 0x800) || (n == 4 && v < 0x10000))
        return 0;
    assert(n >= 2 && n <= 4 && n <= left); /* the copy below may take n bytes */
    return n;
}

/* New NUL-terminated copy of the n bytes at t with each invalid UTF-8
 * byte replaced by '?' (caller frees with rmq_free; NULL on OOM). Names
 * arrive from remote clients and are stored as sent; one bad byte must not
 * make the whole event page fail. */
static char *utf8_lossy_copy(const unsigned char *t, size_t n)
{
    char *copy = rmq_malloc(n + 1);
    if (!copy)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(t + i, n - i);
        if (k == 0) {
            copy[i++] = '?';
            continue;
        }
        assert(k <= n - i);
        memcpy(copy + i, t + i, k);
        i += k;
    }
    copy[n] = 0;
    return copy;
}

static json_t *string_lossy(const unsigned char *t, size_t n)
{
    char *copy = utf8_lossy_copy(t, n);
    json_t *v = copy ? json_stringn(copy, n) : NULL;
    rmq_free(copy);
    return v;
}

/* New JSON value for a text column: a string, or null for SQL NULL.
 * NULL only on OOM. */
static json_t *text_value(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return json_null();
    const unsigned char *t = sqlite3_column_text(st, col);
    if (!t)
        return NULL; /* the text conversion ran out of memory */
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    json_t *v = json_stringn((const char *)t, n);
    return v ? v : string_lossy(t, n);
}

/* jansson 2.14 returns NULL without filling the error when its lexer
 * cannot allocate, and sets a code on every other failure: so preset "out
 * of memory" and let a real parse error overwrite it. */
static void jerr_preset(json_error_t *e)
{
    memset(e, 0, sizeof *e);
    e->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_out_of_memory;
}

/* New JSON value parsed from a stored JSON array column; null if the text
 * is somehow not an array (the schema's CHECK makes that a corrupted row).
 * NULL only on OOM. */
static json_t *array_value(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    if (!t)
        return sqlite3_column_type(st, col) == SQLITE_NULL ? json_null() : NULL;
    json_error_t jerr;
    jerr_preset(&jerr);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    json_t *v = json_loadb(t, n, 0, &jerr);
    if (!v && json_error_code(&jerr) == json_error_invalid_utf8) {
        /* client ids are embedded as sent (store_recover's json_group_array) */
        char *copy = utf8_lossy_copy((const unsigned char *)t, n);
        if (!copy)
            return NULL;
        jerr_preset(&jerr);
        v = json_loadb(copy, n, 0, &jerr);
        rmq_free(copy);
    }
    if (!v)
        return json_error_code(&jerr) == json_error_out_of_memory ? NULL : json_null();
    if (!json_is_array(v)) {
        json_decref(v);
        return json_null();
    }
    return v;
}

static sqlite3_stmt *extra_stmt(struct store_reader *r, enum reader_extra i, char *err, size_t errlen);
static void extra_done(sqlite3_stmt *st);

/* ---- member lists of delta events ----------------------------------------
 * A delta event (list_delta not NULL) stores no lists, only where its
 * member went in or out. Its lists are rebuilt from the group's latest
 * full row before it plus the deltas in between. A list_cache keeps, per
 * group, the list after the last event rebuilt during one call, so a page
 * of consecutive events costs one catch-up query per group, not one per
 * event. */

struct list_cache_entry {
    char *group;  /* owned */
    int64_t id;   /* the list is as it was right after event id */
    int64_t seq;  /* that event's group_seq (0: before the group's first; -1: unknown) */
    json_t *list; /* owned; never handed out (callers get copies) */
};

/* The events of a group are numbered 1, 2, ... (group_seq, schema 0003): a
 * delta must follow the event the list is at, or a row is missing and the
 * list would come out wrong. Moves *at to the row's number (column col);
 * RMQ_EPROTO on a gap. An unnumbered row (NULL) checks nothing. */
static int seq_follow(int64_t *at, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) {
        *at = -1;
        return 0;
    }
    int64_t v = sqlite3_column_int64(st, col);
    if (*at >= 0 && v != *at + 1)
        return RMQ_EPROTO;
    *at = v;
    return 0;
}

/* The number of a full row (the list restarts there). */
static int64_t seq_of(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, col);
}

struct list_cache {
    struct list_cache_entry *e; /* owned */
    size_t n, cap;
};

static void list_cache_free(struct list_cache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        rmq_free(c->e[i].group);
        json_decref(c->e[i].list);
    }
    rmq_free(c->e);
    *c = (struct list_cache){0};
}

static struct list_cache_entry *list_cache_find(struct list_cache *c, const char *group)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->e[i].group, group) == 0)
            return &c->e[i];
    return NULL;
}

static void list_cache_drop(struct list_cache *c, struct list_cache_entry *e)
{
    assert(c->n > 0 && e >= c->e && e < c->e + c->n);
    rmq_free(e->group);
    json_decref(e->list);
    *e = c->e[--c->n];
}

/* Applies one event's change to list in place. kind and the client id
 * (column col of st) say what changed; index is the event's list_delta.
 * 0, RMQ_ENOMEM, or RMQ_EPROTO when the delta does not fit the list. */
static int apply_delta(json_t *list, const char *kind, sqlite3_stmt *st, int col, int64_t index)
{
    if (index == -1)
        return 0;
    size_t n = json_array_size(list);
    if (index < 0 || (size_t)index > n || !kind)
        return RMQ_EPROTO;
    if (strcmp(kind, "join") != 0) {
        /* the member taken out must be the event's client */
        const char *gone = json_string_value(json_array_get(list, (size_t)index));
        const char *cid = (const char *)sqlite3_column_text(st, col);
        if (!gone || !cid || strcmp(gone, cid) != 0)
            return RMQ_EPROTO;
        int x = json_array_remove(list, (size_t)index) == 0 ? 0 : RMQ_EPROTO;
        assert(x || json_array_size(list) == n - 1);
        return x;
    }
    json_t *id = text_value(st, col);
    if (!id)
        return RMQ_ENOMEM;
    if (json_is_null(id)) {
        json_decref(id);
        return RMQ_EPROTO;
    }
    int x = json_array_insert_new(list, (size_t)index, id) == 0 ? 0 : RMQ_ENOMEM;
    assert(x || json_array_size(list) == n + 1);
    return x;
}

/* Brings e->list up to just before event to_id: applies every event of
 * e's group after e->id and before to_id. */
static int catch_up(struct store_reader *r, struct list_cache_entry *e, int64_t to_id, char *err,
                    size_t errlen)
{
    sqlite3_stmt *st = extra_stmt(r, RX_BETWEEN, err, errlen);
    if (!st)
        return RMQ_EIO;
    int rc = sqlite3_bind_text(st, 1, e->group, -1, SQLITE_STATIC); /* cleared in extra_done */
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, e->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, to_id);
    int x = 0;
    while (rc == SQLITE_OK && x == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 3) == SQLITE_NULL) {
            json_t *full = array_value(st, 4);
            if (!full)
                x = RMQ_ENOMEM;
            else if (!json_is_array(full))
                x = RMQ_EPROTO;
            json_decref(e->list);
            e->list = full;
            e->seq = seq_of(st, 5);
        } else {
            x = seq_follow(&e->seq, st, 5);
            if (x == 0)
                x = apply_delta(e->list, (const char *)sqlite3_column_text(st, 1), st, 2,
                                sqlite3_column_int64(st, 3));
        }
        if (x == 0)
            e->id = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    if (x == 0 && rc != SQLITE_DONE && rc != SQLITE_OK)
        x = sqlite_err(r->db, rc, "event lists", err, errlen);
    extra_done(st);
    if (x == 0)
        e->id = to_id - 1; /* nothing of the group lies between here and to_id */
    return x;
}

/* The cache entry of group holding the list just before event id; the
 * entry is created from the latest full row before id when missing. */
static int list_before(struct store_reader *r, struct list_cache *c, const char *group, int64_t id,
                       struct list_cache_entry **out, char *err, size_t errlen)
{
    struct list_cache_entry *e = list_cache_find(c, group);
    if (e && e->id >= id) {
        list_cache_drop(c, e); /* the page went backwards: start again from a snapshot */
        e = NULL;
    }
    if (!e) {
        sqlite3_stmt *st = extra_stmt(r, RX_FULL_BEFORE, err, errlen);
        if (!st)
            return RMQ_EIO;
        int rc = sqlite3_bind_text(st, 1, group, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, id);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        int64_t from = 0, seq = 0;
        json_t *list = NULL;
        if (rc == SQLITE_ROW) {
            from = sqlite3_column_int64(st, 0);
            list = array_value(st, 1);
            seq = seq_of(st, 2);
        } else if (rc == SQLITE_DONE) {
            list = json_array(); /* no snapshot at all: the group started empty */
        }
        int x = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sqlite_err(r->db, rc, "event lists", err, errlen);
        extra_done(st);
        if (x == 0 && !list)
            x = RMQ_ENOMEM;
        if (x == 0 && !json_is_array(list))
            x = RMQ_EPROTO;
        char *name = x == 0 ? rmq_strdup(group) : NULL;
        if (x == 0 && !name)
            x = RMQ_ENOMEM;
        if (x == 0 && RMQ_GROW(c->e, c->cap, c->n + 1, 8) != 0)
            x = RMQ_ENOMEM;
        if (x != 0) {
            rmq_free(name);
            json_decref(list);
            return x;
        }
        assert(!list_cache_find(c, group)); /* one entry per group: find returns the first */
        e = &c->e[c->n++];
        *e = (struct list_cache_entry){name, from, seq, list};
        assert(c->n <= c->cap && from < id);
    }
    int x = catch_up(r, e, id, err, errlen);
    if (x != 0) {
        list_cache_drop(c, e);
        return x;
    }
    assert(json_is_array(e->list) && e->group); /* a rebuilt list, never a null one */
    *out = e;
    return 0;
}

/* New references to the before and after lists of the current row of st
 * (EVENTS_SELECT columns): stored ones, or rebuilt for a delta event. A
 * list that cannot be rebuilt (rows missing or inconsistent) is JSON null.
 * 0, or RMQ_ENOMEM / RMQ_EIO (err filled). */
static int row_lists(struct store_reader *r, struct list_cache *c, sqlite3_stmt *st, json_t **before,
                     json_t **after, char *err, size_t errlen)
{
    *before = *after = NULL;
    const char *group = (const char *)sqlite3_column_text(st, 2);
    int64_t id = sqlite3_column_int64(st, 0);
    if (sqlite3_column_type(st, 8) == SQLITE_NULL || !group) {
        *before = array_value(st, 6);
        *after = array_value(st, 7);
        struct list_cache_entry *e = group ? list_cache_find(c, group) : NULL;
        if (e && *after && json_is_array(*after)) {
            json_t *copy = json_copy(*after);
            if (copy) {
                json_decref(e->list);
                e->list = copy;
                e->id = id;
                e->seq = seq_of(st, 9);
            } else {
                list_cache_drop(c, e);
            }
        }
        return *before && *after ? 0 : RMQ_ENOMEM;
    }
    struct list_cache_entry *e = NULL;
    int x = list_before(r, c, group, id, &e, err, errlen);
    if (x == 0) {
        *before = json_copy(e->list);
        x = seq_follow(&e->seq, st, 9);
        if (x == 0)
            x = apply_delta(e->list, (const char *)sqlite3_column_text(st, 3), st, 4,
                            sqlite3_column_int64(st, 8));
        if (x == 0) {
            e->id = id;
            *after = json_copy(e->list);
        } else {
            list_cache_drop(c, e);
        }
        if (x == 0 && (!*before || !*after))
            x = RMQ_ENOMEM;
    }
    if (x == RMQ_EPROTO) {
        json_decref(*before);
        json_decref(*after);
        *before = json_null();
        *after = json_null();
        x = 0;
    }
    return x;
}

/* New JSON object for the current events row, NULL on OOM or a read error
 * (*e says which; err filled for RMQ_EIO). */
static json_t *event_row(struct store_reader *r, struct list_cache *c, sqlite3_stmt *st, int *e, char *err,
                         size_t errlen)
{
    json_t *before = NULL, *after = NULL;
    *e = row_lists(r, c, st, &before, &after, err, errlen);
    json_t *ev = *e == 0 ? json_object() : NULL;
    if (!ev) {
        json_decref(before);
        json_decref(after);
        if (*e == 0)
            *e = RMQ_ENOMEM;
        return NULL;
    }
    /* json_object_set_new steals the value even when it fails, and fails
     * on a NULL value, so each line both checks and cleans up. */
    if (json_object_set_new(ev, "id", json_integer(sqlite3_column_int64(st, 0))) ||
        json_object_set_new(ev, "ts", json_integer(sqlite3_column_int64(st, 1))) ||
        json_object_set_new(ev, "group", text_value(st, 2)) ||
        json_object_set_new(ev, "kind", text_value(st, 3)) ||
        json_object_set_new(ev, "clientId", text_value(st, 4)) ||
        json_object_set_new(ev, "channelId",
                            sqlite3_column_type(st, 5) == SQLITE_NULL
                                ? json_null()
                                : json_integer(sqlite3_column_int64(st, 5))) ||
        json_object_set(ev, "before", before) || json_object_set(ev, "after", after)) {
        json_decref(ev);
        *e = RMQ_ENOMEM;
    }
    /* set (not set_new) above: the chain may stop before reaching them */
    json_decref(before);
    json_decref(after);
    return *e == 0 ? ev : NULL;
}

/* Steps st, appending one object per row to events; *next gets the id of
 * the last row. Returns 0, RMQ_ENOMEM or RMQ_EIO (err filled). */
static int collect_events(struct store_reader *r, sqlite3_stmt *st, json_t *events, int64_t *next, char *err,
                          size_t errlen)
{
    struct list_cache cache = {0};
    int rc, e = 0;
    while (e == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *ev = event_row(r, &cache, st, &e, err, errlen);
        if (e == 0 && json_array_append_new(events, ev) != 0)
            e = RMQ_ENOMEM;
        if (e == 0) {
            /* ORDER BY id: a page only moves forward, as the poller's "next" relies on */
            assert(sqlite3_column_int64(st, 0) > *next);
            *next = sqlite3_column_int64(st, 0);
        }
    }
    list_cache_free(&cache);
    if (e == RMQ_ENOMEM)
        (void)rmq_fail(err, errlen, RMQ_OK, "events: %s", rmq_strerror(RMQ_ENOMEM));
    if (e)
        return e;
    return rc == SQLITE_DONE ? 0 : sqlite_err(r->db, rc, "events", err, errlen);
}

/* See store_read.h. A negative since_id reads from the start; limit is
 * clamped to 1..1000. "next" is the id of the last event returned, or
 * since_id when none is, so a poller can always pass it back unchanged. */
json_t *store_reader_events(struct store_reader *r, const char *group, int64_t since_id, int limit, char *err,
                            size_t errlen)
{
    if (!r) {
        (void)rmq_fail(err, errlen, RMQ_OK, "events: %s", rmq_strerror(RMQ_EINVAL));
        return NULL;
    }
    if (since_id < 0)
        since_id = 0;
    if (limit < 1)
        limit = 1;
    if (limit > STORE_READER_MAX_LIMIT)
        limit = STORE_READER_MAX_LIMIT;
    sqlite3_stmt *st = group ? r->events_group : r->events_all;
    int rc = sqlite3_bind_int64(st, 1, since_id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, limit);
    if (rc == SQLITE_OK && group)
        rc = sqlite3_bind_text(st, 3, group, -1, SQLITE_STATIC); /* cleared below, before group goes away */
    json_t *events = NULL, *out = NULL;
    int64_t next = since_id;
    int e = 0;
    if (rc != SQLITE_OK)
        e = sqlite_err(r->db, rc, "events bind", err, errlen);
    else if (!(events = json_array()))
        e = RMQ_ENOMEM;
    else
        e = collect_events(r, st, events, &next, err, errlen);
    assert(e || json_array_size(events) <= (size_t)limit);
    /* Ends the read transaction. reset repeats the step error (handled);
     * clear_bindings always returns SQLITE_OK. */
    (void)sqlite3_reset(st);
    (void)sqlite3_clear_bindings(st);
    if (!e) {
        json_t *owned = events; /* from here on owned by out (set_new steals even on failure) */
        events = NULL;
        if (!(out = json_object())) {
            json_decref(owned);
            e = RMQ_ENOMEM;
        } else if (json_object_set_new(out, "events", owned) ||
                   json_object_set_new(out, "next", json_integer(next))) {
            e = RMQ_ENOMEM;
        }
    }
    if (e) {
        if (e == RMQ_ENOMEM)
            (void)rmq_fail(err, errlen, RMQ_OK, "events: %s", rmq_strerror(RMQ_ENOMEM));
        json_decref(events);
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ---- admin surface queries (history, membership at t, clients) ---------- */

static const char *const extra_sql[RX_COUNT] = {
    [RX_LAST_ID] = "SELECT coalesce(max(id), 0) FROM events",
    [RX_HISTORY] = EVENTS_SELECT "WHERE group_name = ?1 AND id > ?2 AND ts_ms >= ?3 AND ts_ms <= ?4 "
                                 "ORDER BY id LIMIT ?5",
    /* The latest change at or before t gives the member list as it was then. */
    [RX_AT] = EVENTS_SELECT "WHERE group_name = ?1 AND ts_ms <= ?2 ORDER BY id DESC LIMIT 1",
    [RX_CLIENT] =
        "SELECT language, version, first_seen_ms, last_heartbeat_ms FROM clients WHERE client_id = ?1",
    [RX_COUNT_KIND] = "SELECT count(*) FROM events WHERE group_name = ?1 AND kind = ?2 AND ts_ms >= ?3",
    /* Rebuilding the lists of delta events (schema/0002_event_deltas.sql). */
    [RX_FULL_BEFORE] = "SELECT id, after_json, group_seq FROM events WHERE group_name = ?1 AND id < ?2 AND "
                       "list_delta IS NULL "
                       "ORDER BY id DESC LIMIT 1",
    [RX_BETWEEN] =
        "SELECT id, kind, client_id, list_delta, after_json, group_seq FROM events WHERE group_name = ?1 "
        "AND id > ?2 AND id < ?3 ORDER BY id",
};

/* The cached statement i, prepared on first use; NULL with err set. */
static sqlite3_stmt *extra_stmt(struct store_reader *r, enum reader_extra i, char *err, size_t errlen)
{
    if (!r) {
        (void)rmq_fail(err, errlen, RMQ_OK, "store reader: %s", rmq_strerror(RMQ_EINVAL));
        return NULL;
    }
    if (!r->extra[i]) {
        int rc = sqlite3_prepare_v3(r->db, extra_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &r->extra[i], NULL);
        if (rc != SQLITE_OK) {
            (void)sqlite_err(r->db, rc, "prepare", err, errlen);
            r->extra[i] = NULL;
            return NULL;
        }
    }
    return r->extra[i];
}

/* Ends the statement's read transaction (see the file comment). */
static void extra_done(sqlite3_stmt *st)
{
    (void)sqlite3_reset(st); /* repeats the step error, already handled */
    (void)sqlite3_clear_bindings(st);
}

/* Ends a one-integer query of st whose last step gave rc: *out gets the
 * value. 0, or the error (said in err, what naming the query). */
static int extra_int64(struct store_reader *r, sqlite3_stmt *st, int rc, const char *what, int64_t *out,
                       char *err, size_t errlen)
{
    int e = 0;
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else
        e = sqlite_err(r->db, rc, what, err, errlen);
    extra_done(st);
    return e;
}

int store_reader_last_event_id(struct store_reader *r, int64_t *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = extra_stmt(r, RX_LAST_ID, err, errlen);
    if (!st)
        return RMQ_EIO;
    return extra_int64(r, st, sqlite3_step(st), "last event id", out, err, errlen);
}

/* See store_read.h. */
json_t *store_reader_group_history(struct store_reader *r, const char *group, int64_t from_ms, int64_t to_ms,
                                   int64_t after_id, int limit, char *err, size_t errlen)
{
    sqlite3_stmt *st = extra_stmt(r, RX_HISTORY, err, errlen);
    if (!st)
        return NULL;
    if (limit < 1)
        limit = 1;
    if (limit > STORE_READER_MAX_LIMIT)
        limit = STORE_READER_MAX_LIMIT;
    int rc = sqlite3_bind_text(st, 1, group, -1, SQLITE_STATIC); /* cleared in extra_done */
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, after_id < 0 ? 0 : after_id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, from_ms);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, to_ms);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 5, limit);
    json_t *events = json_array(), *out = NULL;
    int64_t last = after_id;
    int e = rc != SQLITE_OK ? sqlite_err(r->db, rc, "history bind", err, errlen) : events ? 0 : RMQ_ENOMEM;
    if (!e)
        e = collect_events(r, st, events, &last, err, errlen);
    extra_done(st);
    if (!e && !(out = json_pack("{s:O,s:I}", "events", events, "lastId", (json_int_t)last)))
        e = RMQ_ENOMEM;
    json_decref(events);
    if (e == RMQ_ENOMEM)
        (void)rmq_fail(err, errlen, RMQ_OK, "history: %s", rmq_strerror(RMQ_ENOMEM));
    return e ? NULL : out;
}

/* See store_read.h. */
json_t *store_reader_members_at(struct store_reader *r, const char *group, int64_t t_ms, char *err,
                                size_t errlen)
{
    sqlite3_stmt *st = extra_stmt(r, RX_AT, err, errlen);
    if (!st)
        return NULL;
    int rc = sqlite3_bind_text(st, 1, group, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, t_ms);
    json_t *out = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        struct list_cache cache = {0};
        json_t *before = NULL, *members = NULL;
        int e = row_lists(r, &cache, st, &before, &members, err, errlen);
        list_cache_free(&cache);
        json_decref(before);
        out = e == 0 ? json_pack("{s:o,s:I,s:I}", "members", members, "eventId",
                                 (json_int_t)sqlite3_column_int64(st, 0), "eventTs",
                                 (json_int_t)sqlite3_column_int64(st, 1))
                     : NULL;
        if (e != 0)
            json_decref(members);
        if (!out && e != RMQ_EIO)
            (void)rmq_fail(err, errlen, RMQ_OK, "members at: %s", rmq_strerror(RMQ_ENOMEM));
    } else if (rc == SQLITE_DONE) {
        out = json_pack("{s:[],s:n,s:n}", "members", "eventId", "eventTs");
    } else {
        (void)sqlite_err(r->db, rc, "members at", err, errlen);
    }
    extra_done(st);
    return out;
}

/* See store_read.h. */
json_t *store_reader_client(struct store_reader *r, const char *client_id, char *err, size_t errlen)
{
    sqlite3_stmt *st = extra_stmt(r, RX_CLIENT, err, errlen);
    if (!st)
        return NULL;
    int rc = sqlite3_bind_text(st, 1, client_id, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    json_t *out = NULL;
    if (rc == SQLITE_ROW) {
        out = json_object();
        if (out && (json_object_set_new(out, "language", text_value(st, 0)) ||
                    json_object_set_new(out, "version", json_integer(sqlite3_column_int64(st, 1))) ||
                    json_object_set_new(out, "firstSeenMs", json_integer(sqlite3_column_int64(st, 2))) ||
                    json_object_set_new(out, "lastHeartbeatMs", json_integer(sqlite3_column_int64(st, 3))))) {
            json_decref(out);
            out = NULL;
        }
        if (!out)
            (void)rmq_fail(err, errlen, RMQ_OK, "client: %s", rmq_strerror(RMQ_ENOMEM));
    } else if (rc == SQLITE_DONE) {
        out = json_null();
    } else {
        (void)sqlite_err(r->db, rc, "client", err, errlen);
    }
    extra_done(st);
    return out;
}

int store_reader_count_events(struct store_reader *r, const char *group, const char *kind, int64_t since_ms,
                              int64_t *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = extra_stmt(r, RX_COUNT_KIND, err, errlen);
    if (!st)
        return RMQ_EIO;
    int rc = sqlite3_bind_text(st, 1, group, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, since_ms);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    return extra_int64(r, st, rc, "count events", out, err, errlen);
}
