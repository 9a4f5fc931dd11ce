/* remoting_header_rmq.c — the ROCKETMQ binary header (serialize type 1)
 * <-> rmq_cmd.
 *
 * Layout (PROTOCOL: docs/protocol.md §1.3, big-endian): code i16, language u8, version i16,
 * opaque i32, flag i32, remark_len i32 + remark, ext_len i32 + entries of
 * (key_len i16, key, val_len i32, val). Every length is signed on the wire
 * and is checked against the bytes that remain before it is used. Pure; one
 * thread.
 */
#include "remoting_header_rmq.h"

#include "err.h"
#include "mem.h"

#include <assert.h>
#include <limits.h>
#include <string.h>

#define RMQ_HEADER_FIXED 21

/* Bounds-checked cursor over the header bytes. */
struct rd {
    const uint8_t *p;
    size_t left;
};

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t load_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Reads a signed length of `width` (2 or 4) bytes and checks it against the
 * remaining input. */
static int read_len(struct rd *r, int width, size_t *out, const char *what, char *err, size_t errlen)
{
    if (r->left < (size_t)width)
        return rmq_fail(err, errlen, RMQ_EPROTO, "header: truncated before %s length", what);
    int32_t n = width == 2 ? (int16_t)load_be16(r->p) : (int32_t)load_be32(r->p);
    r->p += width;
    r->left -= (size_t)width;
    if (n < 0)
        return rmq_fail(err, errlen, RMQ_EPROTO, "header: negative %s length %d", what, (int)n);
    if ((size_t)n > r->left)
        return rmq_fail(err, errlen, RMQ_EPROTO, "header: %s length %d exceeds the %zu bytes left", what,
                        (int)n, r->left);
    *out = (size_t)n;
    assert(*out <= r->left); /* what follows may take it without another check */
    return RMQ_OK;
}

/* Takes n bytes as a new C string. A NUL inside would silently shorten the
 * value, so it is refused rather than misread. */
static int take_str(struct rd *r, size_t n, char **out, const char *what, char *err, size_t errlen)
{
    assert(n <= r->left); /* read_len checked it */
    if (memchr(r->p, 0, n))
        return rmq_fail(err, errlen, RMQ_EPROTO, "header: NUL byte inside %s", what);
    *out = rmq_strndup((const char *)r->p, n);
    if (!*out)
        return rmq_fail(err, errlen, RMQ_ENOMEM, "out of memory");
    r->p += n;
    r->left -= n;
    return RMQ_OK;
}

/* One extFields entry; PROTOCOL (docs/protocol.md §1.3): a duplicate key replaces the earlier one. */
static int read_entry(struct rd *r, struct rmq_cmd *cmd, char *err, size_t errlen)
{
    size_t klen, vlen;
    char *key = NULL, *val = NULL;
    int rc;
    if ((rc = read_len(r, 2, &klen, "extFields key", err, errlen)) ||
        (rc = take_str(r, klen, &key, "extFields key", err, errlen)))
        return rc;
    if ((rc = read_len(r, 4, &vlen, "extFields value", err, errlen)) ||
        (rc = take_str(r, vlen, &val, "extFields value", err, errlen)))
        goto out;
    rc = rmq_cmd_ext_append(cmd, key, val);
    if (rc)
        rc = rmq_fail(err, errlen, rc, "out of memory");
out:
    rmq_free(val);
    rmq_free(key);
    return rc;
}

static int read_variable(struct rd *r, struct rmq_cmd *cmd, char *err, size_t errlen)
{
    size_t n;
    int rc = read_len(r, 4, &n, "remark", err, errlen);
    if (rc)
        return rc;
    /* PROTOCOL (docs/protocol.md §1.3): a zero-length string decodes as null. */
    if (n && (rc = take_str(r, n, &cmd->remark, "remark", err, errlen)))
        return rc;
    if ((rc = read_len(r, 4, &n, "extFields", err, errlen)))
        return rc;
    /* Entries must tile the map area exactly; bytes after it are ignored,
     * as a Java peer reading a bounded buffer ignores them. */
    struct rd map = {r->p, n};
    while (map.left) {
        size_t before = map.left;
        if ((rc = read_entry(&map, cmd, err, errlen)))
            return rc;
        assert(map.left < before && map.p + map.left == r->p + n); /* progress, within the map */
        (void)before;
    }
    return RMQ_OK;
}

