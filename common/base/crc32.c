/* crc32.c — CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by
 * bit: it runs once per broker registration, where a table buys nothing. */
#include "crc32.h"

int32_t crc32_rocketmq(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return (int32_t)((crc ^ 0xFFFFFFFFu) & 0x7FFFFFFFu);
}
