/* proc.c — see proc.h. Main thread. */
#include "proc.h"

#include "log.h"
#include "mem.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

void proc_init(int log_level)
{
    log_set_level((enum log_level)log_level);
    rmq_mem_install_jansson();
    json_object_seed(0);
}

int proc_start(int parse_rc, int log_level)
{
    if (parse_rc != 0)
        return parse_rc == 1 ? 0 : 2;
    proc_init(log_level);
    return -1;
}

int proc_stop_signal_fd(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -errno;
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

bool proc_read_stop_signals(int fd, const char *prefix)
{
    bool any = false;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        log_info("%ssignal %u received, shutting down", prefix, si.ssi_signo);
        any = true;
    }
    return any;
}

long proc_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
    }
    return rl.rlim_cur == RLIM_INFINITY ? -1 : (long)rl.rlim_cur;
}
