/* admin_live.c — placeholder until the module lands. */
typedef int rmq_placeholder_admin_live;
