/* remoting_header.h — the two header encodings of a remoting frame, for
 * the frame layer that picks one by serialize type: JSON
 * (remoting_header_json.h) and ROCKETMQ binary (remoting_header_rmq.h).
 * Declares nothing of its own. */
#ifndef RMQ_REMOTING_HEADER_H
#define RMQ_REMOTING_HEADER_H

#include "remoting_header_json.h"
#include "remoting_header_rmq.h"

#endif
