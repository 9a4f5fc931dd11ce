/* remoting_header_json_fast.h — see remoting_header_json_fast.c. */
#ifndef RMQ_REMOTING_HEADER_JSON_FAST_H
#define RMQ_REMOTING_HEADER_JSON_FAST_H

#include "remoting_cmd.h"

#include <stddef.h>
#include <stdint.h>

/* Decodes the common flat header shape into cmd (initialised, empty).
 * 0 on success; RMQ_EAGAIN when the input is anything else (cmd cleared:
 * use rmq_header_json_decode's full path); RMQ_ENOMEM (cmd cleared). */
int rmq_header_json_decode_fast(const uint8_t *p, size_t len, struct rmq_cmd *cmd);

#endif
