/* err.c — descriptions for the error codes of err.h. Pure; any thread. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *rmq_strerror(int err)
{
    switch (err) {
    case RMQ_OK: return "success";
    case RMQ_EAGAIN: return "incomplete input, need more bytes";
    case RMQ_ENOMEM: return "out of memory";
    case RMQ_EINVAL: return "invalid argument or field";
    case RMQ_E2BIG: return "over a configured limit";
    case RMQ_EPROTO: return "malformed protocol data";
    case RMQ_ENOTFOUND: return "not found";
    case RMQ_EEXIST: return "already exists";
    case RMQ_EIO: return "storage or I/O failure";
    case RMQ_ESTATE: return "not valid in the current state";
    default: break;
    }
    if (err < 0 && err > -1000)
        return strerror(-err);
    return "unknown error";
}

int rmq_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
