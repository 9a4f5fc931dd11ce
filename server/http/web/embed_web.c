/* embed_web.c — build-time tool: turns the dashboard's files into a C file
 * defining `web_assets[]` (see web_assets.h), each file an array of byte
 * values (ISO C caps string literals at 4095 characters, and the build runs
 * with -Wpedantic -Werror). The content type comes from the extension.
 * Usage: embed_web OUTPUT.c FILE...   Runs on the build machine only. */
#include "embed_bytes.h"

#include <stdio.h>
#include <string.h>

static const char *content_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && !strcmp(dot, ".html"))
        return "text/html; charset=utf-8";
    if (dot && !strcmp(dot, ".css"))
        return "text/css; charset=utf-8";
    if (dot && !strcmp(dot, ".js"))
        return "text/javascript; charset=utf-8";
    if (dot && !strcmp(dot, ".svg"))
        return "image/svg+xml";
    return "application/octet-stream";
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Writes `static const unsigned char web_file_<i>[]`; returns its length or -1. */
static long emit_file(FILE *out, int index, const char *path)
{
    char decl[64];
    snprintf(decl, sizeof decl, "static const unsigned char web_file_%d[]", index);
    fprintf(out, "/* %s */\n", base_name(path));
    return embed_bytes(out, path, decl, false, "", 16);
}

int main(int argc, char **argv)
{
    int status;
    FILE *out = embed_begin(argc, argv, "server/http/web/embed_web.c", "the dashboard files",
                            "#include \"web/web_assets.h\"\n", &status);
    if (!out)
        return status;
    long len[64];
    if (argc - 2 > 64) {
        fprintf(stderr, "embed_web: at most 64 files\n");
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if ((len[i - 2] = emit_file(out, i - 2, argv[i])) < 0)
            return 1;
    fputs("const struct web_asset web_assets[] = {\n", out);
    for (int i = 2; i < argc; i++)
        fprintf(out, "    {\"%s\", \"%s\", web_file_%d, %ld},\n", base_name(argv[i]), content_type(argv[i]),
                i - 2, len[i - 2]);
    fprintf(out, "};\nconst size_t web_asset_count = %d;\n", argc - 2);
    return embed_end(out, argv[1]);
}
