/* request_dispatch.h — routes a request code to its handler. Loop thread only. */
#ifndef RMQ_REQUEST_DISPATCH_H
#define RMQ_REQUEST_DISPATCH_H

#include "broker.h"

typedef void (*handler_fn)(struct broker *s, struct conn *c, struct rmq_cmd *req);

/* Runs the handler of req->code; an unknown code gets
 * REQUEST_CODE_NOT_SUPPORTED with a remark naming it. */
void dispatch_request(struct broker *s, struct conn *c, struct rmq_cmd *req);

#endif
