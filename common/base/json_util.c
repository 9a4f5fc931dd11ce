/* json_util.c — see json_util.h. Pure; any thread. */
#include "json_util.h"

json_t *rmq_error_json(const char *error, const char *detail)
{
    return json_pack("{s:s,s:s}", "error", error, "detail", detail);
}
