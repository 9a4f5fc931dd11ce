/* api_static.c — the dashboard: GET / (index.html) and GET /ui/{asset},
 * served from the files embedded at build time (server/http/web/, see
 * web/web_assets.h). Static data, so responses are zero-copy. HTTP thread. */
#include "api_static.h"
#include "http_reply.h"

#include "web/web_assets.h"

#include <string.h>

/* See api_static.h. */
int api_static_get(struct MHD_Connection *conn, const char *asset)
{
    const char *name = asset ? asset : "index.html";
    for (size_t i = 0; i < web_asset_count; i++)
        if (!strcmp(web_assets[i].name, name))
            return http_admin_reply_bytes(conn, 200, web_assets[i].content_type, web_assets[i].data,
                                          web_assets[i].len, false);
    return http_admin_reply_error(conn, 404, "not found", "no dashboard asset named %.100s", name);
}
