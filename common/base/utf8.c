/* utf8.c — UTF-8 validity (see utf8.h). Pure. */
#include "utf8.h"

size_t utf8_seq_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t n = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)))
        return 0;
    if (n == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)))
        return 0;
    return n;
}

unsigned utf8_decode(const unsigned char *p, size_t k)
{
    static const unsigned lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    unsigned cp = p[0] & lead_mask[k];
    for (size_t i = 1; i < k; i++)
        cp = cp << 6 | (p[i] & 0x3F);
    return cp;
}

bool utf8_has_controls(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t k = utf8_seq_len(p);
        if (k == 0 || k > (size_t)(end - p))
            return false; /* not valid UTF-8: utf8_valid's to say */
        unsigned cp = utf8_decode(p, k);
        if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x61C || cp == 0x200E || cp == 0x200F ||
            (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
            return true;
        p += k;
    }
    return false;
}

bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        if (*p == 0)
            return false;
        size_t k = utf8_seq_len(p);
        if (k == 0 || k > (size_t)(end - p))
            return false;
        p += k;
    }
    return true;
}
