/* acl_sig.c — see acl_sig.h. */
#include "acl_sig.h"

#include "err.h"
#include "mem.h"
#include "sha1.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static int by_key(const void *a, const void *b)
{
    /* Java TreeMap order; keys are ASCII field names, for which it is byte order. */
    return strcmp((*(const struct rmq_ext *const *)a)->key, (*(const struct rmq_ext *const *)b)->key);
}

int acl_signature(const struct rmq_cmd *cmd, const char *secret, char out[ACL_SIG_LEN])
{
    size_t n = cmd->ext_len + 1;
    const struct rmq_ext **sorted = rmq_malloc(n * sizeof *sorted);
    const void **parts = rmq_malloc(n * sizeof *parts);
    size_t *lens = rmq_malloc(n * sizeof *lens);
    if (!sorted || !parts || !lens) {
        rmq_free(sorted);
        rmq_free((void *)parts);
        rmq_free(lens);
        return RMQ_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < cmd->ext_len; i++)
        if (strcmp(cmd->ext[i].key, "Signature"))
            sorted[k++] = &cmd->ext[i];
    assert(k < n); /* room is left for the body's part */
    qsort(sorted, k, sizeof *sorted, by_key);
    for (size_t i = 0; i < k; i++) {
        parts[i] = sorted[i]->val;
        lens[i] = strlen(sorted[i]->val);
    }
    parts[k] = cmd->body ? (const void *)cmd->body : (const void *)"";
    lens[k] = cmd->body_len;
    uint8_t mac[SHA1_DIGEST_LEN];
    hmac_sha1(secret, strlen(secret), parts, lens, k + 1, mac);
    base64_encode(mac, sizeof mac, out);
    assert(strlen(out) < ACL_SIG_LEN); /* the caller's buffer held the Base64 text and its NUL */
    rmq_free(sorted);
    rmq_free((void *)parts);
    rmq_free(lens);
    return RMQ_OK;
}

int acl_equal_ct(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    size_t n = la < lb ? la : lb;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}
