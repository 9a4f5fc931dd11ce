/* admin_reply.c — the pieces every loop-side admin reply is built from: the
 * error object and names as JSON strings. Kept apart from the handlers so
 * each handler file depends on it and on nothing of its siblings. */
#include "admin_reply.h"

#include "error_json.h"
#include "mem.h"
#include "utf8.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

json_t *admin_error_json(int *status, int code, const char *error, const char *detail)
{
    *status = code;
    return rmq_error_json(error, detail);
}

json_t *admin_json_name(const char *name)
{
    const unsigned char *p = (const unsigned char *)name;
    size_t len = strlen(name), bad = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len(p + i);
        bad += n == 0;
        i += n ? n : 1;
    }
    if (!bad)
        return json_string(name);
    char *out = rmq_malloc(len + 3 * bad + 1);
    if (!out)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len(p + i);
        if (n) {
            memcpy(out + j, p + i, n);
            j += n;
            i += n;
        } else {
            j += (size_t)snprintf(out + j, 5, "\\x%02X", p[i]);
            i++;
        }
    }
    out[j] = 0;
    json_t *v = json_string(out);
    rmq_free(out);
    return v;
}
