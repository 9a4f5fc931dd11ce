/* http_reply.h — the admin API's responses (http_reply.c). HTTP
 * thread, inside the MHD access handler. MHD types are only forward-declared
 * so that microhttpd.h stays in the .c files; the int results are MHD's enum
 * MHD_Result values (1 = MHD_YES, 0 = MHD_NO: close the connection), to be
 * returned from the access handler as they are. */
#ifndef RMQ_HTTP_REPLY_H
#define RMQ_HTTP_REPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct MHD_Connection;

/* Queues v (stolen; NULL = out of memory, answered 500) as a compact JSON
 * response with Content-Type application/json. */
int http_admin_reply_json(struct MHD_Connection *conn, unsigned status, json_t *v);

/* Queues {"error":code,"detail":<fmt ...>} with status. code is a short
 * message ("bad parameter"), detail says what was wrong and how to fix it. */
__attribute__((format(printf, 4, 5))) int http_admin_reply_error(struct MHD_Connection *conn, unsigned status,
                                                                 const char *code, const char *fmt, ...);

/* 405 with an Allow header; 401 with WWW-Authenticate: Bearer. */
int http_admin_reply_method_not_allowed(struct MHD_Connection *conn, const char *method, const char *allow);
int http_admin_reply_unauthorized(struct MHD_Connection *conn, const char *detail);

/* Queues len bytes of data with content_type. copy: MHD copies the bytes
 * (else they must outlive the response: static data only). */
int http_admin_reply_bytes(struct MHD_Connection *conn, unsigned status, const char *content_type,
                           const void *data, size_t len, bool copy);

#endif
