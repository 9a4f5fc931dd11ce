/* md5.c — placeholder until the module lands. */
typedef int rmq_placeholder_md5;
