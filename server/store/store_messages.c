/* store_messages.c — see store_messages.h. The statements are in store.c's
 * table (ST_MSG_*); the reads there select STORE_MSG_COLS, whose order the
 * column numbers below follow.
 *
 * Owned by the loop thread, on the writer's connection. A message without
 * keys is one statement; with keys, the message and its key rows are one
 * savepoint, so a failed put leaves no half of it in the batch.
 */
#include "store_messages.h"

#include "err.h"
#include "mem.h"
#include "message_record.h"
#include "store_exec.h"

#include <assert.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <string.h>

enum msg_col {
    C_PHYSICAL_ID,
    C_TOPIC,
    C_QUEUE_ID,
    C_QUEUE_OFFSET,
    C_SIZE,
    C_BORN_MS,
    C_STORE_MS,
    C_FLAG,
    C_SYS_FLAG,
    C_TAGS_CODE,
    C_RECONSUME_TIMES,
    C_BODY_CRC,
    C_DELIVER_MS,
    C_UNIQ_KEY,
    C_BORN_HOST,
    C_STORE_HOST,
    C_PROPERTIES,
    C_BODY,
};

/* A host as the row keeps it: address bytes then the port, big-endian. */
static size_t host_bytes(const struct rmq_msg_host *h, uint8_t out[20])
{
    size_t n = h->v6 ? 16 : 4;
    memcpy(out, h->ip, n);
    uint32_t p = (uint32_t)h->port;
    out[n] = (uint8_t)(p >> 24);
    out[n + 1] = (uint8_t)(p >> 16);
    out[n + 2] = (uint8_t)(p >> 8);
    out[n + 3] = (uint8_t)p;
    return n + 4;
}

static bool host_from(const uint8_t *b, int len, struct rmq_msg_host *h)
{
    if (!b || (len != 8 && len != 20))
        return false;
    size_t n = (size_t)len - 4;
    *h = (struct rmq_msg_host){.v6 = n == 16};
    memcpy(h->ip, b, n);
    h->port = (int32_t)((uint32_t)b[n] << 24 | (uint32_t)b[n + 1] << 16 | (uint32_t)b[n + 2] << 8 | b[n + 3]);
    return true;
}

/* Inserts one key row per distinct space-separated piece of keys. */
static int put_keys(struct store *s, const char *keys, int64_t physical_id)
{
    int err = 0;
    for (const char *k = keys; *k && !err;) {
        size_t len = strcspn(k, " ");
        if (len)
            err = store_exec_st(s, ST_MSG_KEY_PUT, NULL, "tI", k, len, physical_id);
        k += len;
        k += *k == ' ';
    }
    return err;
}

static bool has_key(const char *keys)
{
    return keys && keys[strspn(keys, " ")];
}

