/* err.h — the project's one error convention.
 *
 * Every fallible function returns int: 0 (RMQ_OK) on success, a negative
 * RMQ_E* code on failure, or -errno for a failed syscall. The RMQ_E* codes
 * start at -1000 so they never collide with -errno values. Pure; any thread.
 */
#ifndef RMQ_ERR_H
#define RMQ_ERR_H

enum rmq_err {
    RMQ_OK = 0,
    RMQ_EAGAIN = -1000, /* need more bytes / try again later */
    RMQ_ENOMEM = -1001, /* allocation failed */
    RMQ_EINVAL = -1002, /* bad argument or bad field value */
    RMQ_E2BIG = -1003,  /* over a configured limit */
    RMQ_EPROTO = -1004, /* malformed protocol data */
    RMQ_ENOTFOUND = -1005,
    RMQ_EEXIST = -1006,
    RMQ_EIO = -1007,    /* storage or I/O failure */
    RMQ_ESTATE = -1008, /* operation not valid in the current state */
};

#include <stddef.h>

/* Formats a one-line reason into err[0..errlen) when err is non-NULL and
 * errlen > 0, and returns code unchanged, so a failure path can be
 * `return rmq_fail(err, errlen, RMQ_EPROTO, "field %s: ...", name);`. */
int rmq_fail(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Returns a static, human-readable description of an RMQ_E* or -errno code. */
const char *rmq_strerror(int err);

#endif
