/* allocate_json.c — placeholder until the module lands. */
typedef int rmq_placeholder_allocate_json;
