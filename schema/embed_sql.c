/* embed_sql.c — build-time tool: turns schema/NNNN_*.sql files into a C file
 * defining `const char *const schema_migrations[]` (in argument order, which
 * meson gives sorted by name) and `const unsigned schema_migration_count`.
 * Each file becomes a NUL-terminated char array of byte values rather than a
 * string literal: ISO C only promises 4095-character literals and the build
 * runs with -Wpedantic -Werror (-Woverlength-strings).
 * Usage: embed_sql OUTPUT.c FILE.sql...  Runs on the build machine only. */
#include "embed_bytes.h"

#include <stdio.h>
#include <stdlib.h>

/* Writes `static const char schema_sql_<index>[] = {...};` for one file. */
static int emit_file(FILE *out, int index, const char *path)
{
    char decl[64];
    snprintf(decl, sizeof decl, "static const char schema_sql_%d[]", index);
    fprintf(out, "/* %s */\n", path);
    return embed_bytes(out, path, decl, true, " ", 12) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    int status;
    FILE *out = embed_begin(argc, argv, "schema/embed_sql.c", "the schema migration files",
                            "extern const char *const schema_migrations[];\n"
                            "extern const unsigned schema_migration_count;\n",
                            &status);
    if (!out)
        return status;
    for (int i = 2; i < argc; i++)
        if (emit_file(out, i - 2, argv[i]) != 0)
            return 1;
    fputs("const char *const schema_migrations[] = {\n", out);
    for (int i = 2; i < argc; i++)
        fprintf(out, "    schema_sql_%d,\n", i - 2);
    fprintf(out, "};\nconst unsigned schema_migration_count = %d;\n", argc - 2);
    return embed_end(out, argv[1]);
}
