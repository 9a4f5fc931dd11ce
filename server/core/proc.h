/* proc.h — the start of a long-running subcommand (serve, sim): one way to
 * set up the process, so the daemon and the simulator cannot drift apart on
 * signals or on jansson's allocator. Main thread, before any other thread.
 */
#ifndef RMQ_PROC_H
#define RMQ_PROC_H

#include <stdbool.h>

/* Sets the log level (enum log_level), points jansson at the allocation
 * funnel (mem.h) and fixes its hash seed; both are process-wide, so this
 * must run before a second thread exists. */
void proc_init(int log_level);

/* What a command does once its flags are parsed (parse_rc: 0, 1 when --help
 * or --version printed, else an error): -1 to go on, proc_init done; else
 * its exit status, 0 after --help or --version and 2 for a bad flag. */
int proc_start(int parse_rc, int log_level);

/* Blocks SIGINT and SIGTERM and returns a non-blocking, close-on-exec
 * signalfd that reports them (owned by the caller, who closes it), or
 * -errno. SIGPIPE is ignored from then on: sockets send with MSG_NOSIGNAL,
 * this covers pipes such as stdout. */
int proc_stop_signal_fd(void);
/* Reads every signal waiting on fd (a proc_stop_signal_fd) and logs each,
 * its line starting with prefix; true when at least one was read. */
bool proc_read_stop_signals(int fd, const char *prefix);

/* Raises the soft open-file limit to the hard one (thousands of clients or
 * simulated clients need more than the usual 1,024); best effort. Returns
 * the soft limit in force afterwards, or -1 when it is unlimited or unknown. */
long proc_raise_fd_limit(void);

#endif
