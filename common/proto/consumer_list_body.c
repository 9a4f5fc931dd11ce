/* consumer_list_body.c — see consumer_list_body.h. Pure; any thread. */
#include "consumer_list_body.h"

#include "body_json.h"
#include "err.h"
#include "mem.h"

#include <assert.h>
#include <jansson.h>

int rmq_consumer_list_encode(const char *const *ids, size_t n, struct buf *out)
{
    size_t mark = buf_live(out);
    int rc = buf_append_str(out, "{\"consumerIdList\":");
    if (!rc)
        rc = rmq_json_append_string_array(out, ids, n);
    return rmq_json_end_object(out, mark, rc);
}

void sim_ids_free(char **ids, size_t n)
{
    rmq_json_strings_free(ids, n);
}

int sim_consumer_list_parse(const uint8_t *body, size_t len, char ***ids, size_t *n, char *err, size_t errlen)
{
    json_t *root = NULL;
    int rc = rmq_json_load_object(body, len, "consumer list", &root, err, errlen);
    if (rc)
        return rc;
    const json_t *arr = json_object_get(root, "consumerIdList");
    size_t cnt = json_array_size(arr);
    if (!json_is_array(arr) || cnt > RMQ_CONSUMER_LIST_MAX_IDS) {
        json_decref(root);
        return rmq_fail(err, errlen, RMQ_EPROTO, "consumer list: consumerIdList missing or too long");
    }
    char **out = rmq_calloc(cnt ? cnt : 1, sizeof *out);
    rc = out ? RMQ_OK : RMQ_ENOMEM;
    for (size_t i = 0; !rc && i < cnt; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v))
            rc = rmq_fail(err, errlen, RMQ_EPROTO, "consumer list: entry %zu is not a string", i);
        else if (!(out[i] = rmq_strdup(json_string_value(v))))
            rc = RMQ_ENOMEM;
    }
    json_decref(root);
    if (rc) {
        sim_ids_free(out, cnt);
        return rc;
    }
    for (size_t i = 0; i < cnt; i++)
        assert(out[i]); /* every entry was copied: sim_ids_free and readers need no NULL check */
    *ids = out;
    *n = cnt;
    return RMQ_OK;
}
