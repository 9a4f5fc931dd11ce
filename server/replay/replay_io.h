/* replay_io.h — reading a trace file line by line for replay: 1 MiB
 * reads, lines handed out in place (no copy, no per-line allocation), lines
 * up to TRACE_FMT_MAX_LINE. Main thread of the replay commands. */
#ifndef RMQ_REPLAY_IO_H
#define RMQ_REPLAY_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define REPLAY_IO_CHUNK ((size_t)1 << 20)

struct replay_reader {
    FILE *f;
    char *buf; /* owned */
    size_t cap, start, end;
    bool eof;
    size_t lineno; /* of the line last returned, 1-based */
};

/* Opens path. 0, RMQ_EIO (errno set) or RMQ_ENOMEM; close it either way. */
int replay_reader_open(struct replay_reader *r, const char *path);
void replay_reader_close(struct replay_reader *r);
/* Next line (without its newline) in *line and *len, borrowed until the next
 * call; *complete is false for a last line the file ends in without a
 * newline. 1 = a line, 0 = end of file, RMQ_E2BIG / RMQ_EIO / RMQ_ENOMEM. */
int replay_reader_next(struct replay_reader *r, const char **line, size_t *len, bool *complete);

#endif