int store_put_message(struct store *s, const struct store_message *m)
{
    size_t topic_len = m->topic ? strlen(m->topic) : 0;
    size_t size = rmq_msg_record_size(m->sys_flag, m->body_len, topic_len, m->properties_len);
    bool born6 = (m->sys_flag & RMQ_MSG_SYS_BORNHOST_V6) != 0,
         store6 = (m->sys_flag & RMQ_MSG_SYS_STOREHOST_V6) != 0;
    if (!size || topic_len == 0 || topic_len > INT16_MAX || m->queue_id < 0 || m->queue_offset < 0 ||
        m->physical_id <= 0 || born6 != m->born_host.v6 || store6 != m->store_host.v6 ||
        (m->body_len && !m->body) || (m->properties_len && !m->properties))
        return store_refuse(s, RMQ_EINVAL, "put message");
    uint8_t born[20], stored[20];
    size_t born_len = host_bytes(&m->born_host, born), store_len = host_bytes(&m->store_host, stored);
    bool keys = has_key(m->keys);
    int err = keys ? store_write_begin(s) : 0;
    if (err)
        return err;
    /* 'n' for deliver_ms 0: at once is SQL NULL (the partial index skips it) */
    const char *fmt = m->deliver_ms ? "IsdIIIIddIddIsbbbb" : "IsdIIIIddIddnsbbbb";
    if (keys)
        err = store_exec_st(
            s, ST_MSG_PUT, NULL, fmt, m->physical_id, m->topic, m->queue_id, m->queue_offset, (int64_t)size,
            m->born_ms, m->store_ms, (int)m->flag, (int)m->sys_flag, m->tags_code, (int)m->reconsume_times,
            (int)m->body_crc, m->deliver_ms, m->uniq_key, (const void *)born, born_len, (const void *)stored,
            store_len, (const void *)m->properties, m->properties_len, (const void *)m->body, m->body_len);
    else
        err = store_write_one(
            s, NULL, ST_MSG_PUT, fmt, m->physical_id, m->topic, m->queue_id, m->queue_offset, (int64_t)size,
            m->born_ms, m->store_ms, (int)m->flag, (int)m->sys_flag, m->tags_code, (int)m->reconsume_times,
            (int)m->body_crc, m->deliver_ms, m->uniq_key, (const void *)born, born_len, (const void *)stored,
            store_len, (const void *)m->properties, m->properties_len, (const void *)m->body, m->body_len);
    if (!keys)
        return err;
    if (!err)
        err = put_keys(s, m->keys, m->physical_id);
    return store_write_end(s, err);
}

int store_load_queue_ranges(struct store *s, store_queue_range_cb cb, void *ctx, int64_t *max_physical_id)
{
    if (!cb)
        return store_refuse(s, RMQ_EINVAL, "load queue ranges");
    sqlite3_stmt *st = s->st[ST_MSG_RANGES];
    int rc, r = 0;
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *topic = (const char *)sqlite3_column_text(st, 0);
        if (!topic)
            r = store_refuse(s, RMQ_ENOMEM, store_stmt_name(ST_MSG_RANGES));
        else
            r = cb(ctx, topic, sqlite3_column_int(st, 1), sqlite3_column_int64(st, 2),
                   sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5));
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = store_fail(s, rc, store_stmt_name(ST_MSG_RANGES));
    (void)sqlite3_reset(st); /* returns the step error again, handled above */
    if (r || !max_physical_id)
        return r;
    st = s->st[ST_MSG_MAX_ID];
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *max_physical_id = sqlite3_column_int64(st, 0);
    else
        r = store_fail(s, rc, store_stmt_name(ST_MSG_MAX_ID));
    (void)sqlite3_reset(st);
    return r;
}

/* The row st is on as a message (pointers into SQLite's copies, valid
 * until the next step). RMQ_ENOMEM when SQLite could not produce a value
 * of a NOT NULL column, RMQ_EIO for a row this code never writes. */
static int row_message(sqlite3_stmt *st, struct store_message *m)
{
    *m = (struct store_message){
        .physical_id = sqlite3_column_int64(st, C_PHYSICAL_ID),
        .topic = (const char *)sqlite3_column_text(st, C_TOPIC),
        .queue_id = sqlite3_column_int(st, C_QUEUE_ID),
        .queue_offset = sqlite3_column_int64(st, C_QUEUE_OFFSET),
        .size = sqlite3_column_int64(st, C_SIZE),
        .born_ms = sqlite3_column_int64(st, C_BORN_MS),
        .store_ms = sqlite3_column_int64(st, C_STORE_MS),
        .flag = sqlite3_column_int(st, C_FLAG),
        .sys_flag = sqlite3_column_int(st, C_SYS_FLAG),
        .tags_code = sqlite3_column_int64(st, C_TAGS_CODE),
        .reconsume_times = sqlite3_column_int(st, C_RECONSUME_TIMES),
        .body_crc = sqlite3_column_int(st, C_BODY_CRC),
        .deliver_ms = sqlite3_column_int64(st, C_DELIVER_MS),
        .uniq_key = (const char *)sqlite3_column_text(st, C_UNIQ_KEY),
    };
    if (!m->topic)
        return RMQ_ENOMEM;
    const uint8_t *born = sqlite3_column_blob(st, C_BORN_HOST);
    int born_len = sqlite3_column_bytes(st, C_BORN_HOST);
    const uint8_t *stored = sqlite3_column_blob(st, C_STORE_HOST);
    int store_len = sqlite3_column_bytes(st, C_STORE_HOST);
    if (!host_from(born, born_len, &m->born_host) || !host_from(stored, store_len, &m->store_host))
        return born_len == 8 || born_len == 20 ? RMQ_ENOMEM : RMQ_EIO;
    m->properties = (const char *)sqlite3_column_blob(st, C_PROPERTIES);
    m->properties_len = (size_t)sqlite3_column_bytes(st, C_PROPERTIES);
    m->body = sqlite3_column_blob(st, C_BODY);
    m->body_len = (size_t)sqlite3_column_bytes(st, C_BODY);
    /* an empty blob reads as NULL; a NULL for a non-empty one is SQLite's OOM */
    if ((m->properties_len && !m->properties) || (m->body_len && !m->body))
        return RMQ_ENOMEM;
    return 0;
}

