/* api_dispatch.h — the router (api_dispatch.c): checks a request,
 * answers it from the HTTP thread or posts it to the loop, and turns the
 * loop's answer into the response. HTTP thread; int results are MHD_Result. */
#ifndef RMQ_API_DISPATCH_H
#define RMQ_API_DISPATCH_H

#include "api_host.h"
#include "api_routes.h"

#include <jansson.h>
#include <stddef.h>

struct MHD_Connection;

void api_post_clear(struct api_post *post);

/* Answers one complete request (body may be NULL); sets
 * *route_out to the matched route (API_ROUTE_NONE for a 404). */
int api_dispatch(const struct api_env *env, struct MHD_Connection *conn, void *req, const char *url,
                 const char *method, const char *body, size_t body_len, enum api_route *route_out);
/* Turns the loop's answer (reply stolen) into the response. */
int api_finish(const struct api_env *env, struct MHD_Connection *conn, int status, json_t *reply,
               struct api_post *post);

#endif
