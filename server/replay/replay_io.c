/* replay_io.c — see replay_io.h. */
#include "replay_io.h"

#include "array.h"
#include "err.h"
#include "mem.h"
#include "trace_fmt.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int replay_reader_open(struct replay_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->f = fopen(path, "rb");
    if (!r->f)
        return RMQ_EIO;
    /* fopen takes a directory; reading it would fail with a bare EIO. */
    struct stat st;
    if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(r->f);
        r->f = NULL;
        errno = EISDIR;
        return RMQ_EIO;
    }
    r->cap = REPLAY_IO_CHUNK * 2;
    r->buf = rmq_malloc(r->cap);
    return r->buf ? RMQ_OK : RMQ_ENOMEM;
}

void replay_reader_close(struct replay_reader *r)
{
    if (r->f)
        fclose(r->f);
    rmq_free(r->buf);
    memset(r, 0, sizeof *r);
}

int replay_reader_next(struct replay_reader *r, const char **line, size_t *len, bool *complete)
{
    for (;;) {
        char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
        if (nl || (r->eof && r->end > r->start)) {
            *line = r->buf + r->start;
            *len = nl ? (size_t)(nl - *line) : r->end - r->start;
            *complete = nl != NULL;
            r->start = nl ? (size_t)(nl - r->buf) + 1 : r->end;
            r->lineno++;
            return 1;
        }
        if (r->eof)
            return 0;
        if (r->end - r->start > TRACE_FMT_MAX_LINE)
            return RMQ_E2BIG;
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
        /* Room for a whole chunk per read: fewer, larger freads. */
        if (RMQ_GROW(r->buf, r->cap, r->end + REPLAY_IO_CHUNK, REPLAY_IO_CHUNK * 2) != 0)
            return RMQ_ENOMEM;
        size_t n = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
        r->end += n;
        if (n == 0)
            r->eof = true;
        if (n == 0 && ferror(r->f))
            return RMQ_EIO;
    }
}