/* Steps st (bound by the caller), handing each row to cb until max_n rows,
 * max_bytes (0: none) or cb says stop. Resets and clears st. */
static int scan(struct store *s, enum stmt_id id, int max_n, int64_t max_bytes, store_message_cb cb,
                void *ctx, int *n_out)
{
    sqlite3_stmt *st = s->st[id];
    int rc = SQLITE_DONE, r = 0, n = 0;
    int64_t bytes = 0;
    while (r == 0 && n < max_n && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_message m;
        if ((r = row_message(st, &m)) != 0) {
            r = store_refuse(s, r, store_stmt_name(id));
            break;
        }
        if (n > 0 && max_bytes > 0 && bytes + m.size > max_bytes)
            break;
        bytes += m.size;
        n++;
        r = cb(ctx, &m);
    }
    if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = store_fail(s, rc, store_stmt_name(id));
    (void)sqlite3_reset(st); /* returns the step error again, handled above */
    (void)sqlite3_clear_bindings(st);
    if (n_out)
        *n_out = n;
    return r;
}

/* Binds st's parameters from fmt ('s' text, 'd' int, 'I' int64_t). */
static int bind(struct store *s, enum stmt_id id, const char *fmt, ...)
{
    sqlite3_stmt *st = s->st[id];
    va_list ap;
    va_start(ap, fmt);
    int rc = SQLITE_OK;
    for (int i = 0; fmt[i] && rc == SQLITE_OK; i++) {
        if (fmt[i] == 's')
            rc = sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1, SQLITE_STATIC);
        else if (fmt[i] == 'd')
            rc = sqlite3_bind_int(st, i + 1, va_arg(ap, int));
        else
            rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
    }
    va_end(ap);
    if (rc == SQLITE_OK)
        return 0;
    (void)sqlite3_clear_bindings(st);
    return store_fail(s, rc, store_stmt_name(id));
}

int store_read_messages(struct store *s, const char *topic, int queue_id, int64_t from_offset, int max_n,
                        int64_t max_bytes, store_message_cb cb, void *ctx, int *n_out)
{
    if (n_out)
        *n_out = 0;
    if (!topic || !cb || max_n < 0)
        return store_refuse(s, RMQ_EINVAL, "read messages");
    int err = bind(s, ST_MSG_READ, "sdII", topic, queue_id, from_offset, (int64_t)max_n);
    return err ? err : scan(s, ST_MSG_READ, max_n, max_bytes, cb, ctx, n_out);
}

int store_message_by_physical_id(struct store *s, int64_t physical_id, store_message_cb cb, void *ctx)
{
    if (!cb)
        return store_refuse(s, RMQ_EINVAL, "message by id");
    int n = 0;
    int err = bind(s, ST_MSG_BY_ID, "I", physical_id);
    if (!err)
        err = scan(s, ST_MSG_BY_ID, 1, 0, cb, ctx, &n);
    return err ? err : n ? 0 : store_refuse(s, RMQ_ENOTFOUND, "message by id");
}

