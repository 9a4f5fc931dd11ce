/* api_openapi.h — the OpenAPI document of the route table (api_openapi.c). */
#ifndef RMQ_API_OPENAPI_H
#define RMQ_API_OPENAPI_H

#include <jansson.h>

/* New OpenAPI 3.0 document describing every route of the table. */
json_t *api_openapi_document(void);

#endif
