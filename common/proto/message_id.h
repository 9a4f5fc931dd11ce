/* message_id.h — the two message ids (docs/protocol.md, "Messages: the
 * stored record and the message id"): the offset id, upper-case hex of the
 * store host and the physical offset, which names where a broker stored a
 * message; and the unique key (property UNIQ_KEY) a producer gives each
 * message. Pure; one thread.
 */
#ifndef RMQ_MESSAGE_ID_H
#define RMQ_MESSAGE_ID_H

#include "message_record.h"

#include <stddef.h>
#include <stdint.h>

/* Characters of an offset id: IPv4 (4 + 4 + 8 bytes) and IPv6 (16 + 4 + 8). */
#define RMQ_MSG_ID_V4_LEN 32
#define RMQ_MSG_ID_V6_LEN 56
/* Characters of a unique key made here (IPv4): 4 + 2 + 4 + 4 + 2 bytes. */
#define RMQ_MSG_UNIQ_LEN 32

/* Writes the offset id of (host, physical_offset) and a NUL into out
 * (room for RMQ_MSG_ID_V6_LEN + 1); returns its length (32 or 56). */
size_t rmq_msg_offset_id(const struct rmq_msg_host *host, int64_t physical_offset, char *out);
/* Parses an offset id of 32 or 56 hex digits (either case). 0 or
 * RMQ_EPROTO. */
int rmq_msg_offset_id_parse(const char *s, size_t n, struct rmq_msg_host *host, int64_t *physical_offset);

/* Writes a unique key as a Java client makes one, and a NUL, into out
 * (room for RMQ_MSG_UNIQ_LEN + 1): ip (4 bytes), the low 16 bits of pid,
 * salt (the 4 bytes a Java client fills with its class loader's hash),
 * now_ms less the start of its month (UTC here; a Java client uses its
 * local time zone), then counter. */
void rmq_msg_uniq_id(const uint8_t ip[4], uint32_t pid, uint32_t salt, int64_t now_ms, uint16_t counter,
                     char *out);
/* The first millisecond (UTC) of the month holding ms (ms >= 0). */
int64_t rmq_msg_month_start_ms(int64_t ms);

#endif
