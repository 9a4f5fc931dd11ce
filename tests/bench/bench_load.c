/* bench_load.c — load generator for rmqcoord (and for bench_echo, its
 * ceiling): many loopback connections, each with a window of outstanding
 * requests, one epoll thread, bounded by time and by request count.
 *
 * Modes (what each connection sends):
 *   hb      HEART_BEAT with -g ConsumerData (groups PREFIX0..PREFIX{g-1}),
 *           one clientID per connection; with -s S, connection i names
 *           the groups PREFIX{(i%S)*g}.. instead (S disjoint sets); with -a
 *           every other heartbeat of a connection is one space longer, so
 *           its bytes differ and the daemon parses it, though nothing changes
 *   route   GET_ROUTEINFO_BY_TOPIC, cycling over topics T0..T{t-1}
 *   list    GET_CONSUMER_LIST_BY_GROUP for group -q
 *   hold    phase 1: connect and send a heartbeat with no groups; phase 2
 *           (after a line on stdin): heartbeat with -g groups; then waits for
 *           stdin EOF. For RSS measurement.
 *   notify  -m members join group -q; then -r times one more connection
 *           joins and the time until every member has its NOTIFY is taken.
 * Open loop (-R RATE, hb|route|list): instead of a window, request k (k =
 * 0, 1, ...) is sent at start + k/RATE on connection k % conns, from a
 * timerfd tick (<= 1 ms), whether or not replies came back; bounded by -d
 * and -n. Latency is taken from the scheduled send time (so a generator
 * that falls behind does not hide queueing); at most MAX_WINDOW requests
 * may be outstanding per connection, a send beyond that is skipped and
 * counted (skipped=).
 * Requests are pre-encoded with the project's codec (rmq_frame_encode).
 * Responses are matched to requests in order per connection (both the
 * daemon and bench_echo answer in order), so the generator never parses a
 * whole header: it reads the length prefix and the "flag" field. Frames
 * without the response bit (NOTIFY) are counted apart.
 * Parts: bench_load.c (options, the run's state, main),
 * bench_load_conns.c (connections, windows, the epoll loop),
 * bench_load_modes.c (one function per mode), bench_load_requests.c
 * (request templates), bench_load_latency.c (the latency sample); shared
 * declarations in bench_load_internal.h.
 * Prints one machine-readable line, "RESULT key=value ...", on stdout.
 * Errors follow the house convention (0 or negative codes); a failed
 * syscall is reported with its errno and ends the run with status 1.
 */
#include "bench_load_internal.h"
#include "err.h"
#include "mem.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct opts g_opt;
struct lconn *g_conns;
int g_nconns, g_epfd = -1;
struct stats g_st;
bool g_sending = true;
double g_measure_from, g_measure_to;
struct buf *g_route_reqs; /* one pre-encoded request per topic */
/* open loop */
int g_tfd = -1;
char g_timer_tag; /* epoll data.ptr of the timerfd */
double g_ol_start;
uint64_t g_ol_next, g_ol_sent_in, g_ol_skipped;
double g_ol_max_lag;

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int fail_errno(const char *what)
{
    int e = errno;
    fprintf(stderr, "bench_load: %s: %s\n", what, strerror(e));
    return -e;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_load hb|route|list|hold|notify|storm [-c conns] [-w window] [-d secs] [-W warmup]\n"
            "       [-n max_requests] [-g groups] [-G group_prefix] [-t topics] [-q group] [-m members]\n"
            "       [-r repeats] [-i id_prefix] [-T setup_timeout] [-s group_sets] [-R rate] [-P usec] "
            "HOST:PORT\n"
            "  -R rate  open loop (hb|route|list): rate requests/s in total, round-robin over the\n"
            "           connections on a timer regardless of replies (-w is then ignored)\n"
            "  -P usec  closed loop, paced: a connection sends at most once per usec microseconds\n"
            "  -k join|close|expire  storm kind; -x ms the daemon's --channel-expiry-ms (expire);\n"
            "           -Q ms the quiet time that ends a storm (default 500; longer than the daemon's\n"
            "           --notify-coalesce-ms)\n"
            "  -a       hb: alternate two byte-different forms of each heartbeat (parsed, no change)\n");
}

