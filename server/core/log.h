/* log.h — levelled one-line logs to stderr.
 *
 * One line per event: "2026-12-02T14:00:00.123Z info  message". Membership
 * changes are logged at info. The level is process-wide and set once at
 * start, before threads exist; log calls are safe from any thread (each
 * line is one fprintf of a preformatted buffer).
 */
#ifndef RMQ_LOG_H
#define RMQ_LOG_H

#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error"/"warn"/"info"/"debug". 0, or RMQ_EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A repeated condition (a limit hit by every new connection, accept
 * failing while out of descriptors) is logged at most once per
 * LOG_LIMIT_INTERVAL_MS per limiter; the next line says how many were
 * suppressed. A limiter belongs to one thread; zero-initialise it. */
#define LOG_LIMIT_INTERVAL_MS 1000
struct log_limit {
    int64_t next_ms;
    uint64_t suppressed;
};
void log_limited(struct log_limit *lim, int64_t now_ms, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                                                                       \
    do {                                                                                                     \
        if (log_get_level() >= LOG_DEBUG)                                                                    \
            log_msg(LOG_DEBUG, __VA_ARGS__);                                                                 \
    } while (0)

#endif
