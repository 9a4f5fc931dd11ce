/* stats.c — see stats.h. Loop thread only. */
#include "stats.h"

#include <string.h>
#include <time.h>

const uint64_t stats_bucket_bounds_us[STATS_BUCKETS - 1] = {10,   25,   50,   100,   250,   500,
                                                            1000, 2500, 5000, 10000, 100000};

static const char *const kind_names[STATS_CHANGE_KINDS] = {"join", "close", "unregister", "expire",
                                                           "subscription"};

void stats_histogram_add(struct stats_histogram *h, uint64_t us)
{
    size_t b = 0;
    while (b < STATS_BUCKETS - 1 && us > stats_bucket_bounds_us[b])
        b++;
    h->buckets[b]++;
    h->count++;
    h->sum_us += us;
}

void stats_record_request(struct server_stats *st, int32_t code, uint64_t us)
{
    for (size_t i = 0; i < st->ncodes; i++) {
        if (st->codes[i].code == code) {
            stats_histogram_add(&st->codes[i].latency, us);
            return;
        }
    }
    if (st->ncodes == STATS_MAX_CODES) {
        st->codes_overflow++;
        return;
    }
    struct stats_code *c = &st->codes[st->ncodes++];
    memset(c, 0, sizeof *c);
    c->code = code;
    stats_histogram_add(&c->latency, us);
}

int stats_change_kind(const char *kind)
{
    for (int i = 0; i < STATS_CHANGE_KINDS; i++)
        if (!strcmp(kind, kind_names[i]))
            return i;
    return -1;
}

const char *stats_change_kind_name(int kind)
{
    return kind >= 0 && kind < STATS_CHANGE_KINDS ? kind_names[kind] : "unknown";
}
