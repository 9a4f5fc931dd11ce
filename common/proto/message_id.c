/* message_id.c — see message_id.h. Pure; one thread. */
#include "message_id.h"

#include "err.h"

#include <string.h>

static const char hex_digits[] = "0123456789ABCDEF";

static char *put_hex(char *w, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        *w++ = hex_digits[p[i] >> 4];
        *w++ = hex_digits[p[i] & 0xF];
    }
    return w;
}

static void be(uint8_t *w, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        w[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

size_t rmq_msg_offset_id(const struct rmq_msg_host *host, int64_t physical_offset, char *out)
{
    uint8_t b[28];
    size_t ip = host->v6 ? 16 : 4;
    memcpy(b, host->ip, ip);
    be(b + ip, (uint32_t)host->port, 4);
    be(b + ip + 4, (uint64_t)physical_offset, 8);
    char *end = put_hex(out, b, ip + 12);
    *end = 0;
    return (size_t)(end - out);
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int rmq_msg_offset_id_parse(const char *s, size_t n, struct rmq_msg_host *host, int64_t *physical_offset)
{
    if (!s || (n != RMQ_MSG_ID_V4_LEN && n != RMQ_MSG_ID_V6_LEN))
        return RMQ_EPROTO;
    uint8_t b[28];
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return RMQ_EPROTO;
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    size_t ip = n == RMQ_MSG_ID_V6_LEN ? 16 : 4;
    *host = (struct rmq_msg_host){.v6 = ip == 16};
    memcpy(host->ip, b, ip);
    uint64_t port = 0, off = 0;
    for (size_t i = 0; i < 4; i++)
        port = port << 8 | b[ip + i];
    for (size_t i = 0; i < 8; i++)
        off = off << 8 | b[ip + 4 + i];
    host->port = (int32_t)(uint32_t)port;
    *physical_offset = (int64_t)off;
    return RMQ_OK;
}

/* Days since 1970-01-01 of y-m-01 (proleptic Gregorian; H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

int64_t rmq_msg_month_start_ms(int64_t ms)
{
    int64_t z = ms / 86400000 + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = (int64_t)yoe + era * 400 + (m <= 2);
    return days_from_civil(y, m) * 86400000;
}

void rmq_msg_uniq_id(const uint8_t ip[4], uint32_t pid, uint32_t salt, int64_t now_ms, uint16_t counter,
                     char *out)
{
    uint8_t b[16];
    memcpy(b, ip, 4);
    be(b + 4, pid & 0xFFFF, 2);
    be(b + 6, salt, 4);
    /* Java keeps the difference in an int: it wraps the same way. */
    be(b + 10, (uint32_t)(now_ms - rmq_msg_month_start_ms(now_ms)), 4);
    be(b + 14, counter, 2);
    *put_hex(out, b, sizeof b) = 0;
}
