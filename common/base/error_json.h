/* error_json.h — JSON values more than one surface builds the same way.
 * Pure; any thread (jansson objects are not shared between threads). */
#ifndef RMQ_ERROR_JSON_H
#define RMQ_ERROR_JSON_H

#include <jansson.h>

/* New {"error": error, "detail": detail} object: the body of every admin
 * error answer, loop side and HTTP side alike. The caller owns the
 * reference; NULL when out of memory. */
json_t *rmq_error_json(const char *error, const char *detail);

#endif
