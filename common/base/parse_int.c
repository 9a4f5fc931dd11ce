/* parse_int.c — see parse_int.h. Pure; any thread. */
#include "parse_int.h"

#include "err.h"

#include <stdbool.h>
#include <string.h>

int rmq_parse_i64_n(const char *s, size_t n, int64_t min, int64_t max, int64_t *out)
{
    if (!s || n == 0)
        return RMQ_EINVAL;
    bool neg = s[0] == '-';
    size_t i = neg || s[0] == '+' ? 1 : 0;
    if (i == n)
        return RMQ_EINVAL;
    /* The magnitude is gathered unsigned so INT64_MIN parses without overflow. */
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, mag = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return RMQ_EINVAL;
        unsigned d = (unsigned)(s[i] - '0');
        if (mag > (lim - d) / 10)
            return RMQ_EINVAL;
        mag = mag * 10 + d;
    }
    int64_t v = !neg ? (int64_t)mag : mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    if (v < min || v > max)
        return RMQ_EINVAL;
    *out = v;
    return RMQ_OK;
}

int rmq_parse_i64_range(const char *s, int64_t min, int64_t max, int64_t *out)
{
    return s ? rmq_parse_i64_n(s, strlen(s), min, max, out) : RMQ_EINVAL;
}