/* Decodes p[0..len) into cmd (initialised, empty). On failure cmd is
 * cleared again. */
int rmq_header_rmq_decode(const uint8_t *p, size_t len, struct rmq_cmd *cmd, char *err, size_t errlen)
{
    /* The two length words of the fixed part are checked as they are read. */
    if (len < RMQ_HEADER_FIXED - 8)
        return rmq_fail(err, errlen, RMQ_EPROTO,
                        "header: %zu bytes, shorter than the binary header's %d-byte fixed part", len,
                        RMQ_HEADER_FIXED);
    cmd->code = (int16_t)load_be16(p);
    cmd->language = p[2];
    cmd->version = (int16_t)load_be16(p + 3);
    cmd->opaque = (int32_t)load_be32(p + 5);
    cmd->flag = (int32_t)load_be32(p + 9);
    struct rd r = {p + 13, len - 13};
    int rc = read_variable(&r, cmd, err, errlen);
    if (rc == 0 && rmq_cmd_ext_dedupe(cmd) != 0)
        rc = rmq_fail(err, errlen, RMQ_ENOMEM, "out of memory");
    if (rc) {
        rmq_cmd_clear(cmd);
        return rc;
    }
    cmd->serialize_type = RMQ_SERIALIZE_ROCKETMQ;
    return RMQ_OK;
}

static int append_bytes32(struct buf *out, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    int rc = buf_append_be32(out, (uint32_t)n);
    return rc ? rc : buf_append(out, s, n);
}

/* Appends the binary header. code and version are narrowed to int16 as a
 * Java peer does; a key over 32767 bytes or a map over 2 GiB cannot be
 * represented and fails with RMQ_EINVAL. On failure the buffer is restored. */
int rmq_header_rmq_encode(const struct rmq_cmd *cmd, struct buf *out)
{
    size_t map_len = 0;
    for (size_t i = 0; i < cmd->ext_len; i++) {
        size_t kl = strlen(cmd->ext[i].key), vl = strlen(cmd->ext[i].val);
        if (kl > INT16_MAX || vl > INT32_MAX || 6 + kl + vl > (size_t)INT32_MAX - map_len)
            return RMQ_EINVAL;
        map_len += 6 + kl + vl;
    }
    if (cmd->remark && strlen(cmd->remark) > INT32_MAX)
        return RMQ_EINVAL;
    size_t mark = buf_live(out);
    int rc = buf_append_be16(out, (uint16_t)cmd->code);
    if (!rc)
        rc = buf_append_u8(out, (uint8_t)cmd->language);
    if (!rc)
        rc = buf_append_be16(out, (uint16_t)cmd->version);
    if (!rc)
        rc = buf_append_be32(out, (uint32_t)cmd->opaque);
    if (!rc)
        rc = buf_append_be32(out, (uint32_t)cmd->flag);
    if (!rc)
        rc = append_bytes32(out, cmd->remark);
    if (!rc)
        rc = buf_append_be32(out, (uint32_t)map_len);
    for (size_t i = 0; !rc && i < cmd->ext_len; i++) {
        const char *k = cmd->ext[i].key;
        rc = buf_append_be16(out, (uint16_t)strlen(k));
        if (!rc)
            rc = buf_append(out, k, strlen(k));
        if (!rc)
            rc = append_bytes32(out, cmd->ext[i].val);
    }
    /* The map length written up front is what the entries took. */
    assert(rc ||
           buf_live(out) - mark == RMQ_HEADER_FIXED + (cmd->remark ? strlen(cmd->remark) : 0) + map_len);
    return buf_undo_on_error(out, mark, rc);
}
