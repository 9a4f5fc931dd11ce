/* crc32.h — CRC-32 as java.util.zip.CRC32 computes it. Pure. */
#ifndef RMQ_CRC32_H
#define RMQ_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 (IEEE) of p[0..n) masked with 0x7fffffff, as RocketMQ's
 * UtilAll.crc32 reports it (e.g. bodyCrc32 of REGISTER_BROKER). */
int32_t crc32_rocketmq(const uint8_t *p, size_t n);

#endif
