/* api_static.h — the dashboard (api_static.c): the files of web/
 * embedded at build time. HTTP thread; the int result is MHD_Result. */
#ifndef RMQ_API_STATIC_H
#define RMQ_API_STATIC_H

struct MHD_Connection;

/* Answers GET / (asset NULL) or GET /ui/{asset}. */
int api_static_get(struct MHD_Connection *conn, const char *asset);

#endif
