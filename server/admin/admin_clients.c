/* admin_clients.c — /api/clients and evictions, from the registry's
 * channels. A "client" is a client id: one process usually, but the same id
 * on several channels (two processes, or one reconnecting) is one entry
 * listing each channel. Loop thread only. */
#include "admin_clients.h"
#include "admin_reply.h"
#include "array.h"
#include "broker.h"
#include "conn.h"
#include "log.h"
#include "mem.h"
#include "remoting_cmd.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static int cmp_channel(const void *a, const void *b)
{
    const struct reg_channel *x = *(const struct reg_channel *const *)a,
                             *y = *(const struct reg_channel *const *)b;
    int c = strcmp(x->client_id, y->client_id);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* Live channels that have a client id, sorted by (client id, channel id).
 * New array (rmq_free) of borrowed pointers; NULL on OOM. */
static const struct reg_channel **sorted_channels(const struct registry *r, size_t *n)
{
    const struct reg_channel **v = rmq_malloc((r->channels.count ? r->channels.count : 1) * sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0, b;
    for (struct hashmap_entry *e = hashmap_first(&r->channels, &b); e;
         e = hashmap_next(&r->channels, e, &b)) {
        const struct reg_channel *ch = e->val;
        if (ch->client_id && ch->conn) {
            assert(k < r->channels.count); /* the array has room for every channel */
            v[k++] = ch;
        }
    }
    qsort(v, k, sizeof *v, cmp_channel);
    *n = k;
    return v;
}

/* Sorted array of the distinct group names of chans[0..n). */
static json_t *group_union(const struct reg_channel *const *chans, size_t n, bool producers)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += producers ? chans[i]->nproducers : chans[i]->ngroups;
    const char **names = rmq_malloc((total ? total : 1) * sizeof *names);
    json_t *arr = json_array();
    if (!names || !arr) {
        rmq_free(names);
        json_decref(arr);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t m = producers ? chans[i]->nproducers : chans[i]->ngroups;
        for (size_t g = 0; g < m; g++)
            names[k++] = producers ? chans[i]->producers[g] : chans[i]->groups[g];
    }
    assert(k == total);
    qsort(names, k, sizeof *names, rmq_strp_cmp);
    for (size_t i = 0; i < k; i++)
        if (i == 0 || strcmp(names[i], names[i - 1]))
            json_array_append_new(arr, admin_json_name(names[i]));
    rmq_free(names);
    return arr;
}

/* The entry of one client id from its channels chans[0..n) (n >= 1). */
static json_t *client_json(const struct reg_channel *const *chans, size_t n)
{
    assert(n >= 1);
    const struct reg_channel *latest = chans[0];
    json_t *channels = json_array();
    for (size_t i = 0; channels && i < n; i++) {
        const struct reg_channel *ch = chans[i];
        if (ch->last_hb_ms > latest->last_hb_ms)
            latest = ch;
        json_array_append_new(
            channels, json_pack("{s:I,s:s,s:I,s:I,s:o*}", "channelId", (json_int_t)ch->id, "remoteAddr",
                                ch->peer, "openedMs", (json_int_t)ch->opened_ms, "lastHeartbeatMs",
                                (json_int_t)ch->last_hb_ms, "groups", group_union(&chans[i], 1, false)));
    }
    json_t *addrs = json_array();
    for (size_t i = 0; addrs && i < n; i++)
        json_array_append_new(addrs, json_string(chans[i]->peer));
    return json_pack("{s:o,s:s,s:i,s:I,s:I,s:o*,s:o*,s:o*,s:o*,s:b}", "clientId",
                     admin_json_name(latest->client_id), "language", rmq_language_name(latest->language),
                     "version", (int)latest->version, "lastHeartbeatMs", (json_int_t)latest->last_hb_ms,
                     "openedMs", (json_int_t)chans[0]->opened_ms, "groups", group_union(chans, n, false),
                     "producerGroups", group_union(chans, n, true), "remoteAddrs", addrs, "channels",
                     channels, "live", 1);
}

json_t *admin_clients_list(struct broker *s, int *status)
{
    size_t n = 0;
    const struct reg_channel **chans = sorted_channels(&s->reg, &n);
    json_t *arr = json_array();
    if (!chans || !arr) {
        rmq_free(chans);
        json_decref(arr);
        return NULL;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(chans[j]->client_id, chans[i]->client_id))
            j++;
        assert(j > i && j <= n); /* one client id's run of channels (sorted by id) */
        if (json_array_append_new(arr, client_json(chans + i, j - i)) != 0) {
            rmq_free(chans);
            json_decref(arr);
            return NULL;
        }
        i = j;
    }
    rmq_free(chans);
    *status = 200;
    return json_pack("{s:o}", "clients", arr);
}

json_t *admin_client_get(struct broker *s, const char *client_id, int *status)
{
    size_t n = 0;
    const struct reg_channel **chans = sorted_channels(&s->reg, &n);
    if (!chans)
        return NULL;
    size_t i = 0;
    while (i < n && strcmp(chans[i]->client_id, client_id))
        i++;
    size_t j = i;
    while (j < n && !strcmp(chans[j]->client_id, client_id))
        j++;
    json_t *out =
        j > i ? client_json(chans + i, j - i)
              : admin_error_json(status, 404, "client not found", "no live channel carries this client id");
    if (j > i)
        *status = 200;
    rmq_free(chans);
    return out;
}

json_t *admin_group_evict(struct broker *s, const char *group, const char *client_id, int *status)
{
    if (!client_id || !*client_id)
        return admin_error_json(status, 400, "missing parameter", "clientId is required");
    const struct reg_group *rg = registry_group(&s->reg, group);
    if (!rg)
        return admin_error_json(status, 404, "group not found", "the group has no live member");
    json_t *evicted = json_array();
    if (!evicted)
        return NULL;
    for (size_t i = 0; i < rg->g.nmembers; i++) {
        const struct mship_member *m = &rg->g.members[i];
        if (strcmp(m->client_id, client_id))
            continue;
        struct reg_channel *ch = registry_channel(&s->reg, m->channel_id);
        if (!ch || !ch->conn || ch->conn->closing)
            continue;
        json_array_append_new(
            evicted, json_pack("{s:I,s:s}", "channelId", (json_int_t)ch->id, "remoteAddr", ch->peer));
        /* Reaped before the loop sleeps: the close path removes the channel
         * from every group (recorded, logged) and NOTIFYs the others. */
        conn_close_async(ch->conn, "evicted via the admin API");
    }
    if (json_array_size(evicted) == 0) {
        json_decref(evicted);
        return admin_error_json(status, 404, "client not in group",
                                "no live member of the group has this client id");
    }
    log_info("group %s: client %s evicted via the admin API (%zu channel(s))", group, client_id,
             json_array_size(evicted));
    *status = 200;
    return json_pack("{s:o,s:o,s:o,s:s}", "group", admin_json_name(group), "clientId",
                     admin_json_name(client_id), "evicted", evicted, "note",
                     "the channel is closed, so the client also leaves its other groups; it reconnects and "
                     "heartbeats again unless it was stopped");
}
