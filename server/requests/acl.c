/* acl.c — see acl.h. */
#include "acl.h"

#include "acl_sig.h"
#include "array.h"
#include "err.h"
#include "mem.h"
#include "request_codes.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

struct acl_account {
    char *access_key; /* owned; NULL: any AccessKey (the admin token) */
    char *secret_key; /* owned */
    bool admin;
};

struct acl {
    struct acl_account *accounts;
    size_t n, cap;
    bool admin_codes_only; /* --admin-token without --acl */
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
    a->accounts[a->n++] = (struct acl_account){NULL, NULL, false};
    return RMQ_OK;
}

/* A YAML boolean as plain_acl.yml writes it; anything else is not admin. */
static bool yaml_true(const char *v)
{
    return !strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE") || !strcmp(v, "yes");
}

/* Reads one line into the account being built. */
static int take_line(struct acl *a, const char *line, char *err, size_t errlen)
{
    char *ak = value_of(line, "accessKey"), *sk = ak ? NULL : value_of(line, "secretKey");
    if (!ak && !sk) {
        char *adm = value_of(line, "admin");
        if (adm && a->n > 0 && a->accounts[a->n - 1].access_key)
            a->accounts[a->n - 1].admin = yaml_true(adm);
        rmq_free(adm);
        return RMQ_OK;
    }
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

int acl_new_admin_token(const char *token, struct acl **out)
{
    if (!token || !*token)
        return RMQ_EINVAL;
    struct acl *a = rmq_calloc(1, sizeof *a);
    if (!a || add_account(a) != 0 || !(a->accounts[0].secret_key = rmq_strdup(token))) {
        acl_free(a);
        return RMQ_ENOMEM;
    }
    a->accounts[0].admin = true;
    a->admin_codes_only = true;
    assert(a->n == 1 && !a->accounts[0].access_key); /* any AccessKey, the token as its secret */
    *out = a;
    return RMQ_OK;
}

bool acl_is_admin_code(int32_t code)
{
    switch (code) {
    /* The codes ACL 1.0 keeps for admin accounts (docs/protocol.md §9)... */
    case RMQ_REQ_UPDATE_AND_CREATE_TOPIC:
    case RMQ_REQ_UPDATE_BROKER_CONFIG:
    case RMQ_REQ_DELETE_TOPIC_IN_BROKER:
    case RMQ_REQ_UPDATE_AND_CREATE_SUBSCRIPTIONGROUP:
    case RMQ_REQ_DELETE_SUBSCRIPTIONGROUP:
    /* ...and the ones that move every consumer of a group or drop a route
     * for everyone, which rmqcoord guards as well. */
    case RMQ_REQ_DELETE_TOPIC_IN_NAMESRV:
    case RMQ_REQ_INVOKE_BROKER_TO_RESET_OFFSET:
    case RMQ_REQ_RESET_CONSUMER_CLIENT_OFFSET: return true;
    default: return false;
    }
}

int acl_check(const struct acl *a, const struct rmq_cmd *cmd, const char **why)
{
    assert(a->n > 0 && (!a->admin_codes_only || a->n == 1)); /* loaded files have accounts; the token one */
    assert(a && cmd && why);
    bool admin_code = acl_is_admin_code(cmd->code);
    if (a->admin_codes_only && !admin_code)
        return RMQ_OK;
    const char *ak = rmq_cmd_ext_get(cmd, "AccessKey"), *sig = rmq_cmd_ext_get(cmd, "Signature");
    if (!ak || !sig) {
        *why = a->admin_codes_only
                   ? "admin request: sign it (AccessKey, Signature) with the --admin-token as "
                     "secretKey"
                   : "ACL: AccessKey and Signature are required";
        return RMQ_EINVAL;
    }
    for (size_t i = 0; i < a->n; i++) {
        const struct acl_account *acc = &a->accounts[i];
        if (acc->access_key && strcmp(acc->access_key, ak))
            continue;
        char want[ACL_SIG_LEN];
        if (acl_signature(cmd, acc->secret_key, want) != 0) {
            *why = "ACL: out of memory checking the signature";
            return RMQ_EINVAL;
        }
        if (!acl_equal_ct(want, sig)) {
            *why = "ACL: signature mismatch";
            return RMQ_EINVAL;
        }
        if (admin_code && !acc->admin) {
            *why = "ACL: this request code needs an admin account (admin: true)";
            return RMQ_EINVAL;
        }
        return RMQ_OK;
    }
    *why = "ACL: unknown AccessKey";
    return RMQ_EINVAL;
}