int store_messages_by_unique_key(struct store *s, const char *uniq_key, int max_n, store_message_cb cb,
                                 void *ctx, int *n_out)
{
    if (n_out)
        *n_out = 0;
    if (!uniq_key || !cb || max_n < 0)
        return store_refuse(s, RMQ_EINVAL, "messages by unique key");
    int err = bind(s, ST_MSG_BY_UNIQ, "sI", uniq_key, (int64_t)max_n);
    return err ? err : scan(s, ST_MSG_BY_UNIQ, max_n, 0, cb, ctx, n_out);
}

int store_messages_by_key(struct store *s, const char *key, int max_n, store_message_cb cb, void *ctx,
                          int *n_out)
{
    if (n_out)
        *n_out = 0;
    if (!key || !cb || max_n < 0)
        return store_refuse(s, RMQ_EINVAL, "messages by key");
    int err = bind(s, ST_MSG_BY_KEY, "sI", key, (int64_t)max_n);
    return err ? err : scan(s, ST_MSG_BY_KEY, max_n, 0, cb, ctx, n_out);
}

int store_message_totals(struct store *s, int64_t *messages, int64_t *bytes)
{
    sqlite3_stmt *st = s->st[ST_MSG_TOTALS];
    int rc = sqlite3_step(st);
    int err = 0;
    if (rc == SQLITE_ROW) {
        *messages = sqlite3_column_int64(st, 0);
        *bytes = sqlite3_column_int64(st, 1);
        assert(*messages >= 0 && *bytes >= 0);
    } else {
        err = store_fail(s, rc == SQLITE_DONE ? SQLITE_ERROR : rc, store_stmt_name(ST_MSG_TOTALS));
    }
    (void)sqlite3_reset(st);
    return err;
}

int store_delete_messages_below(struct store *s, const char *topic, int queue_id, int64_t offset,
                                int *deleted)
{
    int changes = 0;
    int err = store_write_one(s, &changes, ST_MSG_DELETE_BELOW, "sdI", topic, queue_id, offset);
    if (deleted)
        *deleted = err ? 0 : changes;
    return err;
}

/* A message retention picked, kept until its delete succeeded. */
struct gone {
    int64_t physical_id;
    char *topic; /* owned; NULL in store_retain_queue, whose topic is the caller's */
    int queue_id;
    int64_t queue_offset;
    int64_t size;
};

static void gone_free(struct gone *g, int n)
{
    for (int i = 0; g && i < n; i++)
        rmq_free(g[i].topic);
    rmq_free(g);
}

/* Picks from id's rows (bound by the caller, at most limit) while rows <
 * need_rows or bytes < need_bytes, into a new array *out of *n. */
