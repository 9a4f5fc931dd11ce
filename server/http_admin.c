/* http_admin.c — placeholder until the module lands. */
typedef int rmq_placeholder_http_admin;
