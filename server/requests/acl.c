/* acl.c — see acl.h. */
#include "acl.h"

#include "acl_sig.h"
#include "err.h"
#include "mem.h"
#include "array.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

struct acl_account {
    char *access_key; /* owned */
    char *secret_key; /* owned */
};

struct acl {
    struct acl_account *accounts;
    size_t n, cap;
};

void acl_free(struct acl *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        rmq_free(a->accounts[i].access_key);
        rmq_free(a->accounts[i].secret_key);
    }
    rmq_free(a->accounts);
    rmq_free(a);
}

size_t acl_accounts(const struct acl *a)
{
    return a ? a->n : 0;
}

/* The value after "key:" on line as a new string, read as YAML reads a
 * scalar: a quoted one up to its closing quote ('' is a quote inside single
 * quotes), a plain one up to the end of the line or a comment, which starts
 * only at a '#' after white space — "p#ss w0rd" is a whole secret. NULL
 * when the line is not that key (or out of memory). */
static char *value_of(const char *line, const char *key)
{
    while (*line == ' ' || *line == '\t' || *line == '-')
        line++;
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) || line[kl] != ':')
        return NULL;
    const char *v = line + kl + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (*v == '"' || *v == '\'') {
        char q = *v++, *out = rmq_malloc(strlen(v) + 1);
        size_t n = 0;
        for (; out && *v && *v != '\n'; v++) {
            if (*v == q && q == '\'' && v[1] == '\'') {
                out[n++] = *v++;
                continue;
            }
            if (*v == '\\' && q == '"' && v[1]) {
                out[n++] = *++v;
                continue;
            }
            if (*v == q)
                break;
            out[n++] = *v;
        }
        if (out)
            out[n] = 0;
        return out;
    }
    size_t n = 0;
    while (v[n] && v[n] != '\r' && v[n] != '\n' &&
           !(v[n] == '#' && n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')))
        n++;
    while (n > 0 && isspace((unsigned char)v[n - 1]))
        n--;
    return rmq_strndup(v, n);
}

static int add_account(struct acl *a)
{
    if (RMQ_GROW(a->accounts, a->cap, a->n + 1, 4) != 0)
        return RMQ_ENOMEM;
    a->accounts[a->n++] = (struct acl_account){NULL, NULL};
    return RMQ_OK;
}

/* Reads one line into the account being built. */
static int take_line(struct acl *a, const char *line, char *err, size_t errlen)
{
    char *ak = value_of(line, "accessKey"), *sk = ak ? NULL : value_of(line, "secretKey");
    if (!ak && !sk)
        return RMQ_OK;
    if (ak && (a->n == 0 || a->accounts[a->n - 1].access_key)) {
        if (add_account(a) != 0) {
            rmq_free(ak);
            return RMQ_ENOMEM;
        }
    }
    if (a->n == 0) {
        rmq_free(sk);
        snprintf(err, errlen, "secretKey before any accessKey");
        return RMQ_EINVAL;
    }
    struct acl_account *acc = &a->accounts[a->n - 1];
    char **slot = ak ? &acc->access_key : &acc->secret_key;
    rmq_free(*slot);
    *slot = ak ? ak : sk;
    return RMQ_OK;
}

int acl_load(const char *path, struct acl **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    struct acl *a = rmq_calloc(1, sizeof *a);
    int rc = a ? RMQ_OK : RMQ_ENOMEM;
    char line[1024];
    while (rc == 0 && fgets(line, sizeof line, f))
        rc = take_line(a, line, err, errlen);
    fclose(f);
    for (size_t i = 0; rc == 0 && i < a->n; i++) {
        if (!a->accounts[i].access_key || !*a->accounts[i].access_key || !a->accounts[i].secret_key ||
            !*a->accounts[i].secret_key) {
            snprintf(err, errlen, "account %zu needs both accessKey and secretKey", i + 1);
            rc = RMQ_EINVAL;
        }
    }
    if (rc == 0 && a->n == 0) {
        snprintf(err, errlen, "no accounts (expected accessKey: / secretKey: lines)");
        rc = RMQ_EINVAL;
    }
    if (rc != 0) {
        if (rc == RMQ_ENOMEM)
            snprintf(err, errlen, "out of memory");
        acl_free(a);
        return rc;
    }
    *out = a;
    return RMQ_OK;
}

int acl_check(const struct acl *a, const struct rmq_cmd *cmd, const char **why)
{
    assert(a && cmd && why);
    const char *ak = rmq_cmd_ext_get(cmd, "AccessKey"), *sig = rmq_cmd_ext_get(cmd, "Signature");
    if (!ak || !sig) {
        *why = "ACL: AccessKey and Signature are required";
        return RMQ_EINVAL;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->accounts[i].access_key, ak))
            continue;
        char want[ACL_SIG_LEN];
        if (acl_signature(cmd, a->accounts[i].secret_key, want) != 0) {
            *why = "ACL: out of memory checking the signature";
            return RMQ_EINVAL;
        }
        if (acl_equal_ct(want, sig))
            return RMQ_OK;
        *why = "ACL: signature mismatch";
        return RMQ_EINVAL;
    }
    *why = "ACL: unknown AccessKey";
    return RMQ_EINVAL;
}
