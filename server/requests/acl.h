/* acl.h — optional RocketMQ ACL-style authentication of remoting requests.
 *
 * --acl FILE: every request must carry an AccessKey of a known account and a
 * Signature computed as the RocketMQ client's ACL hook computes it
 * (common/proto/acl_sig.h); the admin request codes (acl_is_admin_code)
 * need an account with `admin: true`, as ACL 1.0 answers NO_PERMISSION to
 * them otherwise. Permissions per topic/group are not enforced.
 *
 * --admin-token T without --acl: only the admin request codes are checked;
 * they must be signed the same way with T as the secretKey (any
 * AccessKey). The other codes stay open, since consumers and producers
 * carry no credential; the HTTP side checks the same token as a Bearer.
 *
 * FILE is the accounts part of RocketMQ's plain_acl.yml:
 *     accounts:
 *       - accessKey: RocketMQ
 *         secretKey: 12345678
 *         admin: true
 * (other keys are ignored; values may be quoted). Loop thread only.
 */
#ifndef RMQ_ACL_H
#define RMQ_ACL_H

#include "remoting_cmd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct acl;

/* Loads path; new *out (acl_free). 0, or an error with a reason in err. */
int acl_load(const char *path, struct acl **out, char *err, size_t errlen);
/* The --admin-token guard: new *out checking only admin codes, signed with
 * token as the secret. 0 or RMQ_ENOMEM / RMQ_EINVAL (empty token). */
int acl_new_admin_token(const char *token, struct acl **out);
/* Request codes that change the broker's configuration or a group's
 * position for everyone: topics, subscription groups, broker config,
 * offset resets. */
bool acl_is_admin_code(int32_t code);
void acl_free(struct acl *a);
size_t acl_accounts(const struct acl *a);
/* 0 when cmd may run: signed by a known account, admin when its code is an
 * admin code (in token mode: only admin codes need the signature).
 * Otherwise RMQ_EINVAL with the reason (static text) in *why. */
int acl_check(const struct acl *a, const struct rmq_cmd *cmd, const char **why);

#endif