static int parse_args(int argc, char **argv)
{
    g_opt = (struct opts){.conns = 16,
                          .window = 1,
                          .groups = 10,
                          .topics = 100,
                          .members = 1000,
                          .repeats = 100,
                          .duration = 5,
                          .warmup = 1,
                          .setup_timeout = 60,
                          .span = 1,
                          .group_prefix = "G",
                          .list_group = "G0",
                          .id_prefix = "b",
                          .expiry_s = 2.0,
                          .quiet_s = 0.5};
    if (argc < 3)
        return RMQ_EINVAL;
    const char *m = argv[1];
    g_opt.mode = !strcmp(m, "hb")       ? M_HB
                 : !strcmp(m, "route")  ? M_ROUTE
                 : !strcmp(m, "list")   ? M_LIST
                 : !strcmp(m, "hold")   ? M_HOLD
                 : !strcmp(m, "notify") ? M_NOTIFY
                 : !strcmp(m, "storm")  ? M_STORM
                                        : (enum mode) - 1;
    if ((int)g_opt.mode < 0)
        return RMQ_EINVAL;
    int i = 2;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (argv[i][1] == 'a') { /* the one flag without a value */
            g_opt.alternate = true;
            i--;
            continue;
        }
        const char *v = argv[i + 1];
        switch (argv[i][1]) {
        case 'c': g_opt.conns = atoi(v); break;
        case 'w': g_opt.window = atoi(v); break;
        case 'd': g_opt.duration = atof(v); break;
        case 'W': g_opt.warmup = atof(v); break;
        case 'n': g_opt.max_requests = atol(v); break;
        case 'g': g_opt.groups = atoi(v); break;
        case 'G': g_opt.group_prefix = v; break;
        case 't': g_opt.topics = atoi(v); break;
        case 'q': g_opt.list_group = v; break;
        case 'm': g_opt.members = atoi(v); break;
        case 'r': g_opt.repeats = atoi(v); break;
        case 'i': g_opt.id_prefix = v; break;
        case 'T': g_opt.setup_timeout = atof(v); break;
        case 's': g_opt.span = atoi(v); break;
        case 'R': g_opt.rate = atof(v); break;
        case 'P': g_opt.pause = atof(v) / 1e6; break;
        case 'x': g_opt.expiry_s = atof(v) / 1e3; break;
        case 'Q': g_opt.quiet_s = atof(v) / 1e3; break;
        case 'k':
            g_opt.storm = !strcmp(v, "join")     ? STORM_JOIN
                          : !strcmp(v, "close")  ? STORM_CLOSE
                          : !strcmp(v, "expire") ? STORM_EXPIRE
                                                 : (enum storm_kind) - 1;
            if ((int)g_opt.storm < 0)
                return RMQ_EINVAL;
            break;
        default: return RMQ_EINVAL;
        }
    }
    if (i != argc - 1)
        return RMQ_EINVAL;
    static char host[64];
    const char *colon = strrchr(argv[i], ':');
    if (!colon || (size_t)(colon - argv[i]) >= sizeof host)
        return RMQ_EINVAL;
    memcpy(host, argv[i], (size_t)(colon - argv[i]));
    host[colon - argv[i]] = 0;
    g_opt.host = host;
    g_opt.port = (uint16_t)atoi(colon + 1);
    if (g_opt.conns < 1 || g_opt.conns >= MAX_CONNS || g_opt.members < 1 || g_opt.members >= MAX_CONNS ||
        g_opt.window < 1 || g_opt.window > MAX_WINDOW || g_opt.topics < 1 || g_opt.duration <= 0 ||
        g_opt.duration > 600 || g_opt.groups < 0 || g_opt.repeats < 1 || g_opt.span < 1 || g_opt.rate < 0 ||
        g_opt.pause < 0 || g_opt.pause > 10 || g_opt.rate > 1e7 || g_opt.expiry_s <= 0 ||
        g_opt.expiry_s > 600 ||
        (g_opt.rate > 0 && (g_opt.mode == M_HOLD || g_opt.mode == M_NOTIFY || g_opt.mode == M_STORM)))
        return RMQ_EINVAL;
    return 0;
}

int main(int argc, char **argv)
{
    if (parse_args(argc, argv) != 0) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            fail_errno("setrlimit");
    }
    g_st.rng = 0x9E3779B97F4A7C15ull;
    g_st.samples = rmq_malloc(SAMPLE_CAP * sizeof *g_st.samples);
    g_conns = rmq_calloc(MAX_CONNS, sizeof *g_conns);
    g_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!g_st.samples || !g_conns || g_epfd < 0) {
        fprintf(stderr, "bench_load: setup failed\n");
        return 1;
    }
    int rc;
    switch (g_opt.mode) {
    case M_HOLD: rc = run_hold(); break;
    case M_NOTIFY: rc = run_notify(); break;
    case M_STORM: rc = run_storm(); break;
    default: rc = run_closed_loop(); break;
    }
    for (int i = 0; i < g_nconns; i++)
        close_one(&g_conns[i]);
    close(g_epfd);
    if (g_route_reqs) {
        for (int i = 0; i < g_opt.topics; i++)
            buf_free(&g_route_reqs[i]);
        rmq_free(g_route_reqs);
    }
    rmq_free(g_conns);
    rmq_free(g_st.samples);
    if (rc != 0)
        fprintf(stderr, "bench_load: failed: %s\n", rmq_strerror(rc));
    return rc == 0 ? 0 : 1;
}
