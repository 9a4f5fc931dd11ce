/* bench_load_storm.c — bench_load's storm mode: a mass change of one
 * group's membership, timed until the last member has its NOTIFY of the
 * final membership.
 *
 *   join    -c connections (already connected) send their first heartbeat
 *           for group -q at once; every one of them stays a member.
 *   close   the -c connections join first; then the second half closes at
 *           once and the first half stays.
 *   expire  the -c connections join first; then the second half stops
 *           heartbeating (its sockets stay open and unread) while the first
 *           half re-heartbeats every expiry/4 until the daemon
 *           (--channel-expiry-ms = -x) has expired the rest.
 *
 * The storm is over when no frame has arrived for a quiet period (-Q, 0.5 s;
 * it must be longer than the daemon's --notify-coalesce-ms):
 * the latest NOTIFY a member read is then the last one it will be sent, the
 * one of the final membership. storm_secs is from the storm's start (join,
 * close: the first send or close; expire: the first NOTIFY of the storm) to
 * the arrival of that last NOTIFY at the last member. Every remaining member
 * must have one, or the run fails. A storm still sending NOTIFYs after -T
 * seconds (a peer that notifies every member of every join) is reported
 * with settled=0 and storm_secs a lower bound. One thread.
 */
#include "bench_load_internal.h"
#include "err.h"
#include "mem.h"

#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#define STORM_QUIET_S (g_opt.quiet_s)     /* -Q: longer than any NOTIFY window of the daemon */
#define STORM_MAX_S (g_opt.setup_timeout) /* -T: each phase, at most */

static const char *kind_name(void)
{
    return g_opt.storm == STORM_JOIN ? "join" : g_opt.storm == STORM_CLOSE ? "close" : "expire";
}

static int build(struct buf *tmpl, int n)
{
    for (int i = 0; i < n; i++) {
        char cid[96];
        snprintf(cid, sizeof cid, "127.0.0.1@%s-%d", g_opt.id_prefix, i);
        int rc = heartbeat_frame(cid, g_opt.list_group, 0, 1, &tmpl[i]);
        if (rc != 0)
            return rc;
        g_conns[i].req = &tmpl[i];
    }
    return 0;
}

static void reset_notified(void)
{
    for (int i = 0; i < g_nconns; i++) {
        g_conns[i].notified = false;
        g_conns[i].last_notify_ts = 0;
    }
    g_st.notifies = 0;
}

/* The second half of the connections leaves the loop's set: closed (close)
 * or kept open and never read again (expire). g_nconns becomes the half
 * that stays. */
static int drop_second_half(bool close_them)
{
    int keep = g_nconns / 2;
    for (int i = keep; i < g_nconns; i++) {
        struct lconn *c = &g_conns[i];
        if (epoll_ctl(g_epfd, EPOLL_CTL_DEL, c->fd, NULL) != 0)
            return fail_errno("epoll_ctl del");
        if (close_them)
            close_one(c);
    }
    int dropped = g_nconns;
    g_nconns = keep;
    return dropped;
}

static bool all_notified_now(void)
{
    for (int i = 0; i < g_nconns; i++)
        if (!g_conns[i].notified)
            return false;
    return true;
}

/* Expire: re-heartbeats the staying half every period until each of them
 * has a NOTIFY (the daemon expired the rest), at most max_s. */
static int keep_alive_until_notified(double period, double max_s)
{
    double end = now_s() + max_s;
    while (now_s() < end && !all_notified_now()) {
        int rc = one_round(10.0);
        if (rc == 0)
            rc = run_loop(now_s() + period, all_notified_now);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int run_storm(void)
{
    int n = g_opt.conns;
    struct buf *tmpl = rmq_calloc((size_t)n, sizeof *tmpl);
    if (!tmpl)
        return RMQ_ENOMEM;
    int total = n, rc = open_conns(n);
    if (rc == 0)
        rc = build(tmpl, n);
    g_measure_from = 0, g_measure_to = 1e18;
    g_sending = false; /* a reply or NOTIFY sends nothing; one_round sends each round */
    double t0 = 0, t_acks = 0;
    if (rc == 0 && g_opt.storm != STORM_JOIN) {
        /* The group forms first; its own NOTIFYs are not the storm's. */
        rc = one_round(STORM_MAX_S);
        if (rc == 0)
            rc = wait_quiet(STORM_QUIET_S, STORM_MAX_S);
    }
    if (rc == 0) {
        printf("# storm %s: %d connections, group %s\n", kind_name(), n, g_opt.list_group);
        fflush(stdout);
        reset_notified();
        t0 = now_s();
    }
    if (rc == 0 && g_opt.storm == STORM_JOIN) {
        rc = one_round(STORM_MAX_S);
        for (int i = 0; i < g_nconns; i++)
            t_acks = g_conns[i].last_reply_ts > t_acks ? g_conns[i].last_reply_ts : t_acks;
    } else if (rc == 0 && g_opt.storm == STORM_CLOSE) {
        total = drop_second_half(true);
        t_acks = now_s();
    } else if (rc == 0) {
        total = drop_second_half(false);
        rc = keep_alive_until_notified(g_opt.expiry_s / 4, g_opt.expiry_s * 3 + 10);
        double first = 1e300;
        for (int i = 0; i < g_nconns; i++)
            if (g_conns[i].notified && g_conns[i].notify_ts < first)
                first = g_conns[i].notify_ts;
        t0 = t_acks = first < 1e300 ? first : now_s();
    }
    if (rc == 0)
        rc = wait_quiet(STORM_QUIET_S, STORM_MAX_S);
    if (rc != 0)
        goto out;
    double last = t0;
    int missing = 0, after = 0;
    for (int i = 0; i < g_nconns; i++) {
        const struct lconn *c = &g_conns[i];
        if (!c->notified)
            missing++;
        else if (c->last_notify_ts > last)
            last = c->last_notify_ts;
        if (c->notified && c->last_notify_ts >= t_acks)
            after++;
    }
    /* Still receiving at the end of the wait: the storm did not settle. */
    bool settled = now_s() - last >= STORM_QUIET_S * 0.9;
    printf("RESULT mode=storm kind=%s conns=%d members=%d storm_secs=%.3f changes_secs=%.3f notifies=%llu "
           "per_member=%.1f missing=%d last_after_changes=%d settled=%d\n",
           kind_name(), total, g_nconns, last - t0, t_acks - t0, (unsigned long long)g_st.notifies,
           g_nconns ? (double)g_st.notifies / g_nconns : 0.0, missing, after, settled);
    if (missing && settled) {
        fprintf(stderr, "bench_load: %d of %d members never got a NOTIFY\n", missing, g_nconns);
        rc = RMQ_EIO;
    }
out:
    for (int i = g_nconns; i < total; i++)
        close_one(&g_conns[i]);
    for (int i = 0; i < n; i++)
        buf_free(&tmpl[i]);
    rmq_free(tmpl);
    return rc;
}