static int pick(struct store *s, enum stmt_id id, int limit, int64_t need_rows, int64_t need_bytes,
                bool global, struct gone **out, int *n)
{
    *n = 0;
    *out = rmq_calloc((size_t)limit, sizeof **out);
    if (!*out) {
        (void)sqlite3_reset(s->st[id]);
        (void)sqlite3_clear_bindings(s->st[id]);
        return store_refuse(s, RMQ_ENOMEM, store_stmt_name(id));
    }
    sqlite3_stmt *st = s->st[id];
    int64_t bytes = 0;
    int rc = SQLITE_DONE, err = 0;
    while (*n < limit && (*n < need_rows || bytes < need_bytes) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct gone *g = &(*out)[*n];
        if (global) {
            const char *topic = (const char *)sqlite3_column_text(st, 1);
            g->physical_id = sqlite3_column_int64(st, 0);
            g->queue_id = sqlite3_column_int(st, 2);
            g->queue_offset = sqlite3_column_int64(st, 3);
            g->size = sqlite3_column_int64(st, 4);
            if (!topic || !(g->topic = rmq_strdup(topic))) {
                err = store_refuse(s, RMQ_ENOMEM, store_stmt_name(id));
                break;
            }
        } else {
            g->queue_offset = sqlite3_column_int64(st, 0);
            g->size = sqlite3_column_int64(st, 1);
        }
        bytes += g->size;
        (*n)++;
    }
    if (!err && rc != SQLITE_DONE && rc != SQLITE_ROW)
        err = store_fail(s, rc, store_stmt_name(id));
    (void)sqlite3_reset(st); /* returns the step error again, handled above */
    (void)sqlite3_clear_bindings(st);
    if (err) {
        gone_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return err;
}

int store_retain_queue(struct store *s, const char *topic, int queue_id, int64_t count, int64_t bytes,
                       int64_t max_count, int64_t max_bytes, int chunk, store_message_gone_cb cb, void *ctx,
                       int *deleted)
{
    if (deleted)
        *deleted = 0;
    if (!topic || chunk <= 0 || chunk == INT32_MAX)
        return store_refuse(s, RMQ_EINVAL, "retain queue");
    int64_t need_rows = max_count > 0 && count > max_count ? count - max_count : 0;
    int64_t need_bytes = max_bytes > 0 && bytes > max_bytes ? bytes - max_bytes : 0;
    if (!need_rows && !need_bytes)
        return 0;
    /* One row more than may go: when the queue has no more, the last is
     * its newest, which stays. */
    int err = bind(s, ST_MSG_OLDEST_IN_QUEUE, "sdI", topic, queue_id, (int64_t)chunk + 1);
    struct gone *g = NULL;
    int n = 0;
    if (!err)
        err = pick(s, ST_MSG_OLDEST_IN_QUEUE, chunk + 1, (int64_t)chunk + 1, 0, false, &g, &n);
    if (err)
        return err;
    int keep = n == chunk + 1 ? chunk : n - 1; /* rows that may go */
    assert(keep < n || n == 0);                /* the queue's newest row is never among them */
    int take = 0;
    int64_t freed = 0;
    while (take < keep && (take < need_rows || freed < need_bytes))
        freed += g[take++].size;
    int changes = 0;
    if (take > 0)
        err = store_write_one(s, &changes, ST_MSG_DELETE_BELOW, "sdI", topic, queue_id,
                              g[take - 1].queue_offset + 1);
    for (int i = 0; !err && cb && i < take; i++)
        cb(ctx, topic, queue_id, g[i].queue_offset, g[i].size);
    if (deleted && !err)
        *deleted = changes;
    gone_free(g, n);
    return err;
}

int store_retain_total(struct store *s, int64_t total_bytes, int64_t max_total_bytes, int chunk,
                       store_message_gone_cb cb, void *ctx, int *deleted)
{
    if (deleted)
        *deleted = 0;
    if (chunk <= 0)
        return store_refuse(s, RMQ_EINVAL, "retain total");
    if (max_total_bytes <= 0 || total_bytes <= max_total_bytes)
        return 0;
    int err = bind(s, ST_MSG_OLDEST, "I", (int64_t)chunk);
    struct gone *g = NULL;
    int n = 0;
    if (!err)
        err = pick(s, ST_MSG_OLDEST, chunk, 0, total_bytes - max_total_bytes, true, &g, &n);
    if (err || n == 0) {
        gone_free(g, n);
        return err;
    }
    err = store_write_begin(s);
    if (err) {
        gone_free(g, n);
        return err;
    }
    for (int i = 0; i < n && !err; i++)
        err = store_exec_st(s, ST_MSG_DELETE_ID, NULL, "I", g[i].physical_id);
    err = store_write_end(s, err);
    for (int i = 0; !err && cb && i < n; i++)
        cb(ctx, g[i].topic, g[i].queue_id, g[i].queue_offset, g[i].size);
    if (deleted && !err)
        *deleted = n;
    gone_free(g, n);
    return err;
}
