/* error_json.c — see error_json.h. Pure; any thread. */
#include "error_json.h"

json_t *rmq_error_json(const char *error, const char *detail)
{
    return json_pack("{s:s,s:s}", "error", error, "detail", detail);
}
