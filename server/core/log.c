/* log.c — see log.h. */
#include "log.h"

#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static enum log_level current_level = LOG_INFO;

void log_set_level(enum log_level level)
{
    current_level = level;
}
enum log_level log_get_level(void)
{
    return current_level;
}

int log_level_parse(const char *s, enum log_level *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        if (!strcmp(s, names[i])) {
            *out = (enum log_level)i;
            return RMQ_OK;
        }
    }
    return RMQ_EINVAL;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warn ", "info ", "debug"};
    if (level > current_level)
        return;
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03dZ %s ", (int)(tv.tv_usec / 1000), tags[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    /* One event, one line: a peer-chosen string (a client id, a topic)
     * with a newline or other control byte must not forge a line. */
    for (size_t i = (size_t)n; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);
}

void log_limited(struct log_limit *lim, int64_t now_ms, enum log_level level, const char *fmt, ...)
{
    if (now_ms < lim->next_ms) {
        lim->suppressed++;
        return;
    }
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (lim->suppressed)
        log_msg(level, "%s (and %llu more like it in the last %lld ms)", text,
                (unsigned long long)lim->suppressed, (long long)LOG_LIMIT_INTERVAL_MS);
    else
        log_msg(level, "%s", text);
    lim->suppressed = 0;
    lim->next_ms = now_ms + LOG_LIMIT_INTERVAL_MS;
}
